// A call whose agent runs on a realtime (speech-to-speech) model: the real CallSession and AgentSession with the
// openai plugin's RealtimeModel (built as the worker builds it, createRealtimeModel) against the local OpenAI
// Realtime double, with no STT or TTS. The first message is said by the model, a spoken question is heard by the
// provider's server VAD and transcribed, a server-URL tool is called and its result spoken, and the report has the
// transcript, the tool call, and each turn's voice-to-voice latency in the pipeline's metric families.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initializeLogger } from '@livekit/agents';
import { startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { synthesize } from '../../../test/support/voice-io.ts';
import { createRealtimeModel } from '../providers/realtime.ts';
import { baseConfig, startRealtimeCall, waitUntil } from './harness.test-support.ts';
import type { LatencyKind, MetricsSink } from './metrics-sink.ts';

let fake: FakeOpenAI;
let tools: http.Server;
let toolsUrl: string;
const toolCalls: unknown[] = [];

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'warn' });
  fake = await startFakeOpenAI({ realtime: { apiKeys: ['sk-platform'], firstAudioMs: [300, 500] } });
  tools = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      toolCalls.push(JSON.parse(body));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"forecast":"sunny and warm"}');
    });
  });
  await new Promise<void>((r) => tools.listen(0, '127.0.0.1', r));
  toolsUrl = `http://127.0.0.1:${(tools.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await fake?.close();
  tools?.close();
});

/** The double's model: says what it is told word for word, calls the weather tool for a weather question, speaks its result. */
function model() {
  fake.setRealtimeTranscriber(({ index }) => (index === 0 ? 'What is the weather in Paris?' : 'Thank you.'));
  fake.setRealtimeResponder((turn) => {
    const fixed = /Say exactly [^"]*"([^"]*)"\s*$/.exec(turn.responseInstructions ?? '');
    if (fixed) return { text: fixed[1]! };
    const last = turn.items.at(-1);
    // The tool's answer as the worker hands it over (its body, maybe within a wrapper).
    if (last?.type === 'function_call_output') return { text: `It is ${/sunny[^"\\]*/.exec(last.output ?? '')?.[0] ?? 'unknown'} in Paris.` };
    if (/weather/i.test(turn.lastUser)) return { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] };
    return { text: 'You are welcome.' };
  });
}

describe('a call on a realtime model', () => {
  it('greets, hears a question by server VAD, calls a tool, speaks its result, and reports transcript and latency', async () => {
    model();
    process.env.SSRF_ALLOWLIST = '127.0.0.1';
    const observed: { kind: LatencyKind; provider: string; model: string; seconds: number }[] = [];
    const metrics: MetricsSink = { observeLatency: (kind, l, seconds) => observed.push({ kind, provider: l.provider, model: l.model, seconds }), callEnded() {} };
    const config = baseConfig({
      call: { id: 'call_realtime' },
      agent: { first_message: 'Hello, this is Acme weather.' },
      llm: { provider: 'openai', model: 'gpt-realtime', base_url: null, temperature: null, max_tokens: null, realtime: { voice: 'marin', turn_detection: 'server_vad', eagerness: 'auto', silence_duration_ms: 400 } },
      tools: [
        {
          type: 'function',
          name: 'get_weather',
          description: 'The weather in a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          url: `${toolsUrl}/weather`,
          method: 'POST',
          headers: {},
          timeout_ms: 2000,
          signing_secret: null,
        },
      ],
    });
    const realtime = createRealtimeModel(config.llm as Parameters<typeof createRealtimeModel>[0], {}, { OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-platform' });
    const { call, line, out, agentTexts } = await startRealtimeCall(config, realtime, { metrics });
    await waitUntil(() => agentTexts().includes('Hello, this is Acme weather.'), 20_000, 'greeting');
    await waitUntil(() => !out.playing && call.session.agentState === 'listening', 20_000, 'greeting played');
    await line.say(await synthesize('What is the weather in Paris?', 'espeak-ng'));
    await waitUntil(() => agentTexts().some((t) => t.includes('sunny and warm')), 30_000, 'tool result spoken');
    await waitUntil(() => !out.playing, 20_000, 'answer played');
    const report = await call.end('user_hangup');
    await line.close();

    const conn = fake.realtime.at(-1)!;
    expect(conn.headers.authorization).toBe('Bearer sk-platform');
    expect(conn.session.audio.input.turn_detection).toMatchObject({ type: 'server_vad', silence_duration_ms: 400 });
    expect(conn.session.audio.input.transcription).toMatchObject({ model: 'gpt-4o-mini-transcribe' });
    expect(conn.session.audio.output.voice).toBe('marin');
    expect(conn.session.tools.map((t: { name: string }) => t.name)).toContain('get_weather');
    expect(toolCalls.at(-1)).toMatchObject({ call_id: 'call_realtime', name: 'get_weather', arguments: { city: 'Paris' } });
    // The transcript: the greeting, the caller's words (the provider's input transcription), the tool call, the answer.
    const lines = report.messages.map((m) => `${m.role}:${m.tool_call ? `tool ${m.tool_call.name}` : m.content}`);
    expect(lines).toEqual(expect.arrayContaining(['agent:Hello, this is Acme weather.', 'user:What is the weather in Paris?', 'agent:tool get_weather', 'agent:It is sunny and warm in Paris.']));
    expect(out.segmentStarts.length).toBeGreaterThanOrEqual(2);
    // Each answered turn: end of speech to the model's first audio, in the pipeline's families with the model's labels.
    const e2e = observed.filter((o) => o.kind === 'e2e');
    expect(e2e.length).toBeGreaterThanOrEqual(1);
    expect(e2e.every((o) => o.provider === 'openai' && o.model === 'gpt-realtime')).toBe(true);
    // At least the double's first-audio delay after the provider's end of turn (400 ms of silence, then 300 ms or more).
    expect(Math.min(...e2e.map((o) => o.seconds))).toBeGreaterThan(0.3);
    expect(observed.some((o) => o.kind === 'llm_ttft')).toBe(true);
    expect(report.latency.e2e.samples).toBeGreaterThanOrEqual(1);
    expect(report.usage.llm_completion_tokens).toBeGreaterThan(0);
  }, 90_000);
});
