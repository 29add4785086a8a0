// Carrier cost of phone calls. The per-minute rate is captured on the call when it is opened (inbound) or
// placed (outbound), in `calls.rate_cents_per_minute`; when the call ends, `finishCall` writes
// cost_cents = rate x billed minutes. Billed minutes are whole minutes rounded up, as carriers bill.
//
// The rate comes from the rate table (rates/default.csv, or the operator's file at RATE_TABLE_PATH): the
// longest prefix of the number called (outbound) or of our number (inbound), so a minute to a mobile abroad or
// a satellite phone costs what the carrier charges for it. A number the table does not cover is charged the
// carrier's flat rate (TWILIO_OUTBOUND_RATE_CENTS and the like).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ConfigError, type Config } from '../../config.ts';
import type { CarrierAdapter } from './carriers/types.ts';

export const DEFAULT_RATE_TABLE_PATH = fileURLToPath(new URL('./rates/default.csv', import.meta.url));

export type Direction = 'inbound' | 'outbound';

export interface RateRow {
  carrier: string;
  direction: Direction;
  prefix: string;
  cents: number;
}

export interface RateTable {
  source: string;
  rows: RateRow[];
}

const CARRIERS = new Set(['simulated', 'twilio', 'telnyx', '*']);

/** Parses `carrier,direction,prefix,cents_per_minute` lines (`#` comments, blank lines); throws on the first bad line. */
export function parseRateTable(text: string, source = 'rate table'): RateTable {
  const rows: RateRow[] = [];
  const seen = new Set<string>();
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const where = `${source} line ${i + 1}`;
    const cells = line.split(',').map((c) => c.trim());
    if (cells.length !== 4) throw new ConfigError(`${where}: expected carrier,direction,prefix,cents_per_minute`);
    const [carrier, direction, prefix, cents] = cells as [string, string, string, string];
    if (!CARRIERS.has(carrier)) throw new ConfigError(`${where}: carrier must be simulated, twilio, telnyx or *`);
    if (direction !== 'inbound' && direction !== 'outbound') throw new ConfigError(`${where}: direction must be inbound or outbound`);
    if (!/^\+[0-9]{0,15}$/.test(prefix)) throw new ConfigError(`${where}: prefix must be + followed by up to 15 digits`);
    if (!/^\d+(\.\d{1,4})?$/.test(cents)) throw new ConfigError(`${where}: cents_per_minute must be a number such as 1.25 (at most 4 decimals)`);
    const key = `${carrier},${direction},${prefix}`;
    if (seen.has(key)) throw new ConfigError(`${where}: ${key} is listed twice`);
    seen.add(key);
    rows.push({ carrier, direction, prefix, cents: Number(cents) });
  });
  return { source, rows };
}

export function loadRateTable(path: string): RateTable {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`invalid configuration: RATE_TABLE_PATH: cannot read ${path} (${(err as Error).message})`);
  }
  return parseRateTable(text, path);
}

const tables = new Map<string, RateTable>();

/** The process's rate table (read once per path). Throws ConfigError for a missing or malformed file. */
export function rateTableFor(config: Pick<Config, 'RATE_TABLE_PATH'>): RateTable {
  const path = config.RATE_TABLE_PATH ?? DEFAULT_RATE_TABLE_PATH;
  let t = tables.get(path);
  if (!t) tables.set(path, (t = loadRateTable(path)));
  return t;
}

/** The table's rate for a number: the longest matching prefix, the carrier's own row first; null when none. */
export function lookupRate(table: RateTable, carrier: string, direction: Direction, number: string): number | null {
  let best: RateRow | null = null;
  for (const r of table.rows) {
    if (r.direction !== direction || (r.carrier !== carrier && r.carrier !== '*') || !number.startsWith(r.prefix)) continue;
    if (!best || r.prefix.length > best.prefix.length || (r.prefix.length === best.prefix.length && r.carrier !== '*')) best = r;
  }
  return best ? best.cents : null;
}

/**
 * The rate to store on a phone call (null when there is none): the table's, else the carrier's flat rate.
 * `number`: the number called for an outbound call, our number for an inbound one.
 */
export function callRateCents(carrier: CarrierAdapter, direction: Direction, number: string, table: RateTable): number | null {
  const rate = lookupRate(table, carrier.name, direction, number) ?? carrier.ratePerMinuteCents(direction, number);
  return rate === null || !Number.isFinite(rate) || rate < 0 ? null : rate;
}

export const billedMinutes = (durationSeconds: number) => Math.ceil(Math.max(0, durationSeconds) / 60);

/** cost_cents of a call: rate x billed minutes, rounded up to a whole cent. */
export function callCostCents(rateCentsPerMinute: number | null, durationSeconds: number): number | null {
  if (rateCentsPerMinute === null) return null;
  return Math.ceil(rateCentsPerMinute * billedMinutes(durationSeconds));
}
