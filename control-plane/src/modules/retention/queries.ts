// SQL of the retention job: the calls whose content is past the organisation's retain_days, and what deleting
// that content means in the call row and in the events that carried it.
import type { Db } from '../../db/types.ts';

/** Organisations with a retention period. */
export async function orgsWithRetention(db: Db): Promise<{ id: string; retain_days: number }[]> {
  return db<{ id: string; retain_days: number }[]>`select id, retain_days from orgs where retain_days is not null order by id`;
}

export interface ExpiredCall {
  id: string;
  recording_key: string | null;
}

/**
 * Ended calls of an org created before `cutoff` whose content is still there, oldest first. A call in progress
 * is never touched, whatever its age.
 */
export async function callsPastRetention(db: Db, orgId: string, cutoff: Date, limit: number): Promise<ExpiredCall[]> {
  return db<ExpiredCall[]>`
    select id, recording_key from calls
    where org_id = ${orgId} and content_deleted_at is null and created_at < ${cutoff}
      and status in ('completed', 'failed')
    order by created_at, id
    limit ${limit}`;
}

/**
 * Deletes the text of a call (messages, summaries) and, when its file is gone, the recording's key. The call
 * counts as done (`content_deleted_at`) only once nothing is left, so a recording that could not be deleted
 * is tried again on the next run. Metadata stays: times, duration, status, outcome, latency, usage, cost.
 */
export async function deleteCallContent(db: Db, callId: string, recordingDeleted: boolean): Promise<void> {
  await db`
    update calls set
      messages = null, ai_summary = null, analysis_summary = null,
      recording_key = case when ${recordingDeleted} then null else recording_key end,
      content_deleted_at = case when ${recordingDeleted} or recording_key is null then now() end,
      updated_at = now()
    where id = ${callId}`;
}

/**
 * The same content in the call's stored events (webhook payloads and their retries): transcripts lose their
 * messages, call.ended and call.analyzed their summaries. A delivery still pending sends the scrubbed body.
 */
export async function scrubCallEvents(db: Db, callId: string): Promise<void> {
  await db`
    update events set payload = (case
        when type in ('transcript.partial', 'transcript.final') then payload::jsonb || '{"messages": []}'::jsonb
        when type = 'call.ended' then payload::jsonb || jsonb_build_object('ai_summary', null,
          'analysis', coalesce(payload::jsonb -> 'analysis', '{}'::jsonb) || '{"summary": null}'::jsonb)
        else payload::jsonb || '{"ai_summary": null}'::jsonb
      end)::json
    where call_id = ${callId} and type in ('transcript.partial', 'transcript.final', 'call.ended', 'call.analyzed')`;
}

/**
 * The rest of a call's free text, kept elsewhere: a supervisor's said and whispered text, its squad hand-offs' reasons (in the call row and the
 * `call.handoff` events), a warm transfer's held `ended` report (the whole conversation), the reason the agent gave
 * when it listed the number as do-not-call (the entry itself stays: it is what stops the next call), and the
 * conversation of the voice test whose call this was. Times, agents and outcomes stay.
 */
export async function deleteCallExtras(db: Db, callId: string): Promise<void> {
  await db`
    update calls set handoffs = (select coalesce(jsonb_agg(h || '{"reason": null}'::jsonb order by n), '[]'::jsonb)
                                 from jsonb_array_elements(handoffs) with ordinality as e(h, n))
    where id = ${callId} and jsonb_array_length(handoffs) > 0`;
  await db`update events set payload = (payload::jsonb || '{"reason": null}'::jsonb)::json where call_id = ${callId} and type = 'call.handoff'`;
  await db`update call_transfers set held_report = null where call_id = ${callId} and held_report is not null`;
  // A supervisor's said and whispered text (calls.supervision, its call.supervised events, an untaken outbox).
  await db`
    update calls set supervision = (select coalesce(jsonb_agg(case when e ? 'details' and e->'details' ? 'text'
                                                                  then jsonb_set(e, '{details,text}', 'null'::jsonb) else e end order by n), '[]'::jsonb)
                                    from jsonb_array_elements(supervision) with ordinality as x(e, n)),
                     supervision_outbox = '[]'::jsonb
    where id = ${callId} and (jsonb_array_length(supervision) > 0 or jsonb_array_length(supervision_outbox) > 0)`;
  await db`update events set payload = jsonb_set(payload::jsonb, '{details,text}', 'null'::jsonb)::json
           where call_id = ${callId} and type = 'call.supervised' and payload::jsonb->'details' ? 'text'`;
  await db`update do_not_call set reason = null where call_id = ${callId} and source = 'agent' and reason is not null`;
  await db`update agent_test_results set messages = '[]'::jsonb, tool_calls = '[]'::jsonb where call_id = ${callId}`;
}
