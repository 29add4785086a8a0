// Calls API (web slice) against a real LiveKit server, and the worker's side through the internal API.
import { beforeAll, describe, expect, it } from 'vitest';
import { AgentDispatchClient, RoomServiceClient, TokenVerifier } from 'livekit-server-sdk';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { useStack, type TestStack } from '../../../../test/support/stack.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../../../test/support/fake-openai.ts';
import { reapCall } from './jobs.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
/** An ended report's latency for a call without turns. */
const NO_LATENCY = Object.fromEntries(['llm_ttft', 'tts_ttfb', 'eou_delay', 'e2e'].map((k) => [k, { avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 }]));
let stack: TestStack;
let tp: TestPlatform;
let llm: FakeOpenAI;
let org: { orgId: string; key: string };
let agentId: string;

async function createAgent(o: { orgId: string; key: string }, extra: Record<string, unknown> = {}): Promise<string> {
  const model = await tp.request('post', '/v1/models', {
    key: o.key,
    body: { name: 'm', model: 'llama3', base_url: (extra.base_url as string) ?? llm.url, system_prompt: 'Help {{customer_name}} politely.' },
  });
  expect(model.status).toBe(201);
  const [row] = await tp.sql`
    insert into agents (org_id, name, llm_id, transcriber, tts, first_message, job_description, dynamic_variables, enable_recording)
    values (${o.orgId}, 'Ava', ${model.body.id}, ${tp.sql.json({ provider: 'local', model: 'pocketsphinx', language: 'en-US' })},
            ${tp.sql.json({ provider: 'local', model: 'espeak-ng', voice_id: 'en-us' })}, 'Hello {{customer_name}}!', 'You book dentist appointments.',
            ${tp.sql.json({ customer_name: 'friend' })}, ${(extra.enable_recording as boolean) ?? false})
    returning id`;
  return row!.id as string;
}

/** As a worker would: its token, and the call's capability from the dispatch. */
const internal = (method: string, path: string, body?: unknown) => {
  const callId = /^\/calls\/([^/]+)\//.exec(path)?.[1];
  const headers: Record<string, string> = callId ? { 'x-call-capability': tp.capability(callId) } : {};
  return tp.request(method, `/internal/v1${path}`, { key: WORKER, headers, ...(body !== undefined ? { body } : {}) });
};

async function startWebCall(o = org, body: Record<string, unknown> = {}) {
  return tp.request('post', '/v1/calls/web', { key: o.key, body: { agent_id: agentId, ...body } });
}

async function eventsOf(callId: string): Promise<string[]> {
  const rows = await tp.sql`select type from events where call_id = ${callId} order by seq`;
  return rows.map((r) => r.type as string);
}

async function until<T>(fn: () => Promise<T | null | undefined | false>, tries = 200): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('condition not reached');
}

beforeAll(async () => {
  stack = await useStack({});
  llm = await startFakeOpenAI({ ttftMs: 5 });
  llm.setResponder(() => ({ text: JSON.stringify({ summary: 'The caller booked a cleaning.', outcome: 'Appointment Booked' }) }));
  tp = await usePlatform({
    LIVEKIT_URL: stack.livekitUrl,
    LIVEKIT_API_KEY: stack.apiKey,
    LIVEKIT_API_SECRET: stack.apiSecret,
    SSRF_ALLOWLIST: '127.0.0.1,localhost',
    ANALYSIS_RETRY_LIMIT: 1,
    ANALYSIS_RETRY_DELAY_SECONDS: 1,
    STOP_REPORT_GRACE_SECONDS: 2,
  });
  org = await tp.createOrg();
  agentId = await createAgent(org);
});

describe('POST /v1/calls/web', () => {
  it('creates the call, the room with its metadata, the dispatch with the capability and a room-scoped token', async () => {
    const res = await startWebCall(org, { variables: { customer_name: 'Ada' }, metadata: { crm: '42' } });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      agent_id: agentId,
      type: 'web',
      status: 'initiated',
      room_name: `call-${res.body.id}`,
      server_url: stack.livekitUrl,
      participant_token: expect.any(String),
      created_at: expect.any(String),
    });
    const rooms = new RoomServiceClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
    const [room] = await rooms.listRooms([res.body.room_name]);
    expect(JSON.parse(room!.metadata)).toEqual({ call_id: res.body.id });
    const dispatches = await new AgentDispatchClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret).listDispatch(res.body.room_name);
    // The server also lists its implicit dispatch for unnamed workers (agentName ''); ours is the named one.
    const ours = dispatches.filter((d) => d.agentName === 'vap-agent');
    expect(ours).toHaveLength(1);
    // The dispatch (seen by the worker only) carries the call's capability; the room's metadata (seen by the
    // caller's browser too) does not.
    const dispatched = JSON.parse(ours[0]!.metadata);
    expect(dispatched).toEqual({ call_id: res.body.id, capability: expect.stringMatching(/^vcap1\.\d+\./) });
    const cfg = await tp.request('get', `/internal/v1/calls/${res.body.id}/config`, { key: WORKER, headers: { 'x-call-capability': dispatched.capability } });
    expect(cfg.status).toBe(200);
    const claims = await new TokenVerifier(stack.apiKey, stack.apiSecret).verify(res.body.participant_token);
    expect(claims.video).toMatchObject({ room: res.body.room_name, roomJoin: true });
    expect(claims.video?.roomAdmin).toBeFalsy();
    expect(claims.exp! - claims.nbf!).toBeLessThanOrEqual(600);
  });

  it('422 for a malformed agent id and bad overrides; 404 for an agent that does not exist', async () => {
    const bad = await tp.request('post', '/v1/calls/web', { key: org.key, body: { agent_id: 'nope' } });
    expect(bad.body).toEqual({ detail: [{ type: 'uuid_parsing', loc: ['body', 'agent_id'], msg: 'Input should be a valid UUID', input: 'nope' }] });
    const unknown = await startWebCall(org, { agent_id: '00000000-0000-4000-8000-000000000000' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ type: 'not_found', detail: 'Agent not found', request_id: expect.any(String) });
    const voice = await startWebCall(org, { overrides: { tts: { provider: 'openai', voice_id: 'no-such-voice' } } });
    expect(voice.status).toBe(422);
    expect(voice.body.detail[0].loc).toEqual(['body', 'overrides', 'tts', 'voice_id']);
    const over = await startWebCall(org, { overrides: { max_duration_seconds: 0, colour: 'red' } });
    expect(over.status).toBe(422);
    expect(over.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(
      expect.arrayContaining([['body', 'overrides', 'max_duration_seconds'], ['body', 'overrides', 'colour']]),
    );
  });

  it("another org's agent is not found", async () => {
    const other = await tp.createOrg();
    const res = await startWebCall(other);
    expect(res.status).toBe(404);
    expect(res.body.type).toBe('not_found');
  });
});

describe('the call lifecycle through the internal API', () => {
  it("an overridden transcriber without a language speaks the agent's language, not en-US", async () => {
    const french = await createAgent(org);
    await tp.sql`update agents set language = 'fr' where id = ${french}`;
    const created = await startWebCall(org, { agent_id: french, overrides: { transcriber: { provider: 'deepgram' } } });
    expect(created.status).toBe(201);
    const cfg = await internal('get', `/calls/${created.body.id}/config`);
    expect(cfg.body.agent.transcriber).toEqual({ provider: 'deepgram', model: 'nova-3', language: 'fr' });
    // An overridden language wins over the agent's.
    const german = await startWebCall(org, { agent_id: french, overrides: { language: 'de', transcriber: { provider: 'deepgram' } } });
    expect((await internal('get', `/calls/${german.body.id}/config`)).body.agent.transcriber.language).toBe('de');
  });

  it("turn_taking reaches the worker's config: the agent's, an override merged over the defaults, or responsiveness's delays", async () => {
    const agent = await createAgent(org);
    await tp.request('patch', `/v1/agents/${agent}`, { key: org.key, body: { turn_taking: { endpointing: 'dynamic', min_delay_ms: 120, max_delay_ms: 1700 } } });
    const plain = await startWebCall(org, { agent_id: agent });
    expect((await internal('get', `/calls/${plain.body.id}/config`)).body.agent.turn_taking).toEqual({
      detection: 'transcript', endpointing: 'dynamic', min_delay_ms: 120, max_delay_ms: 1700, preemptive_generation: true, ignore_backchannels: true, barge_in: 'pause',
    });
    const over = await startWebCall(org, { agent_id: agent, overrides: { turn_taking: { detection: 'model', ignore_backchannels: false, barge_in: 'words' } } });
    expect(over.status).toBe(201);
    expect((await internal('get', `/calls/${over.body.id}/config`)).body.agent.turn_taking).toEqual({
      detection: 'model', endpointing: 'fixed', min_delay_ms: 1000, max_delay_ms: 1500, preemptive_generation: true, ignore_backchannels: false, barge_in: 'words',
    });
    const coarse = await startWebCall(org, { agent_id: agent, overrides: { responsiveness: 1 } });
    expect((await internal('get', `/calls/${coarse.body.id}/config`)).body.agent.turn_taking).toMatchObject({ endpointing: 'dynamic', min_delay_ms: 150, max_delay_ms: 1000 });
    const bad = await startWebCall(org, { agent_id: agent, overrides: { turn_taking: { min_delay_ms: 900, max_delay_ms: 300 } } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'overrides', 'turn_taking', 'max_delay_ms'] });
  });

  it('config, started, partial, ended, analysis: fields and events in order', async () => {
    const created = await startWebCall(org, { variables: { customer_name: 'Ada' }, overrides: { first_message: 'Hi {{customer_name}}, Ava here.' } });
    const id = created.body.id as string;

    expect((await tp.request('get', `/internal/v1/calls/${id}/config`, { key: org.key })).status).toBe(401);
    const cfg = await internal('get', `/calls/${id}/config`);
    expect(cfg.status).toBe(200);
    expect(cfg.body.prompt).toBe('# Role\nYou book dentist appointments.\n\nHelp Ada politely.');
    expect(cfg.body.agent.first_message).toBe('Hi {{customer_name}}, Ava here.');
    expect(cfg.body.call).toMatchObject({ id, type: 'web', variables: { customer_name: 'Ada' }, voicemail_detection: false });
    expect(cfg.body.llm).toMatchObject({ provider: 'openai', model: 'llama3', base_url: llm.url });
    expect(cfg.body.recording).toEqual({ enabled: false });

    expect((await internal('post', `/calls/${id}/started`, { seq: 1, started_at: new Date().toISOString() })).body).toEqual({ ok: true, duplicate: false });
    expect((await internal('post', `/calls/${id}/started`, { seq: 1, started_at: new Date().toISOString() })).body).toEqual({ ok: true, duplicate: true });
    let call = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
    const none = { avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 };
    expect(call).toMatchObject({ status: 'in_progress', messages: null, latency: { llm_ttft: none, tts_ttfb: none, eou_delay: none } });

    const partial = [{ role: 'agent', content: 'Hi Ada, Ava here.' }];
    expect((await internal('post', `/calls/${id}/transcript`, { seq: 2, messages: partial })).status).toBe(200);

    const stat = { avg_ms: 300, p50_ms: 290, min_ms: 250, max_ms: 400, samples: 3 };
    const ended = {
      seq: 3,
      end_reason: 'user_hangup',
      ended_at: new Date().toISOString(),
      duration_seconds: 90,
      messages: [...partial, { role: 'user', content: 'I need a cleaning on Tuesday.' }, { role: 'agent', content: 'Booked for Tuesday.' }],
      usage: { stt_seconds: 40, llm_prompt_tokens: 300, llm_completion_tokens: 40, tts_characters: 120 },
      latency: { llm_ttft: stat, tts_ttfb: stat, eou_delay: stat, e2e: stat },
    };
    expect((await internal('post', `/calls/${id}/ended`, ended)).body).toEqual({ ok: true, duplicate: false });
    expect((await internal('post', `/calls/${id}/ended`, ended)).body).toEqual({ ok: true, duplicate: true });
    // A late partial after the end changes nothing.
    await internal('post', `/calls/${id}/transcript`, { seq: 4, messages: [] });

    call = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
    expect(call).toMatchObject({
      status: 'completed',
      end_reason: 'user_hangup',
      duration_seconds: 90,
      credits_used: 1.5,
      metadata: {},
      variables: { customer_name: 'Ada' },
    });
    expect(call.messages).toHaveLength(3);
    expect(call.transcript).toEqual(call.messages);
    expect(call.latency.llm_ttft).toEqual(stat);

    const analysed = await until(async () => {
      const c = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
      return c.analysis.status === 'completed' ? c : null;
    });
    expect(analysed).toMatchObject({
      outcome: 'appointment_booked',
      ai_summary: 'The caller booked a cleaning.',
      analysis: { outcome: 'appointment_booked', summary: 'The caller booked a cleaning.', status: 'completed', error: null },
    });
    expect(await eventsOf(id)).toEqual(['call.started', 'transcript.partial', 'call.ended', 'transcript.final', 'call.analyzed']);
    // call.ended waited for the analysis: it carries the outcome and summary.
    const [endedEvent] = await tp.sql`select payload from events where call_id = ${id} and type = 'call.ended'`;
    expect(endedEvent!.payload).toMatchObject({ outcome: 'appointment_booked', ai_summary: 'The caller booked a cleaning.', analysis: { summary: 'The caller booked a cleaning.' } });
  });

  it('an outcome set by PATCH is stored exactly and never overwritten by the analysis', async () => {
    const created = await startWebCall();
    const id = created.body.id as string;
    const upper = await tp.request('patch', `/v1/calls/${id}`, { key: org.key, body: { outcome: 'Booked' } });
    expect(upper.status).toBe(422);
    expect(upper.body.detail[0]).toMatchObject({ type: 'string_pattern_mismatch', loc: ['body', 'outcome'] });
    const patched = await tp.request('patch', `/v1/calls/${id}`, { key: org.key, body: { outcome: 'vip_lead' } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ outcome: 'vip_lead', analysis: { outcome: 'vip_lead' } });
    await internal('post', `/calls/${id}/started`, { seq: 1, started_at: new Date().toISOString() });
    await internal('post', `/calls/${id}/ended`, {
      seq: 2,
      end_reason: 'agent_hangup',
      ended_at: new Date().toISOString(),
      duration_seconds: 10,
      messages: [{ role: 'user', content: 'hello' }],
      usage: { stt_seconds: 1, llm_prompt_tokens: 1, llm_completion_tokens: 1, tts_characters: 1 },
      latency: NO_LATENCY,
    });
    const done = await until(async () => {
      const c = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
      return c.analysis.status === 'completed' ? c : null;
    });
    expect(done.outcome).toBe('vip_lead');
    expect(done.ai_summary).toBe('The caller booked a cleaning.');
  });

  it('rejects impossible reports: started after the end', async () => {
    const created = await startWebCall();
    const id = created.body.id as string;
    await tp.request('post', `/v1/calls/${id}/stop`, { key: org.key });
    const res = await internal('post', `/calls/${id}/started`, { seq: 1, started_at: new Date().toISOString() });
    expect(res.status).toBe(409);
    expect((await internal('get', `/calls/${id}/config`)).status).toBe(409);
  });
});

describe('POST /v1/calls/{id}/stop', () => {
  it('completes a call no worker started at once, closes the room, and is idempotent', async () => {
    const created = await startWebCall();
    const id = created.body.id as string;
    const res = await tp.request('post', `/v1/calls/${id}/stop`, { key: org.key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'completed', end_reason: 'api_stop', duration_seconds: 0, messages: [] });
    const rooms = new RoomServiceClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
    expect(await rooms.listRooms([created.body.room_name])).toEqual([]);
    const again = await tp.request('post', `/v1/calls/${id}/stop`, { key: org.key });
    expect(again.status).toBe(200);
    // Nothing changed but the post-call analysis, which runs on its own after the end.
    const { analysis: _a, ai_summary: _s, outcome: _o, ...rest } = again.body;
    const { analysis: _a2, ai_summary: _s2, outcome: _o2, ...first } = res.body;
    expect(rest).toEqual(first);
    // call.ended waits for the analysis (no conversation: no model needed), then the three go in order.
    const events = await until(async () => {
      const e = await eventsOf(id);
      return e.length >= 3 ? e : null;
    });
    expect(events).toEqual(['call.ended', 'transcript.final', 'call.analyzed']);
    const [endedEvent] = await tp.sql`select payload from events where call_id = ${id} and type = 'call.ended'`;
    expect(endedEvent!.payload).toMatchObject({ status: 'completed', outcome: 'no_conversation', ai_summary: expect.any(String) });
  });

  it('on a call in progress ends it at once with api_stop; the late worker report only brings the conversation', async () => {
    const created = await startWebCall();
    const id = created.body.id as string;
    const startedAt = new Date(Date.now() - 7000).toISOString();
    await internal('post', `/calls/${id}/started`, { seq: 1, started_at: startedAt });
    await internal('post', `/calls/${id}/transcript`, { seq: 2, messages: [{ role: 'agent', content: 'Hello!' }] });
    const before = Date.now();
    const res = await tp.request('post', `/v1/calls/${id}/stop`, { key: org.key });
    const after = Date.now();
    // Completed by the stop itself: the end is the moment of the stop, not the worker's later report. The
    // duration is the start to that moment (7 s and however long this loaded machine took to get here).
    const endedAt = Date.parse(res.body.ended_at);
    expect(res.body).toMatchObject({ status: 'completed', end_reason: 'api_stop', duration_seconds: Math.round((endedAt - Date.parse(startedAt)) / 1000) });
    expect(res.body.duration_seconds).toBeGreaterThanOrEqual(7);
    expect(endedAt).toBeGreaterThanOrEqual(before - 1000);
    expect(endedAt).toBeLessThanOrEqual(after + 1000);
    // The call is completed, but call.ended waits for the conversation's analysis (the worker's report first).
    expect(await eventsOf(id)).toEqual(['call.started', 'transcript.partial']);
    // call.started is dated when the call connected (the worker's started_at), not when the report came in.
    const [started] = await tp.sql`select payload from events where call_id = ${id} and type = 'call.started'`;
    expect(JSON.parse(JSON.stringify(started!.payload)).created_at).toBe(startedAt);
    // The worker reports 15 s later (the room's departure timeout): status, times and duration stay.
    await internal('post', `/calls/${id}/ended`, {
      seq: 3,
      end_reason: 'worker_shutdown',
      ended_at: new Date(after + 15_000).toISOString(),
      duration_seconds: 22,
      messages: [{ role: 'agent', content: 'Hello!' }, { role: 'user', content: 'Bye.' }],
      usage: { stt_seconds: 1, llm_prompt_tokens: 1, llm_completion_tokens: 1, tts_characters: 1 },
      latency: NO_LATENCY,
    });
    const call = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
    expect(call).toMatchObject({
      status: 'completed',
      end_reason: 'api_stop',
      ended_at: res.body.ended_at,
      duration_seconds: res.body.duration_seconds,
      credits_used: res.body.duration_seconds / 60,
      messages: [{ role: 'agent', content: 'Hello!' }, { role: 'user', content: 'Bye.' }],
    });
    // Once the analysis of the reported conversation is done: call.ended with its result, then the rest.
    const events = await until(async () => {
      const e = await eventsOf(id);
      return e.includes('call.ended') ? e : null;
    });
    expect(events).toEqual(['call.started', 'transcript.partial', 'call.ended', 'transcript.final', 'call.analyzed']);
    const [final] = await tp.sql`select payload from events where call_id = ${id} and type = 'transcript.final'`;
    expect(JSON.parse(JSON.stringify(final!.payload)).messages).toHaveLength(2);
    const [endedEvent] = await tp.sql`select payload from events where call_id = ${id} and type = 'call.ended'`;
    expect(endedEvent!.payload).toMatchObject({ status: 'completed', outcome: 'appointment_booked', ai_summary: 'The caller booked a cleaning.' });
    // Dated when the call ended (the stop), not when it was sent.
    expect(JSON.parse(JSON.stringify(endedEvent!.payload)).created_at).toBe(res.body.ended_at);
    // A repeated report changes nothing more.
    await internal('post', `/calls/${id}/ended`, { seq: 4, end_reason: 'worker_shutdown', ended_at: new Date().toISOString(), duration_seconds: 30, messages: [] });
    expect((await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body).toMatchObject({ duration_seconds: res.body.duration_seconds, messages: call.messages });
    expect((await eventsOf(id)).filter((e) => e === 'transcript.final')).toHaveLength(1);
  });

  it('without a worker report, the conversation so far becomes final after the grace period', async () => {
    const created = await startWebCall();
    const id = created.body.id as string;
    await internal('post', `/calls/${id}/started`, { seq: 1, started_at: new Date().toISOString() });
    await internal('post', `/calls/${id}/transcript`, { seq: 2, messages: [{ role: 'agent', content: 'Hello!' }] });
    const res = await tp.request('post', `/v1/calls/${id}/stop`, { key: org.key });
    expect(res.body.status).toBe('completed');
    const events = await until(async () => {
      const e = await eventsOf(id);
      return e.includes('transcript.final') ? e : null;
    }, 600);
    expect(events.slice(0, 4)).toEqual(['call.started', 'transcript.partial', 'call.ended', 'transcript.final']);
    expect((await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body.messages).toEqual([{ role: 'agent', content: 'Hello!' }]);
  });
});

describe('the reaper', () => {
  it('finishes an in-progress call whose room is gone with worker_lost', async () => {
    const created = await startWebCall();
    const id = created.body.id as string;
    await internal('post', `/calls/${id}/started`, { seq: 1, started_at: new Date().toISOString() });
    await internal('post', `/calls/${id}/transcript`, { seq: 2, messages: [{ role: 'agent', content: 'Hello there' }] });
    await new RoomServiceClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret).deleteRoom(created.body.room_name);
    expect(await reapCall(tp.platform.services, id)).toBe('reaped');
    const call = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
    expect(call).toMatchObject({ status: 'completed', end_reason: 'worker_lost', messages: [{ role: 'agent', content: 'Hello there' }] });
  });

  it('fails a call no worker picked up once its room is gone', async () => {
    const created = await startWebCall();
    await new RoomServiceClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret).deleteRoom(created.body.room_name);
    expect(await reapCall(tp.platform.services, created.body.id)).toBe('reaped');
    const call = (await tp.request('get', `/v1/calls/${created.body.id}`, { key: org.key })).body;
    expect(call).toMatchObject({ status: 'failed', end_reason: 'dispatch_timeout' });
    expect(await eventsOf(created.body.id)).toEqual(['call.failed']);
  });

  it('leaves a young call alone while its room exists, before any worker joined', async () => {
    const created = await startWebCall();
    expect(await reapCall(tp.platform.services, created.body.id)).toBe('skipped');
  });
});

describe('listing and usage', () => {
  it('lists with filters', async () => {
    const all = await tp.request('get', `/v1/calls?agent_id=${agentId}&type=web&limit=2`, { key: org.key });
    expect(all.status).toBe(200);
    expect(all.body.items).toHaveLength(2);
    expect(all.body.total).toBeGreaterThan(2);
    const completed = await tp.request('get', '/v1/calls?status=completed', { key: org.key });
    expect(completed.body.items.every((c: { status: string }) => c.status === 'completed')).toBe(true);
    const none = await tp.request('get', `/v1/calls?created_after=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, { key: org.key });
    expect(none.body).toMatchObject({ items: [], total: 0 });
    const bad = await tp.request('get', '/v1/calls?status=ringing', { key: org.key });
    expect(bad.status).toBe(422);
  });

  it('enforces max_calls_per_day atomically under 30 concurrent creations', async () => {
    const o = await tp.createOrg('capped');
    await tp.sql`update orgs set max_calls_per_day = 5 where id = ${o.orgId}`;
    const agent = await createAgent(o);
    const results = await Promise.all(Array.from({ length: 30 }, () => tp.request('post', '/v1/calls/web', { key: o.key, body: { agent_id: agent } })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(25);
    const limited = results.find((r) => r.status === 429)!;
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(86400);
    expect(limited.body).toMatchObject({ type: 'rate_limited', detail: 'Daily call limit of 5 reached; it resets at 00:00 UTC', limit: 'max_calls_per_day' });
    const usage = await tp.request('get', '/v1/usage', { key: o.key });
    expect(usage.body).toMatchObject({ calls_made_today: 5, max_calls_per_day: 5, calls_remaining_today: 0, calls_this_month: 5, kb_token_budget: expect.any(Number) });
    expect(new Date(usage.body.period_start).getUTCDate()).toBe(1);
  });

  it('enforces max_concurrent_calls atomically under 50 concurrent creations', async () => {
    const o = await tp.createOrg('concurrency-capped');
    await tp.sql`update orgs set max_concurrent_calls = 5 where id = ${o.orgId}`;
    const agent = await createAgent(o);
    const results = await Promise.all(Array.from({ length: 50 }, () => tp.request('post', '/v1/calls/web', { key: o.key, body: { agent_id: agent } })));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(45);
    const limited = results.find((r) => r.status === 429)!;
    expect(limited.headers.get('retry-after')).toBe('5');
    expect(limited.body).toMatchObject({
      type: 'rate_limited',
      reason: 'concurrency',
      limit: 'max_concurrent_calls',
      limit_value: 5,
      detail: 'Concurrent call limit of 5 reached; retry when a call ends',
    });
    // Refusals for concurrency do not use up the daily allowance.
    const usage = await tp.request('get', '/v1/usage', { key: o.key });
    expect(usage.body).toMatchObject({ calls_made_today: 5 });
    // Ending one live call frees one slot.
    const admitted = results.find((r) => r.status === 201)!;
    const stopped = await tp.request('post', `/v1/calls/${admitted.body.id}/stop`, { key: o.key });
    expect(stopped.status).toBe(200);
    const again = await Promise.all(Array.from({ length: 3 }, () => tp.request('post', '/v1/calls/web', { key: o.key, body: { agent_id: agent } })));
    expect(again.map((r) => r.status).sort()).toEqual([201, 429, 429]);
  });
});

describe('recordings', () => {
  it("upload with the call's capability, then a signed download that refuses tampering and expiry", async () => {
    const recAgent = await createAgent(org, { enable_recording: true });
    const created = await tp.request('post', '/v1/calls/web', { key: org.key, body: { agent_id: recAgent } });
    const id = created.body.id as string;
    const cfg = await internal('get', `/calls/${id}/config`);
    expect(cfg.body.recording).toEqual({ enabled: true, upload_url: `${tp.url}/v1/recordings/${id}/upload` });
    const wav = Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4000, 1)]);
    const put = (authorization?: string) =>
      fetch(cfg.body.recording.upload_url, { method: 'PUT', body: wav, headers: { 'content-type': 'audio/wav', ...(authorization ? { authorization } : {}) } });
    expect((await put()).status).toBe(403);
    expect((await put(`Bearer ${tp.capability(id).slice(0, -2)}AA`)).status).toBe(403);
    const up = await put(`Bearer ${tp.capability(id)}`);
    expect(up.status).toBe(204);
    expect(await eventsOf(id)).toContain('call.recording.available');

    const call = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
    const url = new URL(call.recording_url);
    expect(Number(url.searchParams.get('expires')) - Date.now() / 1000).toBeGreaterThan(4 * 3600 - 60);
    const got = await fetch(call.recording_url);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await got.arrayBuffer())).toEqual(wav);

    const tampered = new URL(call.recording_url);
    tampered.searchParams.set('expires', String(Number(tampered.searchParams.get('expires')) + 10));
    const bad = await fetch(tampered);
    expect(bad.status).toBe(403);
    expect(((await bad.json()) as { type: string }).type).toBe('forbidden');
    const { signedUrl } = await import('./recordings.ts');
    const expired = signedUrl(tp.platform.services, 'recording-read', id, 60, Date.now() - 3600_000);
    expect((await fetch(expired)).status).toBe(403);
    // A URL signed for another call does not open this one.
    const other = new URL(signedUrl(tp.platform.services, 'recording-read', '00000000-0000-4000-8000-000000000000', 600));
    const swapped = new URL(call.recording_url);
    swapped.searchParams.set('signature', other.searchParams.get('signature')!);
    swapped.searchParams.set('expires', other.searchParams.get('expires')!);
    expect((await fetch(swapped)).status).toBe(403);
  });
});

describe('post-call analysis failure', () => {
  it('retries, then records the failure on the call without crashing', async () => {
    // Nothing listens on port 9: connection refused, as with an LLM that is down.
    const downAgent = await createAgent(org, { base_url: 'http://127.0.0.1:9/v1' });
    const created = await tp.request('post', '/v1/calls/web', { key: org.key, body: { agent_id: downAgent } });
    const id = created.body.id as string;
    await internal('post', `/calls/${id}/started`, { seq: 1, started_at: new Date().toISOString() });
    await internal('post', `/calls/${id}/ended`, {
      seq: 2,
      end_reason: 'user_hangup',
      ended_at: new Date().toISOString(),
      duration_seconds: 3,
      messages: [{ role: 'user', content: 'hi' }],
      usage: { stt_seconds: 1, llm_prompt_tokens: 1, llm_completion_tokens: 1, tts_characters: 1 },
      latency: NO_LATENCY,
    });
    const failed = await until(async () => {
      const c = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
      return c.analysis.status === 'failed' ? c : null;
    }, 600);
    expect(failed.analysis.error).toBe('analysis failed: connection refused');
    expect(failed.ai_summary).toBeNull();
    // No analysis will come: call.ended went when it failed for good (or at the bound), with nulls.
    expect(await eventsOf(id)).toEqual(['call.started', 'call.ended', 'transcript.final']);
    const [endedEvent] = await tp.sql`select payload from events where call_id = ${id} and type = 'call.ended'`;
    expect(endedEvent!.payload).toMatchObject({ outcome: null, ai_summary: null });
    const attempts = await tp.sql`select retry_count from pgboss.job where name = 'calls.analyze' and data->>'call_id' = ${id}`;
    expect(attempts[0]!.retry_count).toBe(1);
  }, 90_000);
});

describe('LiveKit webhooks', () => {
  it('rejects an unsigned body and schedules a check when a room closes', async () => {
    const unsigned = await tp.request('post', '/internal/livekit/webhook', { body: { event: 'room_finished' } });
    expect(unsigned.status).toBe(401);
    const created = await startWebCall();
    const { WebhookEvent } = await import('@livekit/protocol');
    const { AccessToken } = await import('livekit-server-sdk');
    const { createHash } = await import('node:crypto');
    const body = new WebhookEvent({ event: 'room_finished', room: { name: created.body.room_name } }).toJsonString();
    const at = new AccessToken(stack.apiKey, stack.apiSecret);
    at.sha256 = createHash('sha256').update(body).digest('base64');
    const res = await tp.request('post', '/internal/livekit/webhook', {
      rawBody: body,
      headers: { 'content-type': 'application/webhook+json', authorization: await at.toJwt() },
    });
    expect(res.status).toBe(200);
    const jobs = await tp.sql`select data from pgboss.job where name = 'calls.reap'`;
    expect(jobs.map((j) => (j.data as { call_id: string }).call_id)).toContain(created.body.id);
  });
});
