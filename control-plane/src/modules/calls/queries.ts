// SQL of the calls resource.
import type { Db } from '../../db/types.ts';
import type { AgentRow } from '../agents/queries.ts';
import type { DataRetention } from '../../../../shared/privacy.ts';
import type { RealtimeSettings } from '../../../../schemas/models.ts';
import type { SupervisionEntry } from '../../../../schemas/supervision.ts';

export interface CallRow {
  id: string;
  /** The transcript's words (095): selected with the row, never shown. */
  transcript_tsv?: string | null;
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
  /** Why the call failed (migration 125): a code of the Call's `error`, and its message. */
  error_code?: string | null;
  error_message?: string | null;
  outcome: string | null;
  outcome_source: 'manual' | 'analysis' | null;
  messages: { role: 'agent' | 'user'; content: string }[] | null;
  ai_summary: string | null;
  analysis_summary: string | null;
  analysis_status: 'pending' | 'running' | 'completed' | 'failed' | 'skipped';
  analysis_error: string | null;
  analysis_method: 'agent_model' | 'analysis_model' | 'extractive' | 'rule' | null;
  analysis_model: string | null;
  latency: Record<string, unknown> | null;
  usage: Record<string, unknown> | null;
  cost_cents: number | null;
  recording_key: string | null;
  /** Which recording consent applied (the worker's ended report); null before it. */
  recording_consent: 'none' | 'announced' | 'accepted' | 'declined' | null;
  last_seq: number;
  awaiting_report: boolean;
  /** call.ended is held for the analysis (lifecycle.ts, releaseEndedEvent). */
  ended_event_pending: boolean;
  dialed_at: Date | null;
  worker_seen_at: Date | null;
  /** When a worker was given the call's config (138): a worker took the call. */
  config_served_at?: Date | null;
  /** The campaign this call is an attempt of (migration 100). */
  campaign_id?: string | null;
  /** Squads (migration 102): the squad the call started on, its hand-offs, and each agent's latency. */
  squad_id?: string | null;
  supervision?: SupervisionEntry[];
  handoffs?: { from_agent_id: string; to_agent_id: string; reason: string | null; context: 'full' | 'summary'; at: string }[];
  agent_latency?: Record<string, unknown> | null;
  /** The agent test run this call is a voice scenario of (migration 111): not billable, no call events. */
  test_run_id?: string | null;
  /** Phone-menu navigation of an outbound call (migration 105): the goal, and the most menus; null without. */
  ivr_goal?: string | null;
  ivr_max_menus?: number | null;
  /** The agent version the call runs and why (migration 150): set by a pin, or at the worker's config fetch. */
  agent_version?: number | null;
  agent_version_source?: 'published' | 'split' | 'pinned' | null;
  created_at: Date;
  updated_at: Date;
}

export async function insertCall(
  db: Db,
  c: Pick<CallRow, 'org_id' | 'agent_id' | 'type' | 'direction' | 'to_number' | 'from_number' | 'variables' | 'metadata' | 'overrides' | 'webhook_url'> & {
    id: string;
    room_name: string | null;
    /** The publishable key that started a web call (its own concurrency pool). */
    publishable_key_id?: string | null;
    /** A voice-mode agent test's call. */
    test_run_id?: string | null;
  },
): Promise<CallRow> {
  const [row] = await db<CallRow[]>`
    insert into calls (id, org_id, agent_id, type, direction, to_number, from_number, room_name, variables, metadata, overrides, webhook_url, publishable_key_id, test_run_id)
    values (${c.id}, ${c.org_id}, ${c.agent_id}, ${c.type}, ${c.direction}, ${c.to_number}, ${c.from_number}, ${c.room_name},
            ${db.json(c.variables as never)}, ${db.json(c.metadata as never)}, ${db.json(c.overrides as never)}, ${c.webhook_url},
            ${c.publishable_key_id ?? null}, ${c.test_run_id ?? null})
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
  campaignId?: string | undefined;
  phoneNumberId?: string | undefined;
  outcome?: string | undefined;
  q?: string | undefined;
  limit: number;
  offset: number;
}

/** The platform's side of a call: the number called (inbound) or the caller ID (outbound); as in calls_org_number_idx. */
const ourNumber = (db: Db) => db`(case type when 'inbound' then to_number when 'outbound' then from_number end)`;

/** The list's conditions. Each filter has an index leading with org_id and ending in the list's order (095). */
export function callConditions(db: Db, f: Omit<CallFilter, 'limit' | 'offset'> & { phoneNumber?: string | undefined }) {
  // An agent test's call is the test's, not the organisation's: never listed (migration 141's partial indexes).
  return db`
    org_id = ${f.orgId} and test_run_id is null
    ${f.agentId ? db`and agent_id = ${f.agentId}` : db``}
    ${f.type ? db`and type = ${f.type}` : db``}
    ${f.status ? db`and status = ${f.status}` : db``}
    ${f.createdAfter ? db`and created_at >= ${f.createdAfter}` : db``}
    ${f.createdBefore ? db`and created_at < ${f.createdBefore}` : db``}
    ${f.campaignId ? db`and campaign_id = ${f.campaignId}` : db``}
    ${f.outcome ? db`and outcome = ${f.outcome}` : db``}
    ${f.phoneNumber !== undefined ? db`and type <> 'web' and ${ourNumber(db)} = ${f.phoneNumber}` : db``}
    ${f.q ? db`and transcript_tsv @@ websearch_to_tsquery('simple', ${f.q})` : db``}`;
}

const filtered = (f: CallFilter) =>
  [f.agentId, f.type, f.status, f.createdAfter, f.createdBefore, f.campaignId, f.phoneNumberId, f.outcome, f.q].some((v) => v !== undefined);

/**
 * A page of the list, newest first (id breaks ties), and its total (docs/decisions/032-console-api.md, "Calls list at scale (`GET /v1/calls`)").
 * The page's ids come from the filter's index alone (offset rows are skipped in the index, not fetched from the
 * table); then only the page's rows are read. The unfiltered total is the org's call counter (074). A filtered
 * one starts from the planner's estimate (one planning step): when that is near or under the count bound,
 * max(cap, offset + limit), the calls are counted up to it; past it, or when there are more than that, the
 * total is the estimate, raised to what the page shows, so `offset + limit < total` whenever a next page exists.
 */
export async function listCalls(db: Db, f: CallFilter, cap: number): Promise<{ rows: CallRow[]; total: number; exact: boolean }> {
  let phoneNumber: string | undefined;
  if (f.phoneNumberId) {
    // A number of another org (or none) matches nothing, as an agent_id of another org does. Released numbers
    // still name their past calls. The number is read first so the planner sees it (statistics of the index).
    const [n] = await db<{ phone_number: string }[]>`select phone_number from phone_numbers where id = ${f.phoneNumberId} and org_id = ${f.orgId}`;
    if (!n) return { rows: [], total: 0, exact: true };
    phoneNumber = n.phone_number;
  }
  const where = callConditions(db, { ...f, phoneNumber });
  const isFiltered = filtered(f);
  const estimate = isFiltered ? await estimateRows(db, where) : 0;
  // Words of the transcript: a common word is found soon walking the time index; a rare one is not (a word in
  // 300 of 1M calls walked the whole index, 0.5 s), so its few matches are taken from the GIN index and sorted.
  // The planner's estimate of a word it has no statistics for is low, which sends rare words the second way.
  const fewMatches = f.q !== undefined && estimate <= RARE_WORD_ROWS;
  const rows = fewMatches
    ? await db<CallRow[]>`
        with matches as materialized (select id, created_at from calls where ${where}),
        page as (select id, created_at from matches order by created_at desc, id desc limit ${f.limit} offset ${f.offset})
        select c.* from page p join calls c on c.id = p.id
        order by p.created_at desc, p.id desc`
    : await db<CallRow[]>`
        with page as (
          select id, created_at from calls where ${where}
          order by created_at desc, id desc limit ${f.limit} offset ${f.offset}
        )
        select c.* from page p join calls c on c.id = p.id
        order by p.created_at desc, p.id desc`;
  // What the page itself proves: the calls before it and on it, and one more when it is full.
  const seen = f.offset + rows.length + (rows.length === f.limit ? 1 : 0);
  if (!isFiltered) {
    const [c] = await db<{ n: string }[]>`select calls as n from org_call_counts where org_id = ${f.orgId}`;
    // The counter and the page are two reads: a call created between them must not make total < what is shown.
    return { rows, total: Math.max(Number(c?.n ?? 0), f.offset + rows.length), exact: true };
  }
  const bound = Math.max(cap, f.offset + f.limit);
  // Counting many matches of a common word (or status) costs more than the page: past twice the bound, the
  // estimate is the answer.
  if (estimate <= 2 * bound) {
    const [c] = await db<{ n: number }[]>`select count(*)::int as n from (select 1 from calls where ${where} limit ${bound + 1}) s`;
    if (c!.n <= bound) return { rows, total: c!.n, exact: true };
    return { rows, total: Math.max(c!.n, estimate, seen), exact: false };
  }
  return { rows, total: Math.max(estimate, seen), exact: false };
}

/** Below this many estimated matches, a transcript search sorts its matches instead of walking the time index. */
const RARE_WORD_ROWS = 5_000;

async function estimateRows(db: Db, where: ReturnType<typeof callConditions>): Promise<number> {
  const [plan] = await db<{ 'QUERY PLAN': [{ Plan: { 'Plan Rows': number } }] }[]>`explain (format json) select 1 from calls where ${where}`;
  return Math.round(plan!['QUERY PLAN'][0].Plan['Plan Rows']);
}

/**
 * Takes one call from the org's allowance for today (UTC). One conditional upsert: concurrent creations
 * serialise on the counter row, so the cap is never overshot. Returns false when the cap is reached.
 */
/**
 * Takes one of today's calls. A call started with a publishable key takes it only while the day's total is
 * under the cap, and is counted in `publishable_calls` too; any other call leaves those out, so a page's key
 * never uses up the day's phone calls (docs/decisions/003-publishable-keys.md, "Publishable keys and phone capacity").
 */
export async function reserveDailyCall(db: Db, orgId: string, publishable = false): Promise<boolean> {
  const p = publishable ? 1 : 0;
  const counted = publishable ? db`d.calls` : db`d.calls - d.publishable_calls`;
  const rows = await db`
    insert into org_daily_calls as d (org_id, day, calls, publishable_calls)
    select id, (now() at time zone 'utc')::date, 1, ${p} from orgs where id = ${orgId} and max_calls_per_day > 0
    on conflict (org_id, day) do update set calls = d.calls + 1, publishable_calls = d.publishable_calls + ${p}
      where ${counted} < (select max_calls_per_day from orgs where id = ${orgId})
    returning calls`;
  return rows.length > 0;
}

/** The call's data retention: its agent's, else its organisation's (read each time: a change applies at once). */
export async function retentionOfCall(db: Db, callId: string): Promise<DataRetention> {
  const [row] = await db<{ mode: DataRetention }[]>`
    select coalesce(a.data_retention, o.data_retention) as mode
    from calls c join agents a on a.id = c.agent_id join orgs o on o.id = c.org_id
    where c.id = ${callId}`;
  // A call that does not exist keeps nothing.
  return row?.mode ?? 'no_content';
}

/**
 * Takes up to `n` of today's calls at once (a campaign's tick) and returns how many it took: what is left of
 * the cap, counted as reserveDailyCall counts a call that is not a publishable key's. MUST run under the org's
 * admission lock (lockAdmission), which makes the read and the upsert one step.
 */
export async function reserveDailyCalls(db: Db, orgId: string, n: number): Promise<number> {
  const [row] = await db<{ k: number }[]>`
    select greatest(0, least(${n}::int, o.max_calls_per_day - coalesce(d.calls - d.publishable_calls, 0)))::int as k
    from orgs o left join org_daily_calls d on d.org_id = o.id and d.day = (now() at time zone 'utc')::date
    where o.id = ${orgId}`;
  const k = row?.k ?? 0;
  if (k > 0) {
    await db`
      insert into org_daily_calls as d (org_id, day, calls, publishable_calls) values (${orgId}, (now() at time zone 'utc')::date, ${k}, 0)
      on conflict (org_id, day) do update set calls = d.calls + ${k}`;
  }
  return k;
}

/** Records a worker report's sequence number; false when that (call, seq) was applied before. */
export async function recordReport(db: Db, callId: string, seq: number, kind: string): Promise<boolean> {
  const rows = await db`insert into call_reports (call_id, seq, kind) values (${callId}, ${seq}, ${kind}) on conflict do nothing returning seq`;
  return rows.length > 0;
}

// ---- Statements of the routes, the internal API and the jobs ------------------------------------------------

/** PATCH /v1/calls/{id}: the customer's outcome (never overwritten by analysis). */
export async function setManualOutcome(db: Db, orgId: string, callId: string, outcome: string | null): Promise<CallRow | undefined> {
  const [row] = await db<CallRow[]>`
    update calls set outcome = ${outcome}, outcome_source = 'manual', updated_at = now()
    where id = ${callId} and org_id = ${orgId} returning *`;
  return row;
}

export async function getRecordingKey(db: Db, callId: string): Promise<string | null | undefined> {
  const [row] = await db<{ recording_key: string | null }[]>`select recording_key from calls where id = ${callId}`;
  return row?.recording_key;
}

/** The call's first recording; false when it already had one (a recording is never replaced). */
export async function setRecordingKey(db: Db, callId: string, key: string): Promise<boolean> {
  const rows = await db`update calls set recording_key = ${key}, updated_at = now() where id = ${callId} and recording_key is null returning id`;
  return rows.length > 0;
}

/** Which recording consent applied to the call, as its worker reports with the end. */
export async function setRecordingConsent(db: Db, callId: string, consent: NonNullable<CallRow['recording_consent']>): Promise<void> {
  await db`update calls set recording_consent = ${consent} where id = ${callId}`;
}

/** A worker report was applied: its seq and the worker's last sign of life. */
export async function noteReport(db: Db, callId: string, seq: number): Promise<void> {
  await db`update calls set last_seq = greatest(last_seq, ${seq}), worker_seen_at = now() where id = ${callId}`;
}

export async function setPartialMessages(db: Db, callId: string, messages: unknown[]): Promise<void> {
  await db`update calls set messages = ${db.json(messages as never)}, updated_at = now() where id = ${callId}`;
}

/** The unfinished call held in a LiveKit room, if any. */
export async function liveCallInRoom(db: Db, room: string): Promise<{ id: string } | undefined> {
  const [call] = await db<{ id: string }[]>`select id from calls where room_name = ${room} and status in ('queued', 'initiated', 'in_progress')`;
  return call;
}

/** Records `api_stop` as the end reason unless one is set. */
export async function markApiStop(db: Db, callId: string): Promise<void> {
  await db`update calls set end_reason = coalesce(end_reason, 'api_stop'), updated_at = now() where id = ${callId}`;
}

export async function touchWorker(db: Db, callId: string): Promise<void> {
  await db`update calls set worker_seen_at = now() where id = ${callId}`;
}

/** Candidates for the reaper: in-progress calls quiet for quietSeconds, and calls not started after dispatchTimeoutSeconds. */
export async function reapCandidates(db: Db, quietSeconds: number, dispatchTimeoutSeconds: number, ringTimeoutSeconds = 0): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select id from calls
    where (status = 'in_progress' and coalesce(worker_seen_at, started_at, created_at) < now() - make_interval(secs => ${quietSeconds}))
       or (status in ('queued', 'initiated') and type <> 'outbound' and created_at < now() - make_interval(secs => ${dispatchTimeoutSeconds}))
       -- Outbound calls: the dial job owns them until they are placed (a scheduled one waits in 'queued'); then
       -- they ring for up to the ring timeout.
       or (status = 'initiated' and type = 'outbound' and dialed_at < now() - make_interval(secs => ${dispatchTimeoutSeconds + ringTimeoutSeconds}))
    order by updated_at limit 200`;
  return rows.map((r) => r.id);
}

export async function markAnalysisRunning(db: Db, callId: string): Promise<void> {
  await db`update calls set analysis_status = 'running' where id = ${callId} and analysis_status <> 'completed'`;
}

export async function markAnalysisSkipped(db: Db, callId: string, reason: string): Promise<void> {
  await db`
    update calls set analysis_status = 'skipped', analysis_error = ${reason}, updated_at = now()
    where id = ${callId} and analysis_status <> 'completed'`;
}

/** Records a failed attempt, and the model it was made with when known. */
export async function markAnalysisFailed(db: Db, callId: string, final: boolean, error: string, source: { method: string; model: string | null } | null = null): Promise<void> {
  await db`
    update calls set analysis_status = ${final ? 'failed' : 'pending'}, analysis_error = ${error.slice(0, 500)},
      analysis_method = ${source?.method ?? null}, analysis_model = ${source?.model ?? null}, updated_at = now()
    where id = ${callId}`;
}

/**
 * Stores the analysis and how it was made; an outcome set by PATCH is the customer's word and is kept. An
 * extractive summary has no outcome (null). Undefined when already done.
 */
export async function saveAnalysis(db: Db, callId: string, r: { summary: string; outcome: string | null; method: string; model: string | null }): Promise<CallRow | undefined> {
  const [row] = await db<CallRow[]>`
    update calls set
      ai_summary = ${r.summary},
      analysis_summary = ${r.summary},
      outcome = case when outcome_source = 'manual' then outcome else ${r.outcome} end,
      outcome_source = case when outcome_source = 'manual' then 'manual' when ${r.outcome}::text is null then null else 'analysis' end,
      analysis_method = ${r.method}, analysis_model = ${r.model},
      analysis_status = 'completed', analysis_error = null, updated_at = now()
    where id = ${callId} and analysis_status <> 'completed'
    returning *`;
  return row;
}

/** The model an agent uses, for the call analysis. */
export async function agentModel(db: Db, agentId: string) {
  const [model] = await db<{ provider: 'openai' | 'anthropic' | 'gemini' | 'local'; model: string; base_url: string | null; realtime: boolean }[]>`
    select m.provider, m.model, m.base_url, m.realtime is not null as realtime from agents a join llm_models m on m.id = a.llm_id where a.id = ${agentId}`;
  return model;
}

/** The org's newest credential for a provider (sealed). */
export async function newestCredential(db: Db, orgId: string, provider: string) {
  const [cred] = await db<{ id: string; ciphertext: Buffer; key_version: number }[]>`
    select id, ciphertext, key_version from credentials where org_id = ${orgId} and provider = ${provider} order by created_at desc limit 1`;
  return cred;
}

/** A call's agent (any org: the call already names it) and its model's settings, for the session config. */
export async function agentAndModelForCall(db: Db, agentId: string) {
  const [agent] = await db<AgentRow[]>`select * from agents where id = ${agentId}`;
  if (!agent) return { agent: undefined, model: undefined };
  const [model] = await db<{ provider: 'openai' | 'gemini' | 'anthropic'; model: string; base_url: string | null; temperature: number; max_tokens: number | null; system_prompt: string | null; tool_ids: string[]; knowledge_base_ids: string[]; realtime: RealtimeSettings | null }[]>`
    select provider, model, base_url, temperature, max_tokens, system_prompt, tool_ids, knowledge_base_ids, realtime from llm_models where id = ${agent.llm_id}`;
  return { agent, model };
}

// ---- Status transitions (lifecycle.ts): each a guarded update, `from` the statuses it may leave ----------------

export async function setInitiated(db: Db, callId: string): Promise<void> {
  await db`update calls set status = 'initiated', updated_at = now() where id = ${callId} and status = 'queued'`;
}

export async function setInProgress(db: Db, callId: string, startedAt: string, roomName: string | null, from: CallRow['status'][]): Promise<CallRow | undefined> {
  const [row] = await db<CallRow[]>`
    update calls set status = 'in_progress', started_at = ${startedAt}, worker_seen_at = now(), updated_at = now(),
                     room_name = coalesce(room_name, ${roomName})
    where id = ${callId} and status = any(${from})
    returning *`;
  return row;
}

/** Stores the end; an end reason already set (by the stop route) is kept, and unreported fields keep their value. */
export async function setCompleted(
  db: Db,
  callId: string,
  f: {
    endReason: string;
    endedAt: string;
    durationSeconds: number;
    messages?: unknown[] | null;
    latency?: unknown;
    usage?: unknown;
    awaitingReport?: boolean;
    holdEndedEvent?: boolean;
  },
  from: CallRow['status'][],
): Promise<CallRow | undefined> {
  const [row] = await db<CallRow[]>`
    update calls set
      status = 'completed',
      ended_at = ${f.endedAt},
      duration_seconds = ${f.durationSeconds},
      end_reason = coalesce(end_reason, ${f.endReason}),
      messages = coalesce(${f.messages === undefined ? null : db.json((f.messages ?? []) as never)}::jsonb, messages, '[]'::jsonb),
      latency = coalesce(${f.latency === undefined ? null : db.json(f.latency as never)}::jsonb, latency),
      usage = coalesce(${f.usage === undefined ? null : db.json(f.usage as never)}::jsonb, usage),
      awaiting_report = ${f.awaitingReport ?? false},
      ended_event_pending = ${f.holdEndedEvent ?? false},
      -- Phone calls: the carrier rate captured at open times the billed minutes (phone-numbers/rates.ts).
      cost_cents = case when rate_cents_per_minute is null then cost_cents
                        else ceil(rate_cents_per_minute * ceil(${f.durationSeconds}::numeric / 60))::int end,
      updated_at = now()
    where id = ${callId} and status = any(${from})
    returning *`;
  return row;
}

/**
 * Takes the held call.ended of a call: clears the flag and returns the row, or undefined when it is not held
 * (already sent, or never held). The row lock it takes orders it with fillConversation and saveAnalysis, so
 * whichever runs second sees what the first did.
 */
export async function takeHeldEndedEvent(db: Db, callId: string): Promise<CallRow | undefined> {
  const [row] = await db<CallRow[]>`
    update calls set ended_event_pending = false
    where id = ${callId} and ended_event_pending
    returning *`;
  return row;
}

export async function setFailed(
  db: Db,
  callId: string,
  endReason: string,
  from: CallRow['status'][],
  error: { code: string; message: string } | null = null,
): Promise<CallRow | undefined> {
  const [row] = await db<CallRow[]>`
    update calls set status = 'failed', end_reason = coalesce(end_reason, ${endReason}), ended_at = now(), duration_seconds = 0,
                     error_code = ${error?.code ?? null}, error_message = ${error?.message ?? null},
                     analysis_status = 'skipped', updated_at = now()
    where id = ${callId} and status = any(${from})
    returning *`;
  return row;
}

/** A stopped call's conversation, from its worker's late report (only while it is awaited). */
export async function fillConversation(db: Db, callId: string, r: { messages?: unknown[] | null; latency?: unknown; usage?: unknown }): Promise<CallRow | undefined> {
  const [row] = await db<CallRow[]>`
    update calls set
      awaiting_report = false,
      messages = coalesce(${r.messages == null ? null : db.json(r.messages as never)}::jsonb, messages, '[]'::jsonb),
      latency = coalesce(${r.latency === undefined ? null : db.json(r.latency as never)}::jsonb, latency),
      usage = coalesce(${r.usage === undefined ? null : db.json(r.usage as never)}::jsonb, usage),
      updated_at = now()
    where id = ${callId} and awaiting_report
    returning *`;
  return row;
}

/** The call of a room, whatever its state (rooms are unique per call). */
export async function callIdInRoom(db: Db, room: string): Promise<string | undefined> {
  const [row] = await db<{ id: string }[]>`select id from calls where room_name = ${room}`;
  return row?.id;
}

/** Adds keys to a call's metadata (a shallow merge). */
export async function mergeCallMetadata(db: Db, callId: string, patch: Record<string, unknown>): Promise<void> {
  await db`update calls set metadata = metadata || ${db.json(patch as never)}, updated_at = now() where id = ${callId}`;
}

/** Marks the call's config handed out; false when it was before, or the call has ended (or does not exist). */
export async function claimConfig(db: Db, callId: string): Promise<boolean> {
  const rows = await db`
    update calls set config_served_at = now()
    where id = ${callId} and config_served_at is null and status not in ('completed', 'failed')
    returning id`;
  return rows.length > 0;
}
