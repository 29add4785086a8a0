// OpenTelemetry across a call: the control plane and the media worker export to an OTLP receiver (the test's,
// through the standard OTEL_EXPORTER_OTLP_ENDPOINT), a real web call runs (rtc-node client, LiveKit, local
// speech, the LLM stand-in calling a function tool), and the spans must form one trace: API request ->
// dispatch -> the worker's job -> agents-js session, turns, LLM/TTS and the tool call -> the worker's reports,
// received by the control plane as children of the worker's spans.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { disposeRtc } from '../support/rtc-client.ts';
import { webCall } from '../support/web-caller.ts';
import { synthesize } from '../support/speech.ts';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../support/otlp-receiver.ts';
import { untilEvery } from '../support/e2e.ts';

let llm: FakeOpenAI;
let otlp: OtlpReceiver;
let toolServer: http.Server;
let toolCalls = 0;
let agentId: string;

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250, 90_000);

beforeAll(async () => {
  otlp = await startOtlpReceiver();
  toolServer = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      toolCalls++;
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"opens":"nine"}');
    });
  });
  await new Promise<void>((r) => toolServer.listen(0, '127.0.0.1', r));
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    const system = String(req.messages[0]?.content ?? '');
    if (system.startsWith('You analyse')) return { text: JSON.stringify({ summary: 'Opening hours.', outcome: 'question_answered' }) };
    const last = req.messages.at(-1);
    // The question gets a tool call; the tool's result gets the answer.
    if (last?.role === 'user' && !req.messages.some((m) => m.role === 'tool')) return { toolCalls: [{ name: 'opening_hours', arguments: {} }] };
    return { text: 'We open at nine.' };
  });
  await fixture.start({
    org: 'tracing',
    worker: true,
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_BSP_SCHEDULE_DELAY: '200',
    },
  });
  const tool = await api('POST', '/v1/tools', {
    type: 'function',
    name: 'opening_hours',
    description: 'When the practice opens.',
    url: `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}/hours`,
  });
  expect(tool.status).toBe(201);
  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'Answer briefly.', tool_ids: [tool.body.id] });
  agentId = await createLocalAgent(api, { name: 'Traced', llm_id: modelId, tts: { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' }, first_message: 'Hello.' });
}, 180_000);

afterAll(async () => {
  await disposeRtc();
  await fixture.stop();
  await llm?.close();
  await otlp?.close();
  toolServer?.close();
});

describe('traces across the control plane and the media worker', () => {
  it('parents the worker spans on the API request and the reports on the worker', { timeout: 240_000 }, async () => {
    const { callId, client, heard } = await webCall(api, { agent_id: agentId });
    try {
      await heard.utterance({ silenceMs: 1000, timeoutMs: 90_000 });
      heard.reset();
      await client.speak(await synthesize('What time do you open tomorrow morning'), { trailingSilenceMs: 1500 });
      await until('the tool call', () => toolCalls > 0);
      await heard.utterance({ silenceMs: 1000, timeoutMs: 90_000 });
    } finally {
      await client.leave();
    }
    expect((await api('POST', `/v1/calls/${callId}/stop`)).status).toBe(200);
    await until('the call to complete', async () => (await api('GET', `/v1/calls/${callId}`)).body.status === 'completed');

    const byId = new Map<string, ReceivedSpan>();
    const find = (pred: (s: ReceivedSpan) => boolean) => otlp.spans.find(pred);
    // 1. The API request and the dispatch, in the control plane.
    const request = await until('the API request span', () => find((s) => s.service === 'vap-control-plane' && s.name === 'POST /v1/calls/web'));
    const dispatch = await until('the dispatch span', () => find((s) => s.name === 'call.dispatch' && s.attributes['vap.call_id'] === callId));
    expect(dispatch.service).toBe('vap-control-plane');
    expect(dispatch.traceId).toBe(request.traceId);
    expect(dispatch.parentSpanId).toBe(request.spanId);
    const traceId = request.traceId;
    // 2. The worker's job continues it (another process: the job process of the media worker).
    const job = await until('the job span', () => find((s) => s.name === 'call.job' && s.traceId === traceId));
    expect(job.service).toBe('vap-media-worker');
    expect(job.parentSpanId).toBe(dispatch.spanId);
    expect(job.attributes['vap.call_id']).toBe(callId);
    // 3. agents-js's spans nest under the job: the session, its turns, LLM and TTS, and the tool call.
    const inTrace = () => otlp.spans.filter((s) => s.traceId === traceId);
    await until('the session, turn, LLM, TTS and tool spans', () => {
      const names = new Set(inTrace().map((s) => s.name));
      return ['agent_session', 'user_turn', 'llm_node', 'tts_node', 'function_tool'].every((n) => names.has(n));
    });
    for (const s of inTrace()) byId.set(s.spanId, s);
    const ancestors = (s: ReceivedSpan): string[] => {
      const out: string[] = [];
      for (let p = byId.get(s.parentSpanId); p; p = byId.get(p.parentSpanId)) out.push(p.name);
      return out;
    };
    const session = inTrace().find((s) => s.name === 'agent_session')!;
    expect(session.parentSpanId).toBe(job.spanId);
    for (const name of ['user_turn', 'llm_node', 'tts_node', 'function_tool']) {
      const spans = inTrace().filter((s) => s.name === name);
      for (const span of spans) {
        expect(span.service).toBe('vap-media-worker');
        expect(ancestors(span), name).toContain('call.job');
        expect(ancestors(span), name).toContain('POST /v1/calls/web');
      }
      // The turn's spans sit in the session (the greeting's TTS may run beside it, still in the job).
      expect(spans.some((span) => ancestors(span).includes('agent_session')), name).toBe(true);
    }
    // 4. The reports back: the control plane's internal API spans are children of worker spans.
    const reports = await until('the worker reports in the trace', () => {
      const r = inTrace().filter((s) => s.service === 'vap-control-plane' && s.name.startsWith('POST /internal/v1/calls/'));
      return r.some((s) => s.name.endsWith('/started')) && r.some((s) => s.name.endsWith('/ended')) ? r : null;
    });
    for (const s of otlp.spans) byId.set(s.spanId, s);
    for (const r of reports) {
      const parent = byId.get(r.parentSpanId);
      expect(parent?.service, r.name).toBe('vap-media-worker');
      expect(ancestors(r)).toContain('call.job');
    }
  });
});
