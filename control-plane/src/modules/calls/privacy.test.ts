// Data retention at the control plane's ingest boundary (docs/decisions/021-privacy.md): a worker reports a call
// in which the caller says a card number; in `redact_pii` only the placeholder reaches the database (the call
// row and the stored events), the webhooks, the analysis model and the logs; in `no_content` no message text,
// analysis or recording is kept. The worker here is the internal API driven by hand: it sends raw text, as a
// worker that does not know the setting would.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { Receiver } from '../../../../test/support/webhook-receiver.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../../../test/support/fake-openai.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const NO_LATENCY = Object.fromEntries(['llm_ttft', 'tts_ttfb', 'eou_delay', 'e2e'].map((k) => [k, { avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 }]));
const USAGE = { stt_seconds: 1, llm_prompt_tokens: 1, llm_completion_tokens: 1, tts_characters: 1 };
const CARD = '4111 1111 1111 1111';
const SPOKEN_CARD = 'four one one one one one one one one one one one one one one one';
/** Any trace of the card: its digits in any grouping, or its spoken form. */
const leaks = (text: string) => /4111[\s-]*1111|four one one one/.test(text);

const MESSAGES = [
  { role: 'agent', content: 'Acme billing, how can I help?' },
  { role: 'user', content: `My card number is ${CARD}, email john at example dot com.` },
  { role: 'agent', content: 'Thanks, I have updated the card.' },
  {
    role: 'agent',
    content: '',
    tool_call: { name: 'update_card', arguments: JSON.stringify({ card: SPOKEN_CARD }), output: `{"ok":true,"card":"${CARD}"}`, is_error: false },
  },
];

const logLines: string[] = [];
let tp: TestPlatform;
let llm: FakeOpenAI;
let rx: Receiver;
let org: { orgId: string; key: string };
let modelId: string;

beforeAll(async () => {
  rx = await new Receiver().start();
  // The analysis model repeats the card it was given, as a careless model might: the summary is redacted too.
  llm = await startFakeOpenAI({ responder: () => ({ text: JSON.stringify({ summary: `Card ${CARD} was updated.`, outcome: 'card_updated' }) }) });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString('utf8'));
      done();
    },
  });
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1', CALL_ENDED_ANALYSIS_WAIT_SECONDS: 120, ANALYSIS_RETRY_LIMIT: 0 } as never, { log: pino({ level: 'debug' }, sink) });
  org = await tp.createOrg();
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'llama3', base_url: llm.url } });
  modelId = model.body.id;
  const hook = await tp.request('post', '/v1/webhooks', { key: org.key, body: { name: 'crm', url: rx.url('/hooks'), events: ['*'] } });
  expect(hook.status).toBe(201);
});

afterAll(async () => {
  await rx.close();
  await llm.close();
});

async function agent(body: Record<string, unknown> = {}): Promise<string> {
  const res = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Ava', llm_id: modelId, ...body } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function liveCall(agentId: string): Promise<string> {
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, status, started_at)
    values (${org.orgId}, ${agentId}, 'web', 'in_progress', now() - interval '30 seconds') returning id`;
  return row!.id as string;
}

const report = (id: string, kind: 'transcript' | 'ended', body: Record<string, unknown>) =>
  tp.request('post', `/internal/v1/calls/${id}/${kind}`, { key: WORKER, headers: { 'x-call-capability': tp.capability(id) }, body });

const getConfig = (id: string) => tp.request('get', `/internal/v1/calls/${id}/config`, { key: WORKER, headers: { 'x-call-capability': tp.capability(id) } });

async function runCall(agentId: string): Promise<string> {
  const id = await liveCall(agentId);
  expect((await report(id, 'transcript', { seq: 1, messages: MESSAGES.slice(0, 2) })).status).toBe(200);
  const ended = await report(id, 'ended', { seq: 2, end_reason: 'user_hangup', ended_at: new Date().toISOString(), duration_seconds: 30, messages: MESSAGES, usage: USAGE, latency: NO_LATENCY });
  expect(ended.status).toBe(200);
  return id;
}

const received = (id: string) => rx.at('/hooks').filter((r) => r.json?.call_id === id);
const storedEvents = async (id: string) => (await tp.sql`select type, payload::text as payload from events where call_id = ${id} order by seq`) as unknown as { type: string; payload: string }[];
const callRow = async (id: string) => (await tp.sql`select messages::text as messages, ai_summary, analysis_summary, analysis_status, analysis_error from calls where id = ${id}`)[0]!;

describe('workspace and agent settings', () => {
  it('the workspace keeps everything by default and takes redact_pii and a retention period', async () => {
    const before = await tp.request('get', '/v1/workspace', { key: org.key });
    expect(before.body.settings).toMatchObject({ data_retention: 'everything', retain_days: null });
    const bad = await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings: { data_retention: 'some', retain_days: 0 } } });
    expect(bad.status).toBe(422);
    const set = await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings: { data_retention: 'redact_pii', retain_days: 30 } } });
    expect(set.status).toBe(200);
    expect(set.body.settings).toMatchObject({ data_retention: 'redact_pii', retain_days: 30 });
    const audit = await tp.request('get', '/v1/audit-events?action=workspace.update', { key: org.key });
    expect(audit.body.items[0].details.settings).toMatchObject({ data_retention: 'redact_pii', retain_days: 30 });
    const cleared = await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings: { retain_days: null } } });
    expect(cleared.body.settings).toMatchObject({ data_retention: 'redact_pii', retain_days: null });
  });

  it('an agent has no override by default, and may set one', async () => {
    const plain = await tp.request('get', `/v1/agents/${await agent()}`, { key: org.key });
    expect(plain.body.data_retention).toBeNull();
    const strict = await agent({ data_retention: 'no_content' });
    const got = await tp.request('get', `/v1/agents/${strict}`, { key: org.key });
    expect(got.body.data_retention).toBe('no_content');
    const back = await tp.request('patch', `/v1/agents/${strict}`, { key: org.key, body: { data_retention: null } });
    expect(back.body.data_retention).toBeNull();
    expect((await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'x', llm_id: modelId, data_retention: 'most' } })).status).toBe(422);
  });
});

describe('redact_pii', () => {
  it('a card number said on the call is stored, sent and logged only as [card_number]', async () => {
    await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings: { data_retention: 'redact_pii' } } });
    const agentId = await agent();
    const config = await getConfig(await liveCall(agentId));
    // The worker is told, so it redacts before anything leaves it (media-worker side, privacy tests there).
    expect(config.body.data_retention).toBe('redact_pii');

    const requestsBefore = llm.requests.length;
    const id = await runCall(agentId);
    await rx.until(() => received(id).some((r) => r.json.event === 'call.analyzed'), 'call.analyzed');

    // The database: the call's messages (tool call included), its analysis and every stored event.
    const row = await callRow(id);
    expect(leaks(row.messages as string)).toBe(false);
    expect(row.messages).toContain('My card number is [card_number], email [email].');
    expect(JSON.parse(row.messages as string)[3].tool_call).toMatchObject({ arguments: '{"card":"[card_number]"}', output: '{"ok":true,"card":"[card_number]"}' });
    expect(row).toMatchObject({ analysis_status: 'completed', ai_summary: 'Card [card_number] was updated.', analysis_summary: 'Card [card_number] was updated.' });
    const events = await storedEvents(id);
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(['transcript.partial', 'call.ended', 'transcript.final', 'call.analyzed']));
    for (const e of events) expect(leaks(e.payload), e.type).toBe(false);

    // What was sent: the webhook payloads, and the transcript the analysis model read.
    const hooks = received(id);
    expect(hooks.map((h) => h.json.event)).toEqual(expect.arrayContaining(['transcript.partial', 'transcript.final', 'call.ended', 'call.analyzed']));
    for (const h of hooks) expect(leaks(h.body), h.json.event).toBe(false);
    expect(hooks.find((h) => h.json.event === 'transcript.final')!.body).toContain('[card_number]');
    const sent = llm.requests.slice(requestsBefore).map((r) => JSON.stringify(r));
    expect(sent.length).toBeGreaterThan(0);
    for (const s of sent) expect(leaks(s)).toBe(false);
    expect(sent.join('')).toContain('[card_number]');

    // The control plane's logs, at debug.
    expect(logLines.length).toBeGreaterThan(0);
    expect(logLines.filter(leaks)).toEqual([]);
  });

  it("an agent's own everything wins over the workspace's redact_pii", async () => {
    const id = await runCall(await agent({ data_retention: 'everything' }));
    expect((await callRow(id)).messages).toContain(CARD);
    // Its analysis is done before the next test counts the model's requests.
    await expect.poll(async () => (await callRow(id)).analysis_status, { timeout: 20_000 }).toBe('completed');
  });
});

describe('no_content', () => {
  it('stores no message text, sends no transcript, skips the analysis and refuses a recording', async () => {
    await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings: { data_retention: 'everything' } } });
    const agentId = await agent({ data_retention: 'no_content', enable_recording: true });
    const requestsBefore = llm.requests.length;
    const pending = await liveCall(agentId);
    const config = await getConfig(pending);
    expect(config.body).toMatchObject({ data_retention: 'no_content', recording: { enabled: false } });

    const id = await runCall(agentId);
    await rx.until(() => received(id).some((r) => r.json.event === 'transcript.final'), 'transcript.final');
    const row = await callRow(id);
    const messages = JSON.parse(row.messages as string) as { role: string; content: string; tool_call?: Record<string, unknown> }[];
    // What happened and when stays (roles, the tool's name); nothing that was said.
    expect(messages.map((m) => m.role)).toEqual(['agent', 'user', 'agent', 'agent']);
    expect(messages.every((m) => m.content === '')).toBe(true);
    expect(messages[3]!.tool_call).toMatchObject({ name: 'update_card', arguments: '', output: '' });
    await expect.poll(async () => (await callRow(id)).analysis_status).toBe('skipped');
    expect(await callRow(id)).toMatchObject({ ai_summary: null, analysis_summary: null, analysis_error: 'the call keeps no content (data_retention no_content)' });
    expect(llm.requests.length).toBe(requestsBefore);

    const events = await storedEvents(id);
    expect(events.map((e) => e.type)).not.toContain('transcript.partial');
    for (const e of events) expect(e.payload).not.toMatch(/card|Acme|Thanks/);
    for (const h of received(id)) expect(h.body).not.toMatch(/card|Acme|Thanks/);

    const upload = await fetch(`${tp.url}/v1/recordings/${id}/upload`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${tp.capability(id)}`, 'content-type': 'audio/wav' },
      body: new Uint8Array(64),
    });
    expect(upload.status).toBe(403);
    expect((await tp.sql`select recording_key from calls where id = ${id}`)[0]!.recording_key).toBeNull();
  });
});

describe('recording consent', () => {
  const ended = (id: string, consent: string) =>
    report(id, 'ended', { seq: 1, end_reason: 'user_hangup', ended_at: new Date().toISOString(), duration_seconds: 30, messages: [], usage: USAGE, latency: NO_LATENCY, recording_consent: consent });
  const upload = (id: string) =>
    fetch(`${tp.url}/v1/recordings/${id}/upload`, { method: 'PUT', headers: { authorization: `Bearer ${tp.capability(id)}`, 'content-type': 'audio/wav' }, body: new Uint8Array(64) });

  it('the agent says which consent to ask; the call record says which applied; a declined call stores no recording', async () => {
    await tp.request('patch', '/v1/workspace', { key: org.key, body: { settings: { data_retention: 'everything' } } });
    expect((await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'x', llm_id: modelId, recording_consent: 'always' } })).status).toBe(422);
    const agentId = await agent({ enable_recording: true, recording_consent: 'ask', recording_consent_message: 'May we record this call?' });
    const got = await tp.request('get', `/v1/agents/${agentId}`, { key: org.key });
    expect(got.body).toMatchObject({ recording_consent: 'ask', recording_consent_message: 'May we record this call?' });
    const plain = await tp.request('get', `/v1/agents/${await agent()}`, { key: org.key });
    expect(plain.body).toMatchObject({ recording_consent: 'none', recording_consent_message: null });

    const accepted = await liveCall(agentId);
    expect((await getConfig(accepted)).body.agent).toMatchObject({ recording_consent: 'ask', recording_consent_message: 'May we record this call?' });
    expect((await tp.request('get', `/v1/calls/${accepted}`, { key: org.key })).body.recording_consent).toBeNull();
    expect((await ended(accepted, 'accepted')).status).toBe(200);
    expect((await upload(accepted)).status).toBe(204);
    expect((await tp.request('get', `/v1/calls/${accepted}`, { key: org.key })).body).toMatchObject({ recording_consent: 'accepted', recording_url: expect.any(String) });

    const declined = await liveCall(agentId);
    expect((await ended(declined, 'declined')).status).toBe(200);
    expect((await upload(declined)).status).toBe(403);
    expect((await tp.request('get', `/v1/calls/${declined}`, { key: org.key })).body).toMatchObject({ recording_consent: 'declined', recording_url: null });
  });
});
