// SQL of the calls resource.
import type { Db } from '../../db/types.ts';

export interface CallRow {
  id: string;
  org_id: string;
  agent_id: string;
  type: 'web' | 'outbound' | 'inbound';
  status: 'queued' | 'initiated' | 'in_progress' | 'completed' | 'failed';
  direction: 'inbound' | 'outbound' | null;
  to_number: string | null;
  from_number: string | null;
  room_name: string | null;
  carrier_call_sid: string | null;
  scheduled_at: Date | null;
  variables: Record<string, unknown>;
  metadata: Record<string, unknown>;
  overrides: Record<string, unknown>;
  webhook_url: string | null;
  started_at: Date | null;
  ended_at: Date | null;
  duration_seconds: number | null;
  end_reason: string | null;
  outcome: string | null;
  outcome_source: 'manual' | 'analysis' | null;
  messages: { role: 'agent' | 'user'; content: string }[] | null;
  ai_summary: string | null;
  analysis_summary: string | null;
  analysis_status: 'pending' | 'running' | 'completed' | 'failed' | 'skipped';
  analysis_error: string | null;
  latency: Record<string, unknown> | null;
  usage: Record<string, unknown> | null;
  cost_cents: number | null;
  recording_key: string | null;
  last_seq: number;
  worker_seen_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export async function insertCall(
  db: Db,
  c: Pick<CallRow, 'org_id' | 'agent_id' | 'type' | 'direction' | 'to_number' | 'from_number' | 'variables' | 'metadata' | 'overrides' | 'webhook_url'> & { id: string; room_name: string | null },
): Promise<CallRow> {
  const [row] = await db<CallRow[]>`
    insert into calls (id, org_id, agent_id, type, direction, to_number, from_number, room_name, variables, metadata, overrides, webhook_url)
    values (${c.id}, ${c.org_id}, ${c.agent_id}, ${c.type}, ${c.direction}, ${c.to_number}, ${c.from_number}, ${c.room_name},
            ${db.json(c.variables as never)}, ${db.json(c.metadata as never)}, ${db.json(c.overrides as never)}, ${c.webhook_url})
    returning *`;
  return row!;
}

export async function getCall(db: Db, orgId: string, id: string): Promise<CallRow | undefined> {
  const [row] = await db<CallRow[]>`select * from calls where id = ${id} and org_id = ${orgId}`;
  return row;
}

/** For the internal API and jobs, which act for the platform, not an org. */
export async function getCallById(db: Db, id: string, opts: { lock?: boolean } = {}): Promise<CallRow | undefined> {
  const [row] = opts.lock ? await db<CallRow[]>`select * from calls where id = ${id} for update` : await db<CallRow[]>`select * from calls where id = ${id}`;
  return row;
}

export interface CallFilter {
  orgId: string;
  agentId?: string | undefined;
  type?: string | undefined;
  status?: string | undefined;
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
  limit: number;
  offset: number;
}

export async function listCalls(db: Db, f: CallFilter): Promise<{ rows: CallRow[]; total: number }> {
  const where = db`
    org_id = ${f.orgId}
    ${f.agentId ? db`and agent_id = ${f.agentId}` : db``}
    ${f.type ? db`and type = ${f.type}` : db``}
    ${f.status ? db`and status = ${f.status}` : db``}
    ${f.createdAfter ? db`and created_at >= ${f.createdAfter}` : db``}
    ${f.createdBefore ? db`and created_at < ${f.createdBefore}` : db``}`;
  const rows = await db<(CallRow & { total_count: number })[]>`
    select *, count(*) over () as total_count from calls where ${where}
    order by created_at desc, id desc limit ${f.limit} offset ${f.offset}`;
  let total = rows.length ? Number(rows[0]!.total_count) : 0;
  if (!rows.length && f.offset > 0) {
    const [c] = await db<{ total: number }[]>`select count(*)::int as total from calls where ${where}`;
    total = c!.total;
  }
  return { rows: rows.map(({ total_count: _, ...r }) => r), total };
}

/**
 * Takes one call from the org's allowance for today (UTC). One conditional upsert: concurrent creations
 * serialise on the counter row, so the cap is never overshot. Returns false when the cap is reached.
 */
export async function reserveDailyCall(db: Db, orgId: string): Promise<boolean> {
  const rows = await db`
    insert into org_daily_calls as d (org_id, day, calls)
    select id, (now() at time zone 'utc')::date, 1 from orgs where id = ${orgId} and max_calls_per_day > 0
    on conflict (org_id, day) do update set calls = d.calls + 1
      where d.calls < (select max_calls_per_day from orgs where id = ${orgId})
    returning calls`;
  return rows.length > 0;
}

/** Records a worker report's sequence number; false when that (call, seq) was applied before. */
export async function recordReport(db: Db, callId: string, seq: number, kind: string): Promise<boolean> {
  const rows = await db`insert into call_reports (call_id, seq, kind) values (${callId}, ${seq}, ${kind}) on conflict do nothing returning seq`;
  return rows.length > 0;
}
