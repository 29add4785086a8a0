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
