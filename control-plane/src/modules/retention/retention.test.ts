// The retention job deletes exactly what is past its time: calls created just before the cutoff lose their
// messages, analysis text, recording (the file too) and the content of their stored events; a call created
// at the cutoff, a live call, and the calls of an organisation without retain_days keep everything. The call's
// metadata stays, and each batch is audited.
import { existsSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { recordingFile } from '../calls/recordings.ts';
import { runRetention } from './jobs.ts';

const NOW = new Date('2026-06-01T12:00:00.000Z');
const DAY_MS = 86_400_000;
const MESSAGES = [{ role: 'user', content: 'My card is 4111 1111 1111 1111' }];

let tp: TestPlatform;
let agentOf: Map<string, string>;

beforeAll(async () => {
  tp = await usePlatform();
  agentOf = new Map();
});

async function orgWithAgent(retainDays: number | null): Promise<{ orgId: string; key: string }> {
  const org = await tp.createOrg();
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'gpt-4o-mini' } });
  const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'a', llm_id: model.body.id, enable_recording: true } });
  agentOf.set(org.orgId, agent.body.id);
  if (retainDays !== null) expect((await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings: { retain_days: retainDays } } })).status).toBe(200);
  return org;
}

/** A call with content, created at `createdAt`: messages, a summary, events that carry both, and a recording. */
async function callWithContent(orgId: string, createdAt: Date, status = 'completed'): Promise<string> {
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, status, created_at, started_at, ended_at, duration_seconds, messages,
                       ai_summary, analysis_summary, analysis_status, outcome, latency, recording_consent)
    values (${orgId}, ${agentOf.get(orgId)!}, 'web', ${status}, ${createdAt}, ${createdAt}, ${status === 'completed' ? createdAt : null}, 42,
            ${tp.sql.json(MESSAGES)}, 'Card 4111 1111 1111 1111 was updated.', 'Card 4111 1111 1111 1111 was updated.', 'completed',
            'card_updated', ${tp.sql.json({ e2e: { avg_ms: 900 } })}, 'none')
    returning id`;
  const id = row!.id as string;
  const upload = await fetch(`${tp.url}/v1/recordings/${id}/upload`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${tp.capability(id)}`, 'content-type': 'audio/wav' },
    body: new Uint8Array(128),
  });
  expect(upload.status).toBe(204);
  const events = [
    ['transcript.final', { call_id: id, messages: MESSAGES }],
    ['call.ended', { call_id: id, status: 'completed', duration_seconds: 42, outcome: 'card_updated', ai_summary: 'Card 4111 1111 1111 1111', analysis: { summary: 'Card 4111 1111 1111 1111', outcome: 'card_updated' } }],
    ['call.analyzed', { call_id: id, outcome: 'card_updated', ai_summary: 'Card 4111 1111 1111 1111' }],
  ] as const;
  for (const [type, payload] of events) {
    await tp.sql`insert into events (id, org_id, type, call_id, payload, created_at) values (gen_random_uuid(), ${orgId}, ${type}, ${id}, ${JSON.stringify(payload)}::text::json, ${createdAt})`;
  }
  return id;
}

const state = async (id: string) => {
  const [c] = await tp.sql`
    select messages, ai_summary, analysis_summary, recording_key, content_deleted_at, status, duration_seconds, outcome, latency, started_at
    from calls where id = ${id}`;
  const events = await tp.sql`select type, payload::text as payload from events where call_id = ${id} order by type`;
  return { call: c!, events: events as unknown as { type: string; payload: string }[] };
};

describe('retention job', () => {
  it('deletes the content of calls past retain_days, and nothing else', async () => {
    const org = await orgWithAgent(30);
    const untouched = await orgWithAgent(null);
    const cutoff = new Date(NOW.getTime() - 30 * DAY_MS);
    const past = await callWithContent(org.orgId, new Date(cutoff.getTime() - 1));
    const older = await callWithContent(org.orgId, new Date(cutoff.getTime() - 400 * DAY_MS), 'failed');
    const atCutoff = await callWithContent(org.orgId, cutoff);
    const inside = await callWithContent(org.orgId, new Date(cutoff.getTime() + 1000));
    const live = await callWithContent(org.orgId, new Date(cutoff.getTime() - 5 * DAY_MS), 'in_progress');
    const otherOrg = await callWithContent(untouched.orgId, new Date(cutoff.getTime() - 400 * DAY_MS));
    const files = new Map<string, string>();
    for (const id of [past, older, atCutoff, inside, live, otherOrg]) {
      const key = (await state(id)).call.recording_key as string;
      files.set(id, recordingFile(tp.platform.services, key));
      expect(existsSync(files.get(id)!)).toBe(true);
    }

    const result = await runRetention(tp.platform.services, NOW);
    expect(result).toEqual({ calls: 2, recordings: 2 });

    for (const id of [past, older]) {
      const { call, events } = await state(id);
      expect(call).toMatchObject({ messages: null, ai_summary: null, analysis_summary: null, recording_key: null, content_deleted_at: expect.any(Date) });
      // The metadata stays.
      expect(call).toMatchObject({ duration_seconds: 42, outcome: 'card_updated', latency: { e2e: { avg_ms: 900 } }, started_at: expect.any(Date) });
      expect(existsSync(files.get(id)!)).toBe(false);
      expect(events.map((e) => e.type)).toEqual(['call.analyzed', 'call.ended', 'call.recording.available', 'transcript.final']);
      for (const e of events) expect(e.payload, e.type).not.toContain('4111');
      expect(JSON.parse(events.find((e) => e.type === 'call.ended')!.payload)).toMatchObject({ ai_summary: null, analysis: { summary: null, outcome: 'card_updated' }, duration_seconds: 42 });
      expect(JSON.parse(events.find((e) => e.type === 'transcript.final')!.payload)).toMatchObject({ call_id: id, messages: [] });
      // The API shows the call without its content.
      const view = await tp.request('get', `/v1/calls/${id}`, { key: org.key });
      expect(view.body).toMatchObject({ id, messages: null, ai_summary: null, recording_url: null, duration_seconds: 42, outcome: 'card_updated' });
    }
    for (const id of [atCutoff, inside, live, otherOrg]) {
      const { call, events } = await state(id);
      expect(call, id).toMatchObject({ messages: MESSAGES, ai_summary: expect.stringContaining('4111'), recording_key: expect.any(String), content_deleted_at: null });
      expect(existsSync(files.get(id)!)).toBe(true);
      for (const e of events) if (e.type !== 'call.recording.available') expect(e.payload).toContain('4111');
    }

    // Audited, as the system, with exactly the calls it emptied.
    const audit = await tp.request('get', '/v1/audit-events?action=call.content_deleted', { key: org.key });
    expect(audit.body.items).toHaveLength(1);
    expect(audit.body.items[0]).toMatchObject({ actor_type: 'system', resource_type: 'org', resource_id: org.orgId, details: { retain_days: 30, recordings_deleted: 2 } });
    expect([...audit.body.items[0].details.calls].sort()).toEqual([past, older].sort());
    expect((await tp.request('get', '/v1/audit-events?action=call.content_deleted', { key: untouched.key })).body.items).toHaveLength(0);

    // A second run finds nothing more to do.
    expect(await runRetention(tp.platform.services, NOW)).toEqual({ calls: 0, recordings: 0 });
  });

  it('keeps a recording it cannot delete, and tries it again on the next run', async () => {
    const org = await orgWithAgent(1);
    const id = await callWithContent(org.orgId, new Date(NOW.getTime() - 2 * DAY_MS));
    // A key of a storage backend this deployment does not have (a bucket it moved away from).
    await tp.sql`update calls set recording_key = 's3://gone-bucket/recordings/x.wav' where id = ${id}`;
    expect(await runRetention(tp.platform.services, NOW)).toEqual({ calls: 1, recordings: 0 });
    const { call } = await state(id);
    expect(call).toMatchObject({ messages: null, ai_summary: null, recording_key: 's3://gone-bucket/recordings/x.wav', content_deleted_at: null });
    expect(await runRetention(tp.platform.services, NOW)).toMatchObject({ calls: 1 });
  });
});
