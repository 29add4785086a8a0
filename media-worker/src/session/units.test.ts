// Unit tests of the pieces around the voice loop.
import { AudioFrame } from '@livekit/rtc-node';
import { describe, expect, it } from 'vitest';
import { combineLoad } from '../load.ts';
import { WorkerMetrics } from '../metrics.ts';
import { nullSink } from './metrics-sink.ts';
import { callIdFromMetadata, capabilityFromJobMetadata } from '../call/job-metadata.ts';
import { readWav, ambientPath, AMBIENT_SOUNDS } from './background.ts';
import { matchesEndPhrase } from './call-session.ts';
import { endpointingFor, interruptionFor, interruptionOptions, pausesOnOnset, pausesOnSound, turnHandlingFor, vadSilenceFor } from './mappings.ts';
import { DELAY_LIMITS, TURN_DETECTIONS, delaysFor } from '../../../shared/turn-taking.ts';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PATCHED_AGENTS_VERSION, RaceFixVersionError, assertRaceFixTarget, leakFreeRace } from './race-fix.ts';
import { installedAgentsVersion } from './agents-release.ts';
import { TurnMetrics, type TurnReport } from './turn-metrics.ts';
import { METRICS_TOPIC, turnMetricsMessage } from './room-metrics.ts';
import { METRICS_TOPIC as SDK_METRICS_TOPIC, parseMetrics } from '../../../web/src/sdk/protocol.ts';
import { llm as agentsLlm } from '@livekit/agents';
import { hangUpRoom } from './hang-up.ts';
import { RoomServiceClient } from 'livekit-server-sdk';
import { pino } from 'pino';
import { BeepDetector, VoicemailClassifier, transcriptLooksLikeVoicemail } from './voicemail.ts';

const labels = { stt: { provider: 'local', model: 's' }, llm: { provider: 'openai', model: 'm' }, tts: { provider: 'local', model: 't' } };

describe('mappings', () => {
  it('derives only delays the API accepts back (a GET then PUT of an agent round-trips)', () => {
    for (const detection of TURN_DETECTIONS)
      for (let r = 0; r <= 1; r += 0.125) {
        const d = delaysFor(r, detection);
        for (const field of ['min_delay_ms', 'max_delay_ms'] as const) {
          expect(d[field], `${detection} at ${r}: ${field}`).toBeGreaterThanOrEqual(DELAY_LIMITS[field].minimum);
          expect(d[field], `${detection} at ${r}: ${field}`).toBeLessThanOrEqual(DELAY_LIMITS[field].maximum);
        }
      }
  });

  it('maps responsiveness to endpointing delays', () => {
    expect(delaysFor(0)).toEqual({ min_delay_ms: 1000, max_delay_ms: 4000 });
    expect(delaysFor(0.5)).toEqual({ min_delay_ms: 500, max_delay_ms: 3000 });
    expect(delaysFor(0.75)).toEqual({ min_delay_ms: 350, max_delay_ms: 2000 });
    expect(delaysFor(1)).toEqual({ min_delay_ms: 200, max_delay_ms: 1000 });
    // With a turn detector the floor is shorter (an open sentence waits the ceiling instead).
    expect(delaysFor(0, 'transcript')).toEqual({ min_delay_ms: 2500, max_delay_ms: 4000 });
    expect(delaysFor(0.5, 'transcript')).toEqual({ min_delay_ms: 1700, max_delay_ms: 3000 });
    expect(delaysFor(0.5, 'model')).toEqual({ min_delay_ms: 1700, max_delay_ms: 3000 });
    expect(delaysFor(0.75, 'transcript')).toEqual({ min_delay_ms: 925, max_delay_ms: 2000 });
    expect(delaysFor(1, 'transcript')).toEqual({ min_delay_ms: 150, max_delay_ms: 1000 });
    // The STT's own end of turn (Flux): nothing added after it by default; the ceiling is Flux's eot_timeout_ms.
    expect(delaysFor(0, 'stt')).toEqual({ min_delay_ms: 300, max_delay_ms: 6000 });
    expect(delaysFor(0.5, 'stt')).toEqual({ min_delay_ms: 0, max_delay_ms: 5000 });
    expect(delaysFor(1, 'stt')).toEqual({ min_delay_ms: 0, max_delay_ms: 2000 });
  });
  it("with detection 'stt', agents-js takes the STT's end of turn and adds only min_delay_ms, fixed", () => {
    const t = { detection: 'stt', endpointing: 'dynamic', min_delay_ms: 200, max_delay_ms: 5000, preemptive_generation: true, ignore_backchannels: true, barge_in: 'pause' } as const;
    const h = turnHandlingFor({ turn_taking: t, interruption_sensitivity: 0.5 }, { turnDetector: 'vad', preemptiveAllowed: true });
    expect(h.turnDetection).toBe('stt');
    expect(h.endpointing).toEqual({ mode: 'fixed', minDelay: 200, maxDelay: 200 });
    expect(h.preemptiveGeneration).toMatchObject({ enabled: true });
    expect(vadSilenceFor(t)).toBe(250);
  });
  it('maps turn_taking endpointing onto agents-js endpointing options', () => {
    expect(endpointingFor({ endpointing: 'fixed', min_delay_ms: 300, max_delay_ms: 1500 })).toEqual({ mode: 'fixed', minDelay: 300, maxDelay: 1500 });
    expect(endpointingFor({ endpointing: 'dynamic', min_delay_ms: 150, max_delay_ms: 2000 })).toEqual({ mode: 'dynamic', minDelay: 150, maxDelay: 2000 });
    // A ceiling below the floor (only possible from an older config) is raised to the floor.
    expect(endpointingFor({ endpointing: 'fixed', min_delay_ms: 800, max_delay_ms: 500 })).toEqual({ mode: 'fixed', minDelay: 800, maxDelay: 800 });
  });
  it("sets the VAD's silence from min_delay_ms, 100-250 ms, and 250 ms for the end-of-turn model", () => {
    expect(vadSilenceFor({ detection: 'transcript', min_delay_ms: 150 })).toBe(100);
    expect(vadSilenceFor({ detection: 'transcript', min_delay_ms: 200 })).toBe(150);
    expect(vadSilenceFor({ detection: 'vad', min_delay_ms: 500 })).toBe(250);
    expect(vadSilenceFor({ detection: 'vad', min_delay_ms: 0 })).toBe(100);
    expect(vadSilenceFor({ detection: 'model', min_delay_ms: 100 })).toBe(250);
  });
  it('maps interruption sensitivity to minimum duration and words', () => {
    expect(interruptionFor(0)).toEqual({ minDuration: 1500, minWords: 3 });
    expect(interruptionFor(0.5)).toEqual({ minDuration: 800, minWords: 1 });
    expect(interruptionFor(1)).toEqual({ minDuration: 100, minWords: 0 });
  });
  it("with barge_in 'pause', pauses on the start of speech and resumes 150 ms after its end unless words stop it", () => {
    const pause = { minDuration: 50, minWords: 0, falseInterruptionTimeout: 150, resumeFalseInterruption: true };
    expect(interruptionOptions(0.5, { ignore_backchannels: true, barge_in: 'pause' })).toMatchObject(pause);
    expect(interruptionOptions(1, { ignore_backchannels: true, barge_in: 'pause' })).toMatchObject(pause);
    expect(interruptionOptions(0.25, { ignore_backchannels: false, barge_in: 'pause' })).toMatchObject(pause);
    // 'pause_on_speech' hands agents-js the same pause; only 'pause' adds the onset before it.
    expect(interruptionOptions(0.5, { ignore_backchannels: true, barge_in: 'pause_on_speech' })).toMatchObject(pause);
    expect(pausesOnOnset(0.5, { barge_in: 'pause' })).toBe(true);
    expect(pausesOnOnset(0.5, { barge_in: 'pause_on_speech' })).toBe(false);
    expect(pausesOnOnset(0.5, { barge_in: 'words' })).toBe(false);
    // A sensitivity that needs two words never pauses on sound, so no onset either.
    expect(pausesOnOnset(0.1, { barge_in: 'pause' })).toBe(false);
    expect(pausesOnSound(0.1, { barge_in: 'pause_on_speech' })).toBe(false);
  });
  it("with barge_in 'words' (or a sensitivity that needs two words), waits unpaused for the words", () => {
    expect(interruptionOptions(0.5, { ignore_backchannels: false, barge_in: 'words' })).toEqual({ enabled: true, mode: 'vad', minDuration: 800, minWords: 1 });
    expect(interruptionOptions(0.5, { ignore_backchannels: true, barge_in: 'words' })).toEqual({ enabled: true, mode: 'vad', minDuration: 250, minWords: 1 });
    expect(interruptionOptions(1, { ignore_backchannels: true, barge_in: 'words' })).toEqual({ enabled: true, mode: 'vad', minDuration: 100, minWords: 1 });
    expect(interruptionOptions(0, { ignore_backchannels: true, barge_in: 'pause' })).toEqual({ enabled: true, mode: 'vad', minDuration: 250, minWords: 3 });
    expect(interruptionOptions(0.1, { ignore_backchannels: false, barge_in: 'pause' })).toEqual({ enabled: true, mode: 'vad', minDuration: 1360, minWords: 2 });
  });
});

describe('end-call phrases', () => {
  it('matches whole words, ignoring case and punctuation', () => {
    expect(matchesEndPhrase('Thanks, GOODBYE!', ['goodbye'])).toBe(true);
    expect(matchesEndPhrase('Have a nice day.', ['have a nice day'])).toBe(true);
    expect(matchesEndPhrase('goodbyes are hard', ['goodbye'])).toBe(false);
    expect(matchesEndPhrase('anything', [])).toBe(false);
  });
});

describe('voicemail detection', () => {
  it('classifies greetings', () => {
    expect(transcriptLooksLikeVoicemail("Hi, you've reached Sam, please leave a message after the tone")).toBe(true);
    // Contractions, with the STT's apostrophe, a typographic one, or none.
    for (const greeting of ["You've reached Sam.", 'You’ve reached the Smith family', 'youve reached acme dental', 'You reached the voicemail of Sam',
      "Sorry, we're unable to take your call", "I'm away from the phone", 'Speak at the tone', 'Leave your name and number']) {
      expect(transcriptLooksLikeVoicemail(greeting), greeting).toBe(true);
    }
    // A person's words: none of them is a cue.
    for (const said of ['Hello?', 'Hi, I would like to book a cleaning for next week', "I've reached the front door, which floor are you on?", 'You reached me at a bad time']) {
      expect(transcriptLooksLikeVoicemail(said), said).toBe(false);
    }
    expect(new VoicemailClassifier().onTranscript('hello?')).toBe('human');
    expect(new VoicemailClassifier().onTranscript('the person you are calling is not available')).toBe('machine');
    expect(new VoicemailClassifier().onTranscript('one two three four five six seven eight nine ten eleven twelve thirteen fourteen')).toBe('machine');
    // A garbled machine greeting is no person's "Hello?": no verdict, and its words add up across utterances.
    const garbled = new VoicemailClassifier();
    expect(garbled.onTranscript('hi there have reached semi an')).toBeNull();
    expect(garbled.onTranscript('were not a bull right now')).toBeNull();
    expect(garbled.onTranscript('leave in a message')).toBe('machine');
    expect(garbled.reason).toBe('long_greeting');
    // Only the first utterance can be a person's short answer.
    const later = new VoicemailClassifier();
    expect(later.onTranscript('hi there have reached semi an')).toBeNull();
    expect(later.onTranscript('hello')).toBeNull();
    // A beep after a short first utterance overrules it.
    const overruled = new VoicemailClassifier();
    expect(overruled.onTranscript('hello')).toBe('human');
    expect(overruled.markMachine('beep')).toBe('machine');
    // A short first utterance taken back by more speech: its words still count towards a long greeting.
    const reopened = new VoicemailClassifier();
    expect(reopened.onTranscript('hello there')).toBe('human');
    reopened.reopen();
    expect(reopened.verdict).toBeNull();
    expect(reopened.onTranscript('hi')).toBeNull();
    expect(reopened.onTranscript('one two three four five six seven eight nine ten eleven')).toBe('machine');
    expect(reopened.reason).toBe('long_greeting');
  });
  it('detects a beep and ignores noise', () => {
    const frame = (gen: (i: number) => number) => {
      const d = new Int16Array(320);
      for (let i = 0; i < 320; i++) d[i] = gen(i);
      return new AudioFrame(d, 16000, 1, 320);
    };
    const beep = new BeepDetector();
    let hit = false;
    for (let k = 0; k < 20 && !hit; k++) hit = beep.push(frame((i) => 10000 * Math.sin((2 * Math.PI * 1000 * (i + k * 320)) / 16000)));
    expect(hit).toBe(true);
    const noise = new BeepDetector();
    let fp = false;
    for (let k = 0; k < 50; k++) fp ||= noise.push(frame(() => (Math.random() - 0.5) * 20000));
    expect(fp).toBe(false);
  });
});

describe('turn metrics', () => {
  it('de-duplicates TTS metrics reported twice for one reply', () => {
    const tm = new TurnMetrics(nullSink, labels, 'web');
    const base = { type: 'tts_metrics' as const, label: 'x', timestamp: 0, durationMs: 10, audioDurationMs: 1000, cancelled: false, speechId: 'sp1' };
    tm.onMetrics({ ...base, requestId: 'inner-1', ttfbMs: 80, charactersCount: 20, streamed: false });
    tm.onMetrics({ ...base, requestId: 'inner-1', ttfbMs: 80, charactersCount: 20, streamed: false });
    tm.onMetrics({ ...base, requestId: 'outer', ttfbMs: 90, charactersCount: 20, streamed: true });
    tm.onMetrics({ ...base, speechId: 'sp2', requestId: 'r2', ttfbMs: 120, charactersCount: 5, streamed: true });
    expect(tm.samples.tts_ttfb).toEqual([80, 120]);
    expect(tm.usageReport().tts_characters).toBe(25);
  });
  it('records known LLM and EOU delays into the call summary and Prometheus', async () => {
    const m = new WorkerMetrics();
    const tm = new TurnMetrics(m, labels, 'inbound');
    for (const [i, ttft] of [200, 300, 250].entries()) {
      tm.onMetrics({ type: 'llm_metrics', label: 'l', requestId: `r${i}`, timestamp: 0, durationMs: 0, ttftMs: ttft, cancelled: false, completionTokens: 5, promptTokens: 50, promptCachedTokens: 0, totalTokens: 55, tokensPerSecond: 1 });
    }
    tm.onMetrics({ type: 'eou_metrics', timestamp: 0, endOfUtteranceDelayMs: 400, transcriptionDelayMs: 0, onUserTurnCompletedDelayMs: 0, lastSpeakingTimeMs: 0 } as never);
    expect(tm.summary().llm_ttft).toEqual({ avg_ms: 250, p50_ms: 250, min_ms: 200, max_ms: 300, samples: 3 });
    expect(tm.summary().eou_delay.p50_ms).toBe(400);
    expect(tm.usageReport()).toMatchObject({ llm_prompt_tokens: 150, llm_completion_tokens: 15 });
    m.callEnded('voicemail', 'outbound');
    const text = await m.registry.metrics();
    expect(text).toContain('voice_llm_ttft_seconds_count{provider="openai",model="m",call_type="inbound"} 3');
    expect(text).toContain('voice_eou_delay_seconds_count');
    expect(text).toContain('voice_calls_total{end_reason="voicemail",call_type="outbound"} 1');
  });
  it('reports each agent reply as a turn, with the figures measured since the previous one', () => {
    const tm = new TurnMetrics(nullSink, labels, 'web');
    const turns: TurnReport[] = [];
    tm.onTurn((t) => turns.push(t));
    const tts = (speechId: string, ttfbMs: number) =>
      tm.onMetrics({ type: 'tts_metrics', label: 'x', timestamp: 0, durationMs: 10, audioDurationMs: 1000, cancelled: false, speechId, requestId: speechId, ttfbMs, charactersCount: 5, streamed: true });
    const reply = (e2eLatency?: number) =>
      tm.onAgentMessage(agentsLlm.ChatMessage.create({ role: 'assistant', content: 'ok', ...(e2eLatency !== undefined ? { metrics: { e2eLatency } } : {}) }));
    // The first message: only its audio was measured.
    tts('greeting', 150.4);
    reply();
    // A turn: end of the user's speech, then the reply's first token and first audio.
    tm.onMetrics({ type: 'eou_metrics', timestamp: 0, endOfUtteranceDelayMs: 420, transcriptionDelayMs: 0, onUserTurnCompletedDelayMs: 0, lastSpeakingTimeMs: 0 } as never);
    tm.onMetrics({ type: 'llm_metrics', label: 'l', requestId: 'r1', timestamp: 0, durationMs: 0, ttftMs: 210, cancelled: false, completionTokens: 5, promptTokens: 50, promptCachedTokens: 0, totalTokens: 55, tokensPerSecond: 1 });
    tts('reply-1', 95);
    tts('reply-1', 99); // the same reply reported twice counts once
    const msg = agentsLlm.ChatMessage.create({ role: 'assistant', content: 'ok', metrics: { e2eLatency: 0.9876 } });
    tm.onAgentMessage(msg);
    tm.onAgentMessage(msg); // the same message twice is one turn
    expect(turns).toEqual([
      { turn: 1, eou_delay_ms: null, llm_ttft_ms: null, tts_ttfb_ms: 150, e2e_latency_ms: null },
      { turn: 2, eou_delay_ms: 420, llm_ttft_ms: 210, tts_ttfb_ms: 95, e2e_latency_ms: 988 },
    ]);
    expect(tm.samples.e2e).toEqual([987.6]);
  });

  it("keeps each reply's turn for the call record's message, by message id", () => {
    const tm = new TurnMetrics(nullSink, labels, 'web');
    const greeting = agentsLlm.ChatMessage.create({ role: 'assistant', content: 'Hello' });
    tm.onMetrics({ type: 'tts_metrics', label: 'x', timestamp: 0, durationMs: 10, audioDurationMs: 1000, cancelled: false, speechId: 'g', requestId: 'g', ttfbMs: 140.6, charactersCount: 5, streamed: true });
    tm.onAgentMessage(greeting);
    tm.onMetrics({ type: 'eou_metrics', timestamp: 0, endOfUtteranceDelayMs: 510.2, transcriptionDelayMs: 0, onUserTurnCompletedDelayMs: 0, lastSpeakingTimeMs: 0 } as never);
    tm.onMetrics({ type: 'llm_metrics', label: 'l', requestId: 'r1', timestamp: 0, durationMs: 0, ttftMs: 333, cancelled: false, completionTokens: 5, promptTokens: 50, promptCachedTokens: 0, totalTokens: 55, tokensPerSecond: 1 });
    tm.onMetrics({ type: 'tts_metrics', label: 'x', timestamp: 0, durationMs: 10, audioDurationMs: 1000, cancelled: false, speechId: 'a', requestId: 'a', ttfbMs: 88, charactersCount: 5, streamed: true });
    const answer = agentsLlm.ChatMessage.create({ role: 'assistant', content: 'Booked', metrics: { e2eLatency: 1.2 } });
    tm.onAgentMessage(answer);
    // A second report of the same message does not move its figures to a new turn.
    tm.onAgentMessage(answer);
    expect(tm.messageMetrics(greeting.id)).toEqual({ eou_delay_ms: null, llm_ttft_ms: null, tts_ttfb_ms: 141, e2e_ms: null });
    expect(tm.messageMetrics(answer.id)).toEqual({ eou_delay_ms: 510, llm_ttft_ms: 333, tts_ttfb_ms: 88, e2e_ms: 1200 });
    expect(tm.messageMetrics('unknown')).toBeUndefined();
  });

  it('publishes a turn as the message the web SDK reads, on the topic it listens to', () => {
    const t: TurnReport = { turn: 3, eou_delay_ms: 300, llm_ttft_ms: null, tts_ttfb_ms: 80, e2e_latency_ms: 1200 };
    expect(METRICS_TOPIC).toBe(SDK_METRICS_TOPIC);
    expect(JSON.parse(new TextDecoder().decode(turnMetricsMessage(t)))).toEqual({ type: 'turn_metrics', ...t });
    expect(parseMetrics(turnMetricsMessage(t))).toEqual(t);
  });

  it('accepts observations pushed by job processes', () => {
    const m = new WorkerMetrics();
    expect(m.apply({ op: 'latency', kind: 'e2e', labels: { provider: 'a', model: 'b', call_type: 'web' }, seconds: 0.9 })).toBe(true);
    expect(m.apply({ op: 'nope' })).toBe(false);
  });
  it('logs and counts a hang-up whose room cannot be deleted, without throwing', async () => {
    // A real RoomService client against a port nothing listens on: the request itself fails.
    const rooms = new RoomServiceClient('http://127.0.0.1:9', 'key', 'secret-secret-secret-secret-secret');
    // The worker's call logger: pino bound to the call's id, its lines collected.
    const lines: string[] = [];
    const logger = pino({}, { write: (line: string) => void lines.push(line) }).child({ call_id: 'call_x' });
    const m = new WorkerMetrics();
    const ok = await hangUpRoom({ rooms, room: 'call-x', callType: 'inbound', logger, metrics: m });
    expect(ok).toBe(false);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ level: 50, call_id: 'call_x', room: 'call-x', err: expect.anything(), msg: 'hang-up failed: the room could not be deleted' });
    // The call's id once: the line adds no call_id of its own to the logger's.
    expect(lines[0]!.match(/"call_id"/g)).toHaveLength(1);
    expect(await m.registry.metrics()).toContain('voice_call_action_failures_total{action="hang_up",call_type="inbound"} 1');
  });
  it('counts failed room actions (a hang-up whose room could not be deleted)', async () => {
    const m = new WorkerMetrics();
    expect(m.apply({ op: 'action_failed', action: 'hang_up', call_type: 'inbound' })).toBe(true);
    expect(m.apply({ op: 'action_failed', action: 'explode', call_type: 'inbound' })).toBe(false);
    expect(await m.registry.metrics()).toContain('voice_call_action_failures_total{action="hang_up",call_type="inbound"} 1');
  });
  it('counts discarded preemptive generations and their tokens pushed by job processes', async () => {
    const m = new WorkerMetrics();
    const labels = { provider: 'openai', model: 'gpt', call_type: 'web' };
    expect(m.apply({ op: 'preemptive_waste', labels, tokens: 14, generations: 1 })).toBe(true);
    expect(m.apply({ op: 'preemptive_waste', labels, tokens: 3, generations: 0 })).toBe(true);
    expect(m.apply({ op: 'preemptive_waste', labels, tokens: 'many', generations: 1 })).toBe(false);
    const text = await m.registry.metrics();
    expect(text).toContain('voice_preemptive_discarded_total{provider="openai",model="gpt",call_type="web"} 1');
    expect(text).toContain('voice_preemptive_wasted_tokens_total{provider="openai",model="gpt",call_type="web"} 17');
  });
  it("records job processes' first audio (and hands its job id to the fork deferral) and start-up loop stalls", async () => {
    const m = new WorkerMetrics();
    const released: string[] = [];
    m.onFirstAudio = (id) => released.push(id);
    expect(m.apply({ op: 'first_audio', call_type: 'web', job_id: 'AJ_1', seconds: 0.42 })).toBe(true);
    expect(m.apply({ op: 'first_audio', call_type: 'web', job_id: 7, seconds: 0.42 })).toBe(false);
    expect(m.apply({ op: 'start_loop_blocks', call_type: 'inbound', count: 2 })).toBe(true);
    expect(m.apply({ op: 'start_loop_blocks', call_type: 'inbound', count: 'two' })).toBe(false);
    expect(released).toEqual(['AJ_1']);
    const text = await m.registry.metrics();
    expect(text).toContain('voice_first_audio_seconds_bucket{le="0.5",call_type="web"} 1');
    expect(text).toContain('voice_start_loop_blocks_total{call_type="inbound"} 2');
  });
  it('counts waiting standby agents apart from calls, and forks a waiting one\'s replacement at once', async () => {
    let jobs = 3;
    const m: WorkerMetrics = new WorkerMetrics({ activeCalls: () => jobs - m.standbyJobs.size });
    const released: string[] = [];
    m.onFirstAudio = (id) => released.push(id);
    expect(m.apply({ op: 'standby', job_id: 'AJ_s', waiting: true })).toBe(true);
    expect(m.apply({ op: 'standby', job_id: 'AJ_s', waiting: 'yes' })).toBe(false);
    expect(released).toEqual(['AJ_s']);
    let text = await m.registry.metrics();
    expect(text).toContain('voice_standby_agents 1');
    expect(text).toContain('voice_active_calls 2');
    // Given a call, it is a call.
    expect(m.apply({ op: 'standby', job_id: 'AJ_s', waiting: false })).toBe(true);
    jobs = 3;
    text = await m.registry.metrics();
    expect(text).toContain('voice_standby_agents 0');
    expect(text).toContain('voice_active_calls 3');
    expect(released).toEqual(['AJ_s']);
  });
  it('counts pauses no word confirmed (false interruptions) pushed by job processes, resumed or not', async () => {
    const m = new WorkerMetrics();
    expect(m.apply({ op: 'false_interruption', call_type: 'inbound', resumed: true })).toBe(true);
    expect(m.apply({ op: 'false_interruption', call_type: 'inbound', resumed: true })).toBe(true);
    expect(m.apply({ op: 'false_interruption', call_type: 'web', resumed: false })).toBe(true);
    expect(m.apply({ op: 'false_interruption', call_type: 'web', resumed: 'yes' })).toBe(false);
    const text = await m.registry.metrics();
    expect(text).toContain('voice_false_interruptions_total{call_type="inbound",resumed="yes"} 2');
    expect(text).toContain('voice_false_interruptions_total{call_type="web",resumed="no"} 1');
  });
});

describe('leak-free race', () => {
  it('behaves as Promise.race', async () => {
    const never = new Promise(() => {});
    expect(await leakFreeRace([Promise.resolve(1), never])).toBe(1);
    await expect(leakFreeRace([Promise.reject(new Error('x')), never])).rejects.toThrow('x');
    let resolveLong!: (v: string) => void;
    const long = new Promise<string>((r) => (resolveLong = r));
    const pending = leakFreeRace([new Promise(() => {}), long]);
    resolveLong('late');
    expect(await pending).toBe('late');
    expect(await leakFreeRace([long, never])).toBe('late'); // an already-settled long-lived promise still wins
  });
  it('does not retain the results of past races on a long-lived promise (measured with a real GC)', async () => {
    // The measurement needs a collector it can call: --expose-gc set at run time gives one to a new context,
    // so this runs (and can fail) in every test run, not only under `node --expose-gc`.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const retainedAfter = async (race: (values: unknown[]) => Promise<unknown>) => {
      const never = new Promise(() => {});
      const refs: WeakRef<object>[] = [];
      for (let i = 0; i < 200; i++) {
        const value = { big: new Uint8Array(1024) };
        refs.push(new WeakRef(value));
        await race([Promise.resolve(value), never]);
      }
      await new Promise((r) => setImmediate(r));
      gc();
      const retained = refs.filter((r) => r.deref()).length;
      void never; // kept alive to here, as agents-js keeps its abort promise for the whole session
      return retained;
    };
    // The control: the built-in race keeps every result reachable from the long-lived promise. If it did not,
    // this test could not tell a leak from none.
    expect(await retainedAfter((v) => Promise.race(v))).toBeGreaterThan(150);
    expect(await retainedAfter((v) => leakFreeRace(v))).toBeLessThan(5);
  });
  it('is pinned to the agents-js release it patches, and refuses another', () => {
    expect(installedAgentsVersion()).toBe(PATCHED_AGENTS_VERSION);
    expect(() => assertRaceFixTarget()).not.toThrow();
    expect(() => assertRaceFixTarget('1.9.1')).toThrow(RaceFixVersionError);
  });
});

describe('worker plumbing', () => {
  it('combines CPU and call slots into the load', () => {
    expect(combineLoad(0.2, 5, 10)).toBe(0.5);
    expect(combineLoad(0.9, 1, 10)).toBe(0.9);
    expect(combineLoad(0, 12, 10)).toBe(1);
  });
  it('reads the call id from dispatch or room metadata', () => {
    expect(callIdFromMetadata('', 'not json', '{"call_id":"c_1"}')).toBe('c_1');
    expect(callIdFromMetadata('{"call_id":"a"}', '{"call_id":"b"}')).toBe('a');
    expect(callIdFromMetadata(undefined, '{}')).toBe(null);
    // The capability comes from the dispatch metadata only (the caller can read room metadata).
    expect(capabilityFromJobMetadata('{"call_id":"a","capability":"vcap1.1.x"}')).toBe('vcap1.1.x');
    // The control plane's dispatch carries a ticket (it opens the config, which brings the capability).
    expect(capabilityFromJobMetadata('{"call_id":"a","ticket":"vtkt1.1.x"}')).toBe('vtkt1.1.x');
    expect(capabilityFromJobMetadata('not json')).toBe(null);
    expect(capabilityFromJobMetadata('{"capability":7}')).toBe(null);
  });
  it('ships decodable ambient loops', () => {
    for (const name of AMBIENT_SOUNDS) {
      const { samples, sampleRate } = readWav(ambientPath(name));
      expect(sampleRate).toBe(16000);
      expect(samples.length).toBeGreaterThan(16000);
    }
  });
});
