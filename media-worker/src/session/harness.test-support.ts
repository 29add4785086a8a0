// Builds a CallSession wired to local providers and test servers, for the voice tests and benchmarks.
import { inference, initializeLogger, type llm as agentsLlm, type stt as agentsStt, type tts } from '@livekit/agents';
import * as openai from '@livekit/agents-plugin-openai';
import type { CallConfig } from '../../../schemas/internal.ts';
import { AGENT_DEFAULTS } from '../../../schemas/agents.ts';
import { delaysFor } from '../../../shared/turn-taking.ts';
import { InternalApiClient } from '../../../shared/internal-api.ts';
import { createLogger } from '../../../shared/logger.ts';
import { nullSink, type MetricsSink } from './metrics-sink.ts';
import { LocalSTT } from '../../../shared/speech/local-stt.ts';
import { LocalTTS } from '../../../shared/speech/local-tts.ts';
import { CallSession, type CallSessionOptions } from './call-session.ts';
import { CaptureAudioOutput, LineAudioInput } from '../../../test/support/voice-io.ts';

// The agent defaults less what the session config does not carry.
const { webhook_id: _webhookId, ...agentDefaults } = AGENT_DEFAULTS;

export function baseConfig(overrides: { call?: Partial<CallConfig['call']>; agent?: Partial<CallConfig['agent']> } & Partial<Omit<CallConfig, 'call' | 'agent'>> = {}): CallConfig {
  const { call, agent, ...rest } = overrides;
  return {
    call: { id: 'call_test', type: 'web', direction: null, to_number: null, from_number: null, variables: {}, metadata: {}, ...call },
    agent: {
      id: 'agent_test',
      name: 'Test agent',
      // The API's defaults (schemas/agents.ts), then what these tests need: offline speech, a patient line.
      ...agentDefaults,
      transcriber: { provider: 'local', model: 'pocketsphinx', language: 'en-US' },
      tts: { provider: 'local', voice_id: 'en-us', model: 'espeak-ng' },
      max_duration_seconds: 600,
      silence_timeout_seconds: 60,
      responsiveness: 1,
      // Pinned, so these tests keep their line when the API's defaults move (the backchannel tests set their own).
      turn_taking: { detection: 'model', endpointing: 'fixed', ...delaysFor(1), preemptive_generation: true, ignore_backchannels: false, barge_in: 'words' },
      ...agent,
    },
    prompt: 'You are a helpful assistant.',
    llm: { provider: 'openai', model: 'fake-model', base_url: null, temperature: null, max_tokens: null },
    tools: [],
    knowledge: { knowledge_base_ids: [], mode: 'retrieve' },
    provider_keys: {},
    recording: { enabled: false },
    destination_policy: { allowed_countries: ['US'], blocked_number_types: ['premium_rate', 'shared_cost', 'satellite', 'unknown'], allowed_sip_hosts: [], fictional_numbers: true },
    ...rest,
  };
}

let vad: inference.VAD | null = null;
let loggerReady = false;

export interface Harness {
  call: CallSession;
  line: LineAudioInput;
  out: CaptureAudioOutput;
  stt: agentsStt.STT;
}

export async function startCall(
  config: CallConfig,
  opts: {
    llmUrl: string;
    api?: { url: string; token: string; capability?: string };
    metrics?: MetricsSink;
    sttGrammar?: string;
    /** The STT in place of the local one (a provider's plugin against its stand-in). */
    stt?: agentsStt.STT;
    tts?: tts.TTS;
    extra?: Partial<CallSessionOptions>;
    greetAhead?: 'finished' | 'ended-before-start';
  },
): Promise<Harness> {
  if (!loggerReady) {
    initializeLogger({ pretty: false, level: 'warn' });
    loggerReady = true;
  }
  vad ??= new inference.VAD({ minSilenceDuration: 250 });
  const stt = opts.stt ?? new LocalSTT({ ...(opts.sttGrammar ? { grammar: opts.sttGrammar } : {}) });
  const speech = opts.tts ?? new LocalTTS({ model: 'espeak-ng' });
  const llm = new openai.LLM({ model: 'fake-model', baseURL: opts.llmUrl, apiKey: 'sk-test' });
  const apiClient = opts.api ? new InternalApiClient({ baseUrl: opts.api.url, token: opts.api.token, retry: { baseDelayMs: 20, maxDelayMs: 100 } }) : null;
  if (apiClient && opts.api?.capability) apiClient.setCapability(config.call.id, opts.api.capability);
  const reporter = apiClient?.reporter(config.call.id) ?? null;
  const line = new LineAudioInput();
  const out = new CaptureAudioOutput();
  const call = new CallSession({
    config,
    models: { stt, llm, tts: speech, vad, turnDetection: 'vad' },
    labels: { stt: { provider: 'local', model: 'pocketsphinx' }, llm: { provider: 'openai', model: 'fake-model' }, tts: { provider: 'local', model: 'espeak-ng' } },
    reporter,
    api: apiClient,
    metrics: opts.metrics ?? nullSink,
    logger: createLogger('test', 'warn'),
    transcriptIntervalMs: 200,
    ...opts.extra,
  });
  // The line stands in for the room's audio input; everything after it (beep detection included) is the
  // production path.
  line.start();
  // As the worker does, the greeting synthesized while the room connects; 'finished': all of it before the start.
  if (opts.greetAhead === 'finished') {
    const done = new Promise<void>((resolve) => {
      const onMetrics = (m: { streamed: boolean }) => {
        if (!m.streamed) return;
        speech.off('metrics_collected', onMetrics);
        resolve();
      };
      speech.on('metrics_collected', onMetrics);
    });
    call.prepareGreeting();
    await done;
  }
  if (opts.greetAhead === 'ended-before-start') {
    // The caller hung up while the room connected: the greeting was being made, and the session never started.
    call.prepareGreeting();
    await call.end('user_hangup');
    return { call, line, out, stt };
  }
  await call.start({ audioInput: line, audioOutput: out });
  return { call, line, out, stt };
}

export interface RealtimeHarness {
  call: CallSession;
  line: LineAudioInput;
  out: CaptureAudioOutput;
  /** The agent's spoken messages so far (tool calls left out). */
  agentTexts: () => string[];
}

/**
 * A call on a realtime (speech-to-speech) model as the worker builds it: no STT or TTS, the model's provider and id
 * as the labels of all three, and its side-task text model where given; started on a line and a capture.
 */
export async function startRealtimeCall(
  config: CallConfig,
  model: agentsLlm.RealtimeModel,
  opts: { api?: InternalApiClient | null; metrics?: MetricsSink; sideLlm?: agentsLlm.LLM | null; extra?: Partial<CallSessionOptions> } = {},
): Promise<RealtimeHarness> {
  if (!loggerReady) {
    initializeLogger({ pretty: false, level: 'warn' });
    loggerReady = true;
  }
  vad ??= new inference.VAD({ minSilenceDuration: 250 });
  const labels = { provider: config.llm.provider, model: config.llm.model };
  const line = new LineAudioInput();
  const out = new CaptureAudioOutput();
  const call = new CallSession({
    config,
    models: { stt: null, llm: model, tts: null, vad, turnDetection: 'vad', ...(opts.sideLlm ? { sideLlm: opts.sideLlm } : {}) },
    labels: { stt: labels, llm: labels, tts: labels },
    reporter: null,
    api: opts.api ?? null,
    metrics: opts.metrics ?? nullSink,
    logger: createLogger('test', 'warn'),
    ...opts.extra,
  });
  line.start();
  await call.start({ audioInput: line, audioOutput: out });
  const agentTexts = () => call.messages().filter((m) => m.role === 'agent' && !m.tool_call).map((m) => m.content);
  return { call, line, out, agentTexts };
}

export async function waitUntil(pred: () => boolean, timeoutMs = 20_000, label = 'condition'): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
