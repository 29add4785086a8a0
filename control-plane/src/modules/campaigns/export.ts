// GET /v1/campaigns/{id}/export.csv: every contact with its attempts, final state, outcome and call ids, in row
// order, streamed page by page (the whole list is never held at once). RFC 4180 quoting; a cell a spreadsheet
// would run as a formula (= + - @ tab CR first) is written with a leading apostrophe, except a plain number such
// as +14155550123 (docs/security.md, "Campaign uploads").
import type { Db } from '../../db/types.ts';
import { resultOf } from './results.ts';
import { exportPage, type CampaignRow, type ExportRow } from './queries.ts';

const PAGE = 2000;
export const EXPORT_COLUMNS = [
  'row',
  'to_number',
  'timezone',
  'state',
  'skip_reason',
  'attempts',
  'last_result',
  'outcome',
  'call_ids',
  'attempt_results',
  'first_attempt_at',
  'last_attempt_at',
] as const;

const PLAIN_NUMBER = /^[+-]?\d[\d.]*$/;

/** One CSV cell: neutralised if a spreadsheet would take it for a formula, quoted when it must be. */
export function csvCell(value: unknown): string {
  let s = value === null || value === undefined ? '' : typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (/^[=+\-@\t\r]/.test(s) && !PLAIN_NUMBER.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

const line = (cells: unknown[]) => cells.map(csvCell).join(',') + '\r\n';

function contactLine(r: ExportRow, variables: string[]): string {
  const calls = r.calls ?? [];
  return line([
    r.row_number,
    r.to_number,
    r.timezone ?? r.zone_key,
    r.state,
    r.skip_reason,
    r.attempts,
    r.last_result,
    r.outcome,
    calls.map((c) => c.id).join(';'),
    // A call still live shows its status.
    calls.map((c) => resultOf({ status: c.status as never, end_reason: c.end_reason }) ?? c.status).join(';'),
    r.first_attempt_at?.toISOString() ?? null,
    r.last_attempt_at?.toISOString() ?? null,
    ...variables.map((v) => r.variables[v]),
  ]);
}

/** The export as chunks of text: the header, then a chunk per page of contacts. */
export async function* exportCsv(db: Db, c: CampaignRow): AsyncGenerator<string> {
  // Variable columns named like a fixed one keep their place among the variables, prefixed.
  const variables = c.variable_columns;
  yield line([...EXPORT_COLUMNS, ...variables.map((v) => ((EXPORT_COLUMNS as readonly string[]).includes(v) ? `variable_${v}` : v))]);
  let after: { row: number; id: string } | null = null;
  for (;;) {
    const rows = await exportPage(db, c.id, after, PAGE);
    if (!rows.length) return;
    yield rows.map((r) => contactLine(r, variables)).join('');
    const last = rows[rows.length - 1]!;
    after = { row: last.row_number, id: last.id };
    if (rows.length < PAGE) return;
  }
}
