// A list's page and its total from one statement (list-page.ts): the total is the count of the same snapshot the
// page was read from, the page keeps its order and columns, and a page past the end still has a total.
import { describe, expect, it } from 'vitest';
import { useTestSql } from '../../../test/support/db.ts';
import type { Sql } from './connect.ts';
import { pageOf, totalColumn } from './list-page.ts';

let sql: Sql;
useTestSql(4, async (s) => {
  sql = s;
  await sql`create table page_rows (id int primary key, kind text not null)`;
  await sql`insert into page_rows (id, kind) select g, case when g % 2 = 0 then 'even' else 'odd' end from generate_series(1, 9) g`;
});

async function list(kind: string, limit: number, offset: number) {
  const from = sql`page_rows r where r.kind = ${kind}`;
  const rows = await sql<{ id: number; kind: string; total_count: number }[]>`
    select r.id, r.kind, ${totalColumn(sql, from)} from ${from} order by r.id desc limit ${limit} offset ${offset}`;
  return pageOf(sql, rows, offset, from);
}

describe('a page and its total in one statement', () => {
  it('gives the page in order, without the total column, and the count of every match', async () => {
    expect(await list('odd', 2, 0)).toEqual({ items: [{ id: 9, kind: 'odd' }, { id: 7, kind: 'odd' }], total: 5 });
    expect(await list('odd', 2, 4)).toEqual({ items: [{ id: 1, kind: 'odd' }], total: 5 });
  });

  it('has a total past the end and for no match', async () => {
    expect(await list('even', 10, 20)).toEqual({ items: [], total: 4 });
    expect(await list('none', 10, 0)).toEqual({ items: [], total: 0 });
  });

  it('counts once, in the page query itself: one statement, so one snapshot', async () => {
    const from = sql`page_rows r where r.kind = ${'odd'}`;
    const plan = await sql<{ 'QUERY PLAN': string }[]>`explain (costs off) select r.id, ${totalColumn(sql, from)} from ${from} order by r.id desc limit 2`;
    // An InitPlan: evaluated once for the statement, not once per row of the page.
    expect(plan.map((r) => r['QUERY PLAN']).join('\n')).toMatch(/InitPlan/);
  });
});
