// The contacts of a new campaign, from a CSV upload or the JSON body: read, checked row by row, and turned into
// the rows to store. A problem with one row (a number that is not a phone number, one the destination policy
// forbids, a duplicate, a listed do-not-call number, an unknown time zone) is reported with its row number and
// the row is skipped; it never fails the upload. What fails the whole upload is what makes the file unreadable
// (malformed CSV, no `to_number` column) or too big: more rows than CAMPAIGN_MAX_CONTACTS is a 422 naming the
// rows over the limit (the byte limit is the route's 413).
//
// A 10k-row file costs seconds of parsing and number checks on this code's loop, which is also the API's: both
// steps are streamed and give the loop back every YIELD_EVERY rows, so other organisations' requests go on
// being answered while an upload is read (issue 50, low).
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { parse as parseCsv, type CsvError } from 'csv-parse';
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import { ValidationFailure } from '../../http/errors.ts';
import { checkDestination, isFictional, type DestinationPolicy } from '../../../../shared/destination-policy.ts';
import type { ContactInput, ImportProblem } from '../../../../schemas/campaigns.ts';
import { canonicalZone, zoneKeyFor } from './zones.ts';

/** A row as read, before any check. `row`: the CSV line (the header is line 1) or the JSON index + 1. */
export interface RawContact {
  row: number;
  to_number: string;
  timezone: string | null;
  variables: Record<string, unknown>;
}

export interface PreparedContact {
  row_number: number;
  to_number: string;
  timezone: string | null;
  zone_key: string | null;
  variables: Record<string, unknown>;
  state: 'pending' | 'skipped';
  skip_reason: string | null;
}

/** Bytes handed to the CSV parser at a time. */
const CSV_SLICE_BYTES = 64 * 1024;
/** Longest value of a CSV cell (a variable); a longer one skips its row. */
export const MAX_CELL_CHARS = 4096;
/** Columns of a CSV; more is a 422 (nobody's contact list has this many, and each becomes a variable). */
export const MAX_COLUMNS = 50;
/** Problems listed in the creation's answer; the rest are counted (the skipped contacts stay listed). */
export const MAX_LISTED_PROBLEMS = 1000;

/** Rows handled between two returns to the event loop. */
export const YIELD_EVERY = 200;

const NUMBER_COLUMN = 'to_number';
const ZONE_COLUMN = 'timezone';

const tooManyRows = (loc: (string | number)[], max: number, firstOver: number, last: number) =>
  new ValidationFailure([
    {
      loc,
      msg: `At most ${max} contacts per campaign: ${firstOver === last ? `row ${firstOver} is` : `rows ${firstOver} to ${last} are`} over the limit`,
      type: 'too_many_rows',
      ctx: { max_rows: max, first_row_over: firstOver, last_row: last },
    },
  ]);

/**
 * Reads a CSV upload: a header row naming `to_number` (required), `timezone` (optional) and any variables, then
 * one contact per row. Row problems go to `problems`; the rows themselves are returned for the checks.
 */
export async function readCsv(data: Buffer, maxRows: number): Promise<{ rows: RawContact[]; columns: string[]; problems: ImportProblem[] }> {
  const records: { record: string[]; info: { lines: number } }[] = [];
  try {
    const parser = parseCsv({
      info: true,
      bom: true,
      relax_column_count: true,
      skip_empty_lines: true,
      // One record's characters: bounds what a single malformed quote can make the parser hold.
      max_record_size: MAX_CELL_CHARS * MAX_COLUMNS,
    });
    // Fed in slices, each after a return to the loop: the parser never runs through the whole file at once.
    const feed = (async () => {
      for (let at = 0; at < data.length; at += CSV_SLICE_BYTES) {
        if (!parser.write(data.subarray(at, at + CSV_SLICE_BYTES))) await new Promise((r) => parser.once('drain', r));
        await yieldToLoop();
      }
      parser.end();
    })();
    feed.catch(() => {});
    for await (const r of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      records.push(r);
      // One past the limit is enough to name the rows over it; the rest is counted, not kept.
      if (records.length % YIELD_EVERY === 0) await yieldToLoop();
    }
    await feed;
  } catch (err) {
    const e = err as CsvError & { lines?: number };
    throw new ValidationFailure([
      {
        loc: ['body', 'file'],
        msg: `The CSV cannot be read${e.lines ? ` (line ${e.lines})` : ''}: ${e.message}`,
        type: 'csv_invalid',
        ctx: { ...(e.code ? { code: e.code } : {}), ...(e.lines ? { line: e.lines } : {}) },
      },
    ]);
  }
  if (!records.length) throw new ValidationFailure([{ loc: ['body', 'file'], msg: 'The CSV is empty: it needs a header row and one row per contact', type: 'csv_empty' }]);
  const header = records[0]!.record.map((h) => h.trim());
  const columnProblem = (msg: string, ctx: Record<string, unknown>) => new ValidationFailure([{ loc: ['body', 'file', 'header'], msg, type: 'csv_header_invalid', ctx }]);
  if (header.length > MAX_COLUMNS) throw columnProblem(`At most ${MAX_COLUMNS} columns`, { columns: header.length, max_columns: MAX_COLUMNS });
  const lower = header.map((h) => h.toLowerCase());
  const numberAt = lower.indexOf(NUMBER_COLUMN);
  if (numberAt < 0) throw columnProblem(`The header row has no "${NUMBER_COLUMN}" column`, { header });
  const zoneAt = lower.indexOf(ZONE_COLUMN);
  const seen = new Set<string>();
  for (const h of header) {
    if (!h || h.length > 100) throw columnProblem('Every column needs a name of 1 to 100 characters', { header });
    if (seen.has(h.toLowerCase())) throw columnProblem(`The column "${h}" is named twice`, { header });
    seen.add(h.toLowerCase());
  }
  const data_ = records.slice(1);
  if (data_.length > maxRows) throw tooManyRows(['body', 'file'], maxRows, data_[maxRows]!.info.lines, data_[data_.length - 1]!.info.lines);
  const columns = header.filter((_, i) => i !== numberAt && i !== zoneAt);
  const rows: RawContact[] = [];
  const problems: ImportProblem[] = [];
  for (const { record, info } of data_) {
    const row = info.lines;
    if (record.length !== header.length) {
      problems.push({
        row,
        to_number: record[numberAt]?.trim() ?? null,
        type: 'columns_mismatch',
        msg: `The row has ${record.length} cells; the header has ${header.length}`,
        ctx: { cells: record.length, columns: header.length },
      });
      continue;
    }
    const long = record.findIndex((c) => c.length > MAX_CELL_CHARS);
    if (long >= 0) {
      problems.push({ row, to_number: record[numberAt]!.trim(), type: 'value_too_long', msg: `The "${header[long]}" cell is longer than ${MAX_CELL_CHARS} characters`, ctx: { column: header[long], max_length: MAX_CELL_CHARS } });
      continue;
    }
    const variables: Record<string, unknown> = {};
    header.forEach((h, i) => {
      if (i !== numberAt && i !== zoneAt) variables[h] = record[i];
    });
    const zone = zoneAt >= 0 ? record[zoneAt]!.trim() : '';
    rows.push({ row, to_number: record[numberAt]!.trim(), timezone: zone || null, variables });
  }
  return { rows, columns, problems };
}

/** The JSON body's contacts as rows; more than `maxRows` is a 422 naming the ones over. */
export function readJsonContacts(contacts: ContactInput[], maxRows: number): { rows: RawContact[]; columns: string[] } {
  if (contacts.length > maxRows) throw tooManyRows(['body', 'contacts', maxRows], maxRows, maxRows + 1, contacts.length);
  const columns: string[] = [];
  const known = new Set<string>();
  const rows = contacts.map((c, i) => {
    for (const k of Object.keys(c.variables ?? {})) {
      if (known.has(k)) continue;
      known.add(k);
      columns.push(k);
    }
    return { row: i + 1, to_number: c.to_number.trim(), timezone: c.timezone?.trim() || null, variables: c.variables ?? {} };
  });
  return { rows, columns };
}

export interface CheckOptions {
  /** The country of national-format numbers (no leading +). */
  defaultCountry: string | null;
  policy: DestinationPolicy;
  /** Numbers of the org's do-not-call list among the rows. */
  doNotCall: ReadonlySet<string>;
}

/** The E.164 form of a row's number, or null when it is no phone number (the simulated carrier's fiction counts). */
export function normaliseNumber(raw: string, defaultCountry: string | null, fictional: boolean): string | null {
  if (!raw || raw.length > 64) return null;
  const parsed = defaultCountry ? parsePhoneNumberFromString(raw, defaultCountry as CountryCode) : parsePhoneNumberFromString(raw);
  if (!parsed) return null;
  const e164 = parsed.number;
  if (parsed.isValid() || (fictional && isFictional(e164))) return e164;
  return null;
}

/** Every row checked: the contacts to store (skipped ones included, with why) and one problem per skipped row. */
export async function checkContacts(rows: RawContact[], opts: CheckOptions): Promise<{ contacts: PreparedContact[]; problems: ImportProblem[] }> {
  const contacts: PreparedContact[] = [];
  const problems: ImportProblem[] = [];
  const firstRowOf = new Map<string, number>();
  const fictional = opts.policy.fictional_numbers;
  const skip = (r: RawContact, number: string, reason: string, problem: Omit<ImportProblem, 'row' | 'to_number'>) => {
    contacts.push({ row_number: r.row, to_number: number, timezone: r.timezone, zone_key: null, variables: r.variables, state: 'skipped', skip_reason: reason });
    problems.push({ row: r.row, to_number: number, ...problem });
  };
  for (const [i, r] of rows.entries()) {
    if (i % YIELD_EVERY === YIELD_EVERY - 1) await yieldToLoop();
    const number = normaliseNumber(r.to_number, opts.defaultCountry, fictional);
    if (!number) {
      skip(r, r.to_number, 'invalid_number', {
        type: 'invalid_number',
        msg: r.to_number ? 'Not a valid phone number' + (r.to_number.startsWith('+') || opts.defaultCountry ? '' : ' (give it in E.164, with +, or set default_country)') : 'The number is empty',
      });
      continue;
    }
    const first = firstRowOf.get(number);
    if (first !== undefined) {
      // Not stored: the contact is the first row's.
      problems.push({ row: r.row, to_number: number, type: 'duplicate', msg: `The same number as row ${first}`, ctx: { first_row: first } });
      continue;
    }
    firstRowOf.set(number, r.row);
    const decision = checkDestination(opts.policy, number);
    if (!decision.ok) {
      skip(r, number, 'destination_not_allowed', {
        type: 'destination_not_allowed',
        msg: decision.message,
        ctx: { reason: decision.reason, ...(decision.type ? { number_type: decision.type } : {}), ...(decision.country !== undefined ? { country: decision.country } : {}) },
      });
      continue;
    }
    if (opts.doNotCall.has(number)) {
      skip(r, number, 'do_not_call', { type: 'do_not_call', msg: "The number is on the organisation's do-not-call list" });
      continue;
    }
    let zone: string | null = null;
    if (r.timezone) {
      zone = canonicalZone(r.timezone);
      if (!zone) {
        skip(r, number, 'timezone_unknown', { type: 'timezone_invalid', msg: `"${r.timezone.slice(0, 64)}" is not an IANA time zone (e.g. America/Chicago)` });
        continue;
      }
    }
    const key = zoneKeyFor(number, zone, { fictional });
    if (!key) {
      skip(r, number, 'timezone_unknown', { type: 'timezone_unknown', msg: 'The time zone of this number is not known: give it in a timezone column' });
      continue;
    }
    contacts.push({ row_number: r.row, to_number: number, timezone: zone, zone_key: key, variables: r.variables, state: 'pending', skip_reason: null });
  }
  problems.sort((a, b) => a.row - b.row);
  return { contacts, problems };
}

/** The rows' numbers in E.164 (the ones that are numbers), giving the loop back as checkContacts does. */
export async function normaliseAll(rows: RawContact[], defaultCountry: string | null, fictional: boolean): Promise<string[]> {
  const out: string[] = [];
  for (const [i, r] of rows.entries()) {
    if (i % YIELD_EVERY === YIELD_EVERY - 1) await yieldToLoop();
    const n = normaliseNumber(r.to_number, defaultCountry, fictional);
    if (n) out.push(n);
  }
  return out;
}
