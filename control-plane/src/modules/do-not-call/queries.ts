// SQL of the do-not-call list.
import type { Db } from '../../db/types.ts';
import { pageOf, totalColumn, type Counted } from '../../db/list-page.ts';

export interface DncRow {
  id: string;
  org_id: string;
  phone_number: string;
  reason: string | null;
  source: 'api' | 'agent' | 'agent_unverified';
  call_id: string | null;
  created_at: Date;
}

/** Adds the number; an entry already there is kept as it is. `created` tells which happened. */
export async function addNumber(
  db: Db,
  e: { orgId: string; phoneNumber: string; reason: string | null; source: DncRow['source']; callId: string | null },
): Promise<{ row: DncRow; created: boolean }> {
  const [inserted] = await db<DncRow[]>`
    insert into do_not_call (org_id, phone_number, reason, source, call_id)
    values (${e.orgId}, ${e.phoneNumber}, ${e.reason}, ${e.source}, ${e.callId})
    on conflict (org_id, phone_number) do nothing
    returning *`;
  if (inserted) return { row: inserted, created: true };
  const [existing] = await db<DncRow[]>`select * from do_not_call where org_id = ${e.orgId} and phone_number = ${e.phoneNumber}`;
  return { row: existing!, created: false };
}

export async function listNumbers(db: Db, orgId: string, f: { phoneNumber?: string | undefined; limit: number; offset: number }): Promise<{ rows: DncRow[]; total: number }> {
  const where = db`org_id = ${orgId} ${f.phoneNumber ? db`and phone_number = ${f.phoneNumber}` : db``}`;
  const from = db`do_not_call where ${where}`;
  const rows = await db<Counted<DncRow>[]>`
    select *, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${f.limit} offset ${f.offset}`;
  const { items, total } = await pageOf(db, rows, f.offset, from);
  return { rows: items, total };
}

export async function deleteEntry(db: Db, orgId: string, id: string): Promise<DncRow | undefined> {
  const [row] = await db<DncRow[]>`delete from do_not_call where org_id = ${orgId} and id = ${id} returning *`;
  return row;
}

/** Which of `numbers` are on the org's list. */
export async function listedAmong(db: Db, orgId: string, numbers: string[]): Promise<Set<string>> {
  if (!numbers.length) return new Set();
  const rows = await db<{ phone_number: string }[]>`
    select phone_number from do_not_call where org_id = ${orgId} and phone_number = any(${numbers}::text[])`;
  return new Set(rows.map((r) => r.phone_number));
}

/** Entries an inbound caller's request added today (UTC): their caller IDs, unverified. */
export async function unverifiedToday(db: Db, orgId: string): Promise<number> {
  const [row] = await db<{ n: number }[]>`
    select count(*)::int as n from do_not_call
    where org_id = ${orgId} and source = 'agent_unverified' and created_at >= (date_trunc('day', now() at time zone 'utc') at time zone 'utc')`;
  return row!.n;
}
