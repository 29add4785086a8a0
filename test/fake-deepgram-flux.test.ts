// The Flux stand-in (/v2/listen) driven by the real @livekit/agents-plugin-deepgram STTv2 client: the messages
// Deepgram's state machine allows, in its order, and the plugin's speech events from them. Orders and outcomes
// only; the audio clock (what the stand-in had received when it sent a message) places events in the audio.
import { initializeLogger, stt } from '@livekit/agents';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeDeepgram, type FakeDeepgram, type FluxConnection } from './support/fake-deepgram.ts';
import { fluxParams } from './support/fake-deepgram-flux.ts';
import { playInto, spoken } from './support/spoken.ts';
import { upgradeStatus } from './support/ws-upgrade.ts';

const { SpeechEventType } = stt;

let dg: FakeDeepgram;
beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'warn' });
  dg = await startFakeDeepgram({ apiKeys: ['test-key'] });
});
afterAll(async () => {
  await dg.close();
});

/** Speaks `parts` to a Flux stream of the plugin; resolves once the stream closed, with the plugin's events. */
async function transcribe(parts: (string | number)[], opts: Partial<deepgram.STTv2Options> = {}): Promise<{ events: stt.SpeechEvent[]; conn: FluxConnection; speechEndsMs: number[] }> {
  const { pcm, script } = await spoken(parts);
  const engine = new deepgram.STTv2({ apiKey: 'test-key', endpointUrl: `${dg.url}/v2/listen`, ...opts });
  const stream = engine.stream();
  const conn = await dg.nextFluxConnection();
  conn.expect(script);
  const events: stt.SpeechEvent[] = [];
  const reading = (async () => {
    for await (const ev of stream) events.push(ev);
  })();
  await playInto(stream, pcm);
  stream.endInput();
  await reading;
  await engine.close();
  return { events, conn, speechEndsMs: script.segments.map((s) => s.endMs) };
}

const kinds = (events: stt.SpeechEvent[]) =>
  events.map((e) => e.type).filter((t) => t !== SpeechEventType.RECOGNITION_USAGE && t !== SpeechEventType.INTERIM_TRANSCRIPT);
const texts = (events: stt.SpeechEvent[], type: stt.SpeechEventType) => events.filter((e) => e.type === type).map((e) => e.alternatives![0].text);

describe('Flux stand-in with the deepgram plugin (STTv2)', () => {
  it('a finished sentence: Connected, StartOfTurn, Updates, EagerEndOfTurn, then EndOfTurn with the same transcript', async () => {
    const { events, conn } = await transcribe(['What time do you open tomorrow?', 1200], { eagerEotThreshold: 0.5 });

    expect(conn.params.get('model')).toBe('flux-general-en');
    expect(conn.params.get('encoding')).toBe('linear16');
    expect(conn.params.get('sample_rate')).toBe('16000');
    expect(conn.params.get('eager_eot_threshold')).toBe('0.5');
    expect(conn.sent[0]!.type).toBe('Connected');
    expect(conn.events()).toEqual(['StartOfTurn', 'EagerEndOfTurn', 'EndOfTurn']);
    expect(conn.events(true)).toContain('Update');
    const eager = conn.sent.find((m) => m.event === 'EagerEndOfTurn')!;
    const end = conn.sent.find((m) => m.event === 'EndOfTurn')!;
    expect(end.transcript).toBe(eager.transcript);
    expect(end.transcript).toBe('What time do you open tomorrow.');
    expect(end.confidence!).toBeGreaterThanOrEqual(0.7);
    expect(eager.confidence!).toBeGreaterThanOrEqual(0.5);
    // The plugin: one user turn, the early transcript before the final.
    expect(kinds(events)).toEqual([SpeechEventType.START_OF_SPEECH, SpeechEventType.PREFLIGHT_TRANSCRIPT, SpeechEventType.FINAL_TRANSCRIPT, SpeechEventType.END_OF_SPEECH]);
    expect(texts(events, SpeechEventType.FINAL_TRANSCRIPT)).toEqual(['What time do you open tomorrow.']);
    expect(texts(events, SpeechEventType.INTERIM_TRANSCRIPT).length).toBeGreaterThan(0);
    expect(conn.control).toContain('CloseStream');
  });

  it('a pause after an open word: EagerEndOfTurn in the pause, TurnResumed when the caller goes on, one turn for the whole sentence', async () => {
    const { events, conn, speechEndsMs } = await transcribe(["I'd like to book a table for", 900, 'four people on Friday.', 1200], { eagerEotThreshold: 0.5 });

    expect(conn.events()).toEqual(['StartOfTurn', 'EagerEndOfTurn', 'TurnResumed', 'EagerEndOfTurn', 'EndOfTurn']);
    const [firstEager, resumed] = conn.sent.filter((m) => m.event === 'EagerEndOfTurn' || m.event === 'TurnResumed');
    // The eager end is in the pause (the audio had reached the pause, not the next words), the resumption after it.
    expect(firstEager!.audioMs).toBeGreaterThan(speechEndsMs[0]!);
    expect(firstEager!.transcript).toBe("I'd like to book a table for.");
    expect(resumed!.audioMs).toBeGreaterThan(speechEndsMs[0]! + 900);
    // TurnResumed carries the turn's words so far; the new ones come in the Updates after it.
    expect(resumed!.transcript).toBe("I'd like to book a table for");
    expect(conn.finals()).toEqual(["I'd like to book a table for four people on Friday."]);
    // One turn: every message up to its EndOfTurn has turn_index 0 (the index moves on right after it).
    const upToEnd = conn.sent.slice(0, conn.sent.findIndex((m) => m.event === 'EndOfTurn') + 1).filter((m) => m.type === 'TurnInfo');
    expect(new Set(upToEnd.map((m) => m.turnIndex))).toEqual(new Set([0]));
    // The plugin: a preflight, interims with the words that follow (TurnResumed and Updates), another preflight, one final.
    expect(kinds(events)).toEqual([
      SpeechEventType.START_OF_SPEECH,
      SpeechEventType.PREFLIGHT_TRANSCRIPT,
      SpeechEventType.PREFLIGHT_TRANSCRIPT,
      SpeechEventType.FINAL_TRANSCRIPT,
      SpeechEventType.END_OF_SPEECH,
    ]);
    const afterFirstPreflight = events.slice(events.findIndex((e) => e.type === SpeechEventType.PREFLIGHT_TRANSCRIPT) + 1);
    expect(texts(afterFirstPreflight, SpeechEventType.INTERIM_TRANSCRIPT).some((t) => t.includes('four'))).toBe(true);
  });

  it('without eager_eot_threshold there is no EagerEndOfTurn nor TurnResumed (Deepgram sends them only when asked)', async () => {
    const { conn, events } = await transcribe(['What time do you open tomorrow?', 1200]);
    expect(conn.params.has('eager_eot_threshold')).toBe(false);
    expect(conn.events()).toEqual(['StartOfTurn', 'EndOfTurn']);
    expect(texts(events, SpeechEventType.PREFLIGHT_TRANSCRIPT)).toEqual([]);
  });

  it('eot_timeout_ms ends a turn in a long pause whatever the confidence: two turns, the second a new turn_index', async () => {
    const { conn, speechEndsMs } = await transcribe(["I'd like to book a table for", 1500, 'four people on Friday.', 1200], { eagerEotThreshold: 0.5, eotTimeoutMs: 800 });
    expect(conn.params.get('eot_timeout_ms')).toBe('800');
    expect(conn.finals()).toEqual(["I'd like to book a table for.", 'Four people on Friday.']);
    const ends = conn.sent.filter((m) => m.event === 'EndOfTurn');
    // The first ended in the pause (audio clock), after at least the timeout's silence.
    expect(ends[0]!.audioMs).toBeGreaterThanOrEqual(speechEndsMs[0]! + 800);
    expect(ends[0]!.audioMs).toBeLessThan(speechEndsMs[0]! + 1500);
    expect(ends.map((m) => m.turnIndex)).toEqual([0, 1]);
  });

  it('checks the handshake as Deepgram does: the key (401), then the parameters (400)', async () => {
    const status = (query: string, headers: Record<string, string>) => upgradeStatus(`${dg.httpUrl}/v2/listen?${query}`, headers);
    const ok = 'model=flux-general-en&encoding=linear16&sample_rate=16000';
    expect(await status(ok, { authorization: 'Token wrong' })).toBe(401);
    expect(await status(ok, {})).toBe(401);
    expect(await status('model=nova-3&encoding=linear16&sample_rate=16000', { authorization: 'Token test-key' })).toBe(400);
    expect(await status(`${ok}&eot_threshold=0.6&eager_eot_threshold=0.8`, { authorization: 'Token test-key' })).toBe(400);
    expect(await status(ok, { authorization: 'Token test-key' })).toBe(101);
    await dg.nextFluxConnection();
  });

  it("reads the parameters' ranges from Deepgram's reference", () => {
    const q = (s: string) => fluxParams(new URLSearchParams(`model=flux-general-en&encoding=linear16&sample_rate=16000&${s}`));
    expect(q('')).toEqual({ model: 'flux-general-en', sampleRate: 16000, eotThreshold: 0.7, eagerThreshold: null, eotTimeoutMs: 5000 });
    expect(q('eot_timeout_ms=400')).toMatch(/eot_timeout_ms/);
    expect(q('eager_eot_threshold=0.2')).toMatch(/eager_eot_threshold/);
    expect(q('eot_threshold=0.9&eager_eot_threshold=0.9&eot_timeout_ms=60000')).toMatchObject({ eotThreshold: 0.9, eagerThreshold: 0.9, eotTimeoutMs: 60000 });
  });
});
