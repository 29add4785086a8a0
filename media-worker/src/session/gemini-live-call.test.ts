// A call whose agent runs on Gemini Live: the real CallSession and AgentSession with the google plugin's
// RealtimeModel (built as the worker builds it, createRealtimeModel for provider gemini, its connection through the
// egress guard) against the local Gemini Live double, with no STT or TTS. The first message is said by the model, a
// spoken question is heard by Gemini's activity detection and transcribed, a server-URL tool is called and its result
// spoken, the caller talking over a long answer stops its audio (the double's `interrupted`) and gets an answer, and
// the report has the transcript, the tool call and each turn's latency in the pipeline's metric families.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initializeLogger } from '@livekit/agents';
import { startFakeGemini, type FakeGemini } from '../../../test/support/fake-gemini.ts';
import { synthesize } from '../../../test/support/voice-io.ts';
import { createRealtimeModel } from '../providers/realtime.ts';
import { GuardedGeminiLiveModel } from '../providers/gemini-live.ts';
import { baseConfig, startRealtimeCall, waitUntil } from './harness.test-support.ts';
import type { LatencyKind, MetricsSink } from './metrics-sink.ts';

const MODEL = 'gemini-2.5-flash-native-audio-preview-09-2025';
/** Long enough to talk over: 200 words of the double's tone voice, 12 s. */
const LONG = Array.from({ length: 200 }, (_, i) => `fact${i}`).join(' ');

let fake: FakeGemini;
let tools: http.Server;
let toolsUrl: string;
const toolCalls: unknown[] = [];

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'warn' });
  fake = await startFakeGemini({ live: { apiKeys: ['gm-platform'], firstAudioMs: [300, 500] } });
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

/** The double's model: says what it is told word for word, calls the weather tool, speaks its result, talks long when asked. */
function model() {
  const heard = ['What is the weather in Paris?', 'Tell me everything about Paris.', 'Thank you.'];
  fake.setLiveTranscriber(({ index }) => heard[index] ?? 'Thank you.');
  fake.setLiveResponder((turn) => {
    const fixed = /Say exactly [^"]*"([^"]*)"\s*$/.exec(turn.responseInstructions ?? '');
    if (fixed) return { text: fixed[1]! };
    const lastUser = turn.items.findLastIndex((i) => i.type === 'message' && i.role === 'user');
    const out = turn.items.findLastIndex((i) => i.type === 'function_call_output');
    // The tool's answer as the worker hands it over (its body, maybe within a wrapper).
    if (out > lastUser) return { text: `It is ${/sunny[^"\\]*/.exec(turn.items[out]!.output ?? '')?.[0] ?? 'unknown'} in Paris.` };
    if (/weather/i.test(turn.lastUser)) return { toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }] };
    if (/everything/i.test(turn.lastUser)) return { text: LONG };
    return { text: 'You are welcome.' };
  });
}

describe('a call on Gemini Live', () => {
  it('greets, hears a question, calls a tool, speaks its result, stops when talked over, and reports transcript and latency', async () => {
    model();
    process.env.SSRF_ALLOWLIST = '127.0.0.1';
    const observed: { kind: LatencyKind; provider: string; model: string; seconds: number }[] = [];
    const metrics: MetricsSink = { observeLatency: (kind, l, seconds) => observed.push({ kind, provider: l.provider, model: l.model, seconds }), callEnded() {} };
    const config = baseConfig({
      call: { id: 'call_gemini_live' },
      agent: { first_message: 'Hello, this is Acme weather.' },
      llm: { provider: 'gemini', model: MODEL, base_url: null, temperature: null, max_tokens: null, realtime: { voice: 'Kore', turn_detection: 'server_vad', eagerness: 'auto', silence_duration_ms: 500 } },
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
    const realtime = createRealtimeModel(config.llm as Parameters<typeof createRealtimeModel>[0], {}, { GEMINI_BASE_URL: fake.url, GOOGLE_API_KEY: 'gm-platform' });
    expect(realtime).toBeInstanceOf(GuardedGeminiLiveModel);
    const { call, line, out, agentTexts } = await startRealtimeCall(config, realtime, { metrics });
    await waitUntil(() => agentTexts().includes('Hello, this is Acme weather.'), 20_000, 'greeting');
    await waitUntil(() => !out.playing && call.session.agentState === 'listening', 20_000, 'greeting played');
    await line.say(await synthesize('What is the weather in Paris?', 'espeak-ng'));
    await waitUntil(() => agentTexts().some((t) => t.includes('sunny and warm')), 30_000, 'tool result spoken');
    await waitUntil(() => !out.playing, 20_000, 'answer played');

    // A long answer, talked over one second into its playing.
    const conn = fake.live.at(-1)!;
    await line.say(await synthesize('Tell me everything about Paris.', 'espeak-ng'));
    await waitUntil(() => out.playing && conn.responses.some((r) => r.lastUser === 'Tell me everything about Paris.' && r.firstAudioAt !== undefined), 30_000, 'long answer playing');
    await waitUntil(() => out.playedMs >= 1000, 20_000, 'a second of the long answer');
    const interruptionsBefore = out.interruptions;
    await line.say(await synthesize('Thank you.', 'espeak-ng'));
    await waitUntil(() => agentTexts().includes('You are welcome.'), 30_000, 'the answer after the barge-in');
    await waitUntil(() => !out.playing, 20_000, 'last answer played');
    const report = await call.end('user_hangup');
    await line.close();

    expect(conn.key).toBe('gm-platform');
    expect(conn.setup).toMatchObject({
      model: `models/${MODEL}`,
      generationConfig: { speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
      realtimeInputConfig: { automaticActivityDetection: { disabled: false, silenceDurationMs: 500 } },
      inputAudioTranscription: {},
      outputAudioTranscription: {},
    });
    expect(conn.setup!.tools[0].functionDeclarations.map((f: { name: string }) => f.name)).toContain('get_weather');
    expect(toolCalls.at(-1)).toMatchObject({ call_id: 'call_gemini_live', name: 'get_weather', arguments: { city: 'Paris' } });
    // The barge-in: the double told the plugin (interrupted), the agent's audio was cut, and the long answer was not all heard.
    expect(conn.sent).toContain('interrupted');
    expect(out.interruptions).toBeGreaterThan(interruptionsBefore);
    const long = conn.responses.find((r) => r.lastUser === 'Tell me everything about Paris.')!;
    expect(long.interruptedAt).toBeGreaterThan(long.firstAudioAt!);
    expect(long.heardMs).toBeLessThan(200 * 60 - 2000);
    // The transcript: the greeting, the caller's words (Gemini's input transcription), the tool call, the answers.
    const lines = report.messages.map((m) => `${m.role}:${m.tool_call ? `tool ${m.tool_call.name}` : m.content}`);
    expect(lines).toEqual(expect.arrayContaining(['agent:Hello, this is Acme weather.', 'user:What is the weather in Paris?', 'agent:tool get_weather', 'agent:It is sunny and warm in Paris.', 'user:Thank you.', 'agent:You are welcome.']));
    // Each answered turn: end of speech to the model's first audio, in the pipeline's families with the model's labels.
    const e2e = observed.filter((o) => o.kind === 'e2e');
    expect(e2e.length).toBeGreaterThanOrEqual(2);
    expect(e2e.every((o) => o.provider === 'gemini' && o.model === MODEL)).toBe(true);
    // At least the double's first-audio delay after its end of turn (500 ms of silence, then 300 ms or more).
    expect(Math.min(...e2e.map((o) => o.seconds))).toBeGreaterThan(0.3);
    expect(observed.some((o) => o.kind === 'llm_ttft' && o.provider === 'gemini')).toBe(true);
    expect(report.latency.e2e.samples).toBeGreaterThanOrEqual(2);
    expect(report.usage.llm_completion_tokens).toBeGreaterThan(0);
  }, 120_000);
});
