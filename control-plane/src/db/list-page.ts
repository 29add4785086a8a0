// A list's page and its total from one statement. Two statements on the pool (the page, then the count) each
// saw the table as it was when they ran, so a row written between them made `total` count a row the page did
// not show (total 2, one item). Here the count is a scalar subquery of the page's own query: one snapshot, one
// round trip, and the count is taken once (an InitPlan), from the filter's index as a separate count would.
import type postgres from 'postgres';
import type { Db } from './types.ts';

/** A row of a page query, with the total beside it. */
export type Counted<R> = R & { total_count: number };
/** A row of a query typed by nothing more than its columns. */
export type Row = postgres.Row;

/** What a list matches: a table (with its alias) and its filter, e.g. db`agents where ${where}`. */
export type ListSource = postgres.Fragment;

/** The column `pageOf` reads the total from; put it in the page query's select list. */
export function totalColumn(db: Db, from: ListSource): postgres.Fragment {
  return db`(select count(*)::int from ${from}) as total_count`;
}

/**
 * The page and its total, from rows selected with `totalColumn`. A page past the end has no row to carry the
 * total: at offset 0 it is 0 (the same snapshot saw no match); further on, it is counted again.
 */
export async function pageOf<R extends object>(db: Db, rows: readonly Counted<R>[], offset: number, from: ListSource): Promise<{ items: R[]; total: number }> {
  const items = rows.map(({ total_count: _, ...row }) => row as unknown as R);
  if (rows.length) return { items, total: rows[0]!.total_count };
  if (offset === 0) return { items, total: 0 };
  const [c] = await db<{ n: number }[]>`select count(*)::int as n from ${from}`;
  return { items, total: c!.n };
}
