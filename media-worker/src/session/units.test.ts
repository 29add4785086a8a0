// Unit tests of the pieces around the voice loop.
import { AudioFrame } from '@livekit/rtc-node';
import { describe, expect, it } from 'vitest';
import { combineLoad } from '../load.ts';
import { WorkerMetrics, nullSink } from '../metrics.ts';
import { callIdFromMetadata } from '../worker-metadata.ts';
import { readWav, ambientPath, AMBIENT_SOUNDS } from './background.ts';
import { matchesEndPhrase } from './call-session.ts';
import { endpointingFor, interruptionFor } from './mappings.ts';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { PATCHED_AGENTS_VERSION, RaceFixVersionError, assertRaceFixTarget, installedAgentsVersion, leakFreeRace } from './race-fix.ts';
import { TurnMetrics } from './turn-metrics.ts';
import { hangUpRoom } from './hang-up.ts';
import { RoomServiceClient } from 'livekit-server-sdk';
import { BeepDetector, VoicemailClassifier, transcriptLooksLikeVoicemail } from './voicemail.ts';

const labels = { stt: { provider: 'local', model: 's' }, llm: { provider: 'openai', model: 'm' }, tts: { provider: 'local', model: 't' } };

describe('mappings', () => {
  it('maps responsiveness to endpointing delays', () => {
    expect(endpointingFor(0)).toEqual({ minDelay: 1000, maxDelay: 4000 });
    expect(endpointingFor(0.5)).toEqual({ minDelay: 600, maxDelay: 2500 });
    expect(endpointingFor(1)).toEqual({ minDelay: 200, maxDelay: 1000 });
  });
  it('maps interruption sensitivity to minimum duration and words', () => {
    expect(interruptionFor(0)).toEqual({ minDuration: 1500, minWords: 3 });
    expect(interruptionFor(0.5)).toEqual({ minDuration: 800, minWords: 1 });
    expect(interruptionFor(1)).toEqual({ minDuration: 100, minWords: 0 });
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
    expect(new VoicemailClassifier().onTranscript('hello?')).toBe('human');
    expect(new VoicemailClassifier().onTranscript('the person you are calling is not available')).toBe('machine');
    expect(new VoicemailClassifier().onTranscript('one two three four five six seven eight nine ten eleven twelve thirteen fourteen')).toBe('machine');
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
  it('accepts observations pushed by job processes', () => {
    const m = new WorkerMetrics();
    expect(m.apply({ op: 'latency', kind: 'e2e', labels: { provider: 'a', model: 'b', call_type: 'web' }, seconds: 0.9 })).toBe(true);
    expect(m.apply({ op: 'nope' })).toBe(false);
  });
  it('logs and counts a hang-up whose room cannot be deleted, without throwing', async () => {
    // A real RoomService client against a port nothing listens on: the request itself fails.
    const rooms = new RoomServiceClient('http://127.0.0.1:9', 'key', 'secret-secret-secret-secret-secret');
    const logged: unknown[] = [];
    const m = new WorkerMetrics();
    const ok = await hangUpRoom({ rooms, room: 'call-x', callId: 'call_x', callType: 'inbound', logger: { error: (o: unknown) => logged.push(o) } as never, metrics: m });
    expect(ok).toBe(false);
    expect(logged).toEqual([expect.objectContaining({ call_id: 'call_x', room: 'call-x', err: expect.anything() })]);
    expect(await m.registry.metrics()).toContain('voice_call_action_failures_total{action="hang_up",call_type="inbound"} 1');
  });
  it('counts failed room actions (a hang-up whose room could not be deleted)', async () => {
    const m = new WorkerMetrics();
    expect(m.apply({ op: 'action_failed', action: 'hang_up', call_type: 'inbound' })).toBe(true);
    expect(m.apply({ op: 'action_failed', action: 'explode', call_type: 'inbound' })).toBe(false);
    expect(await m.registry.metrics()).toContain('voice_call_action_failures_total{action="hang_up",call_type="inbound"} 1');
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
  });
  it('ships decodable ambient loops', () => {
    for (const name of AMBIENT_SOUNDS) {
      const { samples, sampleRate } = readWav(ambientPath(name));
      expect(sampleRate).toBe(16000);
      expect(samples.length).toBeGreaterThan(16000);
    }
  });
});
