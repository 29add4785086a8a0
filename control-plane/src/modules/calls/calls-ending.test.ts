// Calls API: how calls end (stop, the reaper, a failed analysis, LiveKit's room webhooks), against a real LiveKit server.
import { describe, expect, it } from 'vitest';
import { AgentDispatchClient, RoomServiceClient } from 'livekit-server-sdk';
import { reapCall } from './jobs.ts';
import { NO_LATENCY, WORKER, createAgent, eventsOf, internal, org, stack, startWebCall, tp, until } from './calls.test-support.ts';

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
      messages: [
        { role: 'agent', content: 'Hello!' },
        { role: 'user', content: 'Bye.' },
      ],
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
      messages: [
        { role: 'agent', content: 'Hello!' },
        { role: 'user', content: 'Bye.' },
      ],
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
    await internal('post', `/calls/${id}/ended`, {
      seq: 4,
      end_reason: 'worker_shutdown',
      ended_at: new Date().toISOString(),
      duration_seconds: 30,
      messages: [],
    });
    expect((await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body).toMatchObject({
      duration_seconds: res.body.duration_seconds,
      messages: call.messages,
    });
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
    expect(call).toMatchObject({
      status: 'failed',
      end_reason: 'dispatch_timeout',
      error: { code: 'no_worker', message: expect.stringContaining('No media worker took the call') },
    });
    expect(await eventsOf(created.body.id)).toEqual(['call.failed']);
  });

  it('fails a call whose worker took it and left before its start report with worker_lost, not dispatch_timeout', async () => {
    // A worker redeemed the dispatch's ticket for the config (its agent may have greeted the caller), then died
    // before reporting the start.
    const created = await startWebCall();
    const id = created.body.id as string;
    const dispatches = await new AgentDispatchClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret).listDispatch(created.body.room_name);
    const { ticket } = JSON.parse(dispatches.find((d) => d.agentName === 'vap-agent')!.metadata) as { ticket: string };
    expect((await tp.request('get', `/internal/v1/calls/${id}/config`, { key: WORKER, headers: { 'x-call-capability': ticket } })).status).toBe(200);
    await new RoomServiceClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret).deleteRoom(created.body.room_name);
    expect(await reapCall(tp.platform.services, id)).toBe('reaped');
    const call = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
    expect(call).toMatchObject({ status: 'failed', end_reason: 'worker_lost', error: { code: 'worker_lost', message: expect.stringContaining('took the call but stopped') } });
    expect(await eventsOf(id)).toEqual(['call.failed']);
    const [failed] = await tp.sql`select payload from events where call_id = ${id} and type = 'call.failed'`;
    expect(failed!.payload).toMatchObject({ reason: 'agent_unavailable', error: { code: 'worker_lost' } });
  });

  it('leaves a young call alone while its room exists, before any worker joined', async () => {
    const created = await startWebCall();
    expect(await reapCall(tp.platform.services, created.body.id)).toBe('skipped');
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
