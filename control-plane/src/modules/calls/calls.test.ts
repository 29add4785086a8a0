// Calls API (web slice) against a real LiveKit server, and the worker's side through the internal API.
import { describe, expect, it } from 'vitest';
import { AgentDispatchClient, RoomServiceClient, TokenVerifier } from 'livekit-server-sdk';
import { NO_LATENCY, WORKER, agentId, createAgent, eventsOf, internal, llm, org, stack, startWebCall, tp, until } from './calls.test-support.ts';

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
    // The dispatch (seen by the worker, and by anything holding the LiveKit key) carries the call's ticket, which
    // opens its config once, with the capability in it; the room's metadata (seen by the caller's browser too) neither.
    const dispatched = JSON.parse(ours[0]!.metadata);
    expect(dispatched).toEqual({ call_id: res.body.id, ticket: expect.stringMatching(/^vtkt1\.\d+\./) });
    const cfg = await tp.request('get', `/internal/v1/calls/${res.body.id}/config`, { key: WORKER, headers: { 'x-call-capability': dispatched.ticket } });
    expect(cfg.status).toBe(200);
    expect(cfg.body.capability).toMatch(/^vcap1\.\d+\./);
    const claims = await new TokenVerifier(stack.apiKey, stack.apiSecret).verify(res.body.participant_token);
    expect(claims.video).toMatchObject({ room: res.body.room_name, roomJoin: true });
    expect(claims.video?.roomAdmin).toBeFalsy();
    expect(claims.exp! - claims.nbf!).toBeLessThanOrEqual(600);
  });

  it('422 for a malformed agent id and bad overrides; an agent that does not exist is the same 422 as on POST /v1/calls', async () => {
    const bad = await tp.request('post', '/v1/calls/web', { key: org.key, body: { agent_id: 'nope' } });
    expect(bad.body).toEqual({ detail: [{ type: 'uuid_parsing', loc: ['body', 'agent_id'], msg: 'Input should be a valid UUID', input: 'nope' }] });
    const missing = '00000000-0000-4000-8000-000000000000';
    const unknown = await startWebCall(org, { agent_id: missing });
    expect(unknown.status).toBe(422);
    const expected = { detail: [{ type: 'reference_not_found', loc: ['body', 'agent_id'], msg: 'No agent with this id in your organisation', input: missing }] };
    expect(unknown.body).toEqual(expected);
    const outbound = await tp.request('post', '/v1/calls', { key: org.key, body: { agent_id: missing, to_number: '+14155550123' } });
    expect({ status: outbound.status, body: outbound.body }).toEqual({ status: 422, body: expected });
    const voice = await startWebCall(org, { overrides: { tts: { provider: 'openai', voice_id: 'no-such-voice' } } });
    expect(voice.status).toBe(422);
    expect(voice.body.detail[0].loc).toEqual(['body', 'overrides', 'tts', 'voice_id']);
    const over = await startWebCall(org, { overrides: { max_duration_seconds: 0, colour: 'red' } });
    expect(over.status).toBe(422);
    expect(over.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(
      expect.arrayContaining([
        ['body', 'overrides', 'max_duration_seconds'],
        ['body', 'overrides', 'colour'],
      ]),
    );
  });

  it("another org's agent is not found", async () => {
    const other = await tp.createOrg();
    const res = await startWebCall(other);
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ type: 'reference_not_found', loc: ['body', 'agent_id'] });
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
    await tp.request('patch', `/v1/agents/${agent}`, {
      key: org.key,
      body: { turn_taking: { endpointing: 'dynamic', min_delay_ms: 120, max_delay_ms: 1700 } },
    });
    const plain = await startWebCall(org, { agent_id: agent });
    expect((await internal('get', `/calls/${plain.body.id}/config`)).body.agent.turn_taking).toEqual({
      detection: 'transcript',
      endpointing: 'dynamic',
      min_delay_ms: 120,
      max_delay_ms: 1700,
      preemptive_generation: true,
      ignore_backchannels: true,
      barge_in: 'pause',
    });
    const over = await startWebCall(org, {
      agent_id: agent,
      overrides: { turn_taking: { detection: 'model', ignore_backchannels: false, barge_in: 'words' } },
    });
    expect(over.status).toBe(201);
    expect((await internal('get', `/calls/${over.body.id}/config`)).body.agent.turn_taking).toEqual({
      detection: 'model',
      endpointing: 'fixed',
      min_delay_ms: 1700,
      max_delay_ms: 3000,
      preemptive_generation: true,
      ignore_backchannels: false,
      barge_in: 'words',
    });
    const coarse = await startWebCall(org, { agent_id: agent, overrides: { responsiveness: 1 } });
    expect((await internal('get', `/calls/${coarse.body.id}/config`)).body.agent.turn_taking).toMatchObject({
      endpointing: 'dynamic',
      min_delay_ms: 150,
      max_delay_ms: 1000,
    });
    const bad = await startWebCall(org, { agent_id: agent, overrides: { turn_taking: { min_delay_ms: 900, max_delay_ms: 300 } } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'overrides', 'turn_taking', 'max_delay_ms'] });
    // detection 'stt' needs Flux, the call's (overridden) transcriber or the agent's.
    const nova = await startWebCall(org, { agent_id: agent, overrides: { turn_taking: { detection: 'stt' } } });
    expect(nova.status).toBe(422);
    expect(nova.body.detail).toEqual([expect.objectContaining({ type: 'value_error', loc: ['body', 'overrides', 'turn_taking', 'detection'], input: 'stt' })]);
    const flux = await startWebCall(org, {
      agent_id: agent,
      overrides: { transcriber: { provider: 'deepgram', model: 'flux-general-en' }, turn_taking: { detection: 'stt' } },
    });
    expect(flux.status).toBe(201);
    expect((await internal('get', `/calls/${flux.body.id}/config`)).body.agent).toMatchObject({
      transcriber: { provider: 'deepgram', model: 'flux-general-en' },
      turn_taking: { detection: 'stt', min_delay_ms: 0, max_delay_ms: 5000 },
    });
    const fluxAgent = await createAgent(org);
    await tp.request('patch', `/v1/agents/${fluxAgent}`, {
      key: org.key,
      body: { transcriber: { provider: 'deepgram', model: 'flux-general-en' }, turn_taking: { detection: 'stt' } },
    });
    const swapped = await startWebCall(org, { agent_id: fluxAgent, overrides: { transcriber: { provider: 'deepgram' } } });
    expect(swapped.status).toBe(422);
    expect(swapped.body.detail).toEqual([
      expect.objectContaining({ type: 'value_error', loc: ['body', 'overrides', 'transcriber', 'model'], input: 'nova-3' }),
    ]);
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
    // In progress: latency is not yet measured (null), not a measurement of zero.
    expect(call).toMatchObject({ status: 'in_progress', messages: null, latency: null });

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
    expect(endedEvent!.payload).toMatchObject({
      outcome: 'appointment_booked',
      ai_summary: 'The caller booked a cleaning.',
      analysis: { summary: 'The caller booked a cleaning.' },
    });
  });

  it('an outcome set by PATCH is stored exactly and never overwritten by the analysis', async () => {
    const created = await startWebCall();
    const id = created.body.id as string;
    const upper = await tp.request('patch', `/v1/calls/${id}`, { key: org.key, body: { outcome: 'Booked' } });
    expect(upper.status).toBe(422);
    expect(upper.body.detail[0]).toMatchObject({ type: 'string_pattern_mismatch', loc: ['body', 'outcome'] });
    // Lowercase or lowercase_underscore, digits included (tier1, callback_in_2_days); still no capitals or spaces.
    for (const label of ['tier1', 'callback_in_2_days', '2nd_try']) {
      const res = await tp.request('patch', `/v1/calls/${id}`, { key: org.key, body: { outcome: label } });
      expect(res.status, label).toBe(200);
      expect(res.body.outcome).toBe(label);
    }
    for (const label of ['Tier1', 'tier 1', 'tier__1', '_tier1', 'tier1_']) {
      expect((await tp.request('patch', `/v1/calls/${id}`, { key: org.key, body: { outcome: label } })).status, label).toBe(422);
    }
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

  it("a worker that cannot build the agent fails the call at once: end_reason, error, call.failed, and the room's metadata", async () => {
    const created = await startWebCall();
    const id = created.body.id as string;
    const error = { code: 'provider_key_missing', message: "The agent's model uses OpenAI and there is no openai key: add it", field: 'llm_id' };
    const failed = { seq: 1, end_reason: 'configuration_error', error };
    expect((await internal('post', `/calls/${id}/failed`, failed)).body).toEqual({ ok: true, duplicate: false });
    expect((await internal('post', `/calls/${id}/failed`, failed)).body).toEqual({ ok: true, duplicate: true });
    const call = (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;
    expect(call).toMatchObject({
      status: 'failed',
      end_reason: 'configuration_error',
      duration_seconds: 0,
      error: { code: error.code, message: error.message },
    });
    const [event] = await tp.sql`select payload from events where call_id = ${id} and type = 'call.failed'`;
    expect(event!.payload).toMatchObject({ call_id: id, reason: 'configuration_error', error: { code: error.code, message: error.message } });
    // The page in the room reads it from the room's metadata (the SDK's error event).
    const rooms = new RoomServiceClient(stack.livekitUrl.replace(/^ws/, 'http'), stack.apiKey, stack.apiSecret);
    const [room] = await rooms.listRooms([created.body.room_name]);
    expect(JSON.parse(room!.metadata)).toEqual({ call_id: id, error: { code: 'configuration_error', reason: error.code, message: error.message } });
    // A report that is not one of the codes, or has no message, is refused.
    const other = await startWebCall();
    expect((await internal('post', `/calls/${other.body.id}/failed`, { ...failed, error: { ...error, code: 'oops' } })).status).toBe(422);
    expect((await internal('post', `/calls/${other.body.id}/failed`, { ...failed, error: { ...error, message: '' } })).status).toBe(422);
    // A call that started ends with its conversation, never as failed.
    await internal('post', `/calls/${other.body.id}/started`, { seq: 1, started_at: new Date().toISOString() });
    expect((await internal('post', `/calls/${other.body.id}/failed`, { ...failed, seq: 2 })).status).toBe(409);
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
    expect(usage.body).toMatchObject({
      calls_made_today: 5,
      max_calls_per_day: 5,
      calls_remaining_today: 0,
      calls_this_month: 5,
      kb_token_budget: expect.any(Number),
    });
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
    // The worker reports the consent that applied with the end of the call, before it uploads (issue 50).
    await tp.sql`update calls set recording_consent = 'none' where id = ${id}`;
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
