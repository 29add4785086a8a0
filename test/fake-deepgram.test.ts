// The Deepgram stand-in driven by the real @livekit/agents-plugin-deepgram client: what the worker will see.
import { initializeLogger, stt } from '@livekit/agents';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import { AudioFrame } from '@livekit/rtc-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeDeepgram, type DeepgramConnection, type FakeDeepgram, type Script } from './support/fake-deepgram.ts';
import { resample, synthesize, type Pcm } from './support/speech.ts';
import { upgradeStatus } from './support/ws-upgrade.ts';

const { SpeechEventType } = stt;
const RATE = 16000;

let dg: FakeDeepgram;
beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'warn' });
  dg = await startFakeDeepgram({ finalDelayMs: 200, apiKeys: ['test-key'] });
});
afterAll(async () => {
  await dg.close();
});

/** Speech segments joined by silences, and the script that labels them. */
async function utterance(parts: (string | number)[]): Promise<{ pcm: Pcm; script: Script }> {
  const chunks: Int16Array[] = [];
  const script: Script = { segments: [] };
  let at = 0;
  for (const p of parts) {
    const samples = typeof p === 'number' ? new Int16Array(Math.round((p / 1000) * RATE)) : trim(resample(await synthesize(p, 'espeak-ng'), RATE).samples);
    if (typeof p === 'string') script.segments.push({ text: p, startMs: (at / RATE) * 1000, endMs: ((at + samples.length) / RATE) * 1000 });
    chunks.push(samples);
    at += samples.length;
  }
  const samples = new Int16Array(at);
  let o = 0;
  for (const c of chunks) {
    samples.set(c, o);
    o += c.length;
  }
  return { pcm: { samples, sampleRate: RATE }, script };
}

function trim(s: Int16Array): Int16Array {
  let a = 0;
  let b = s.length;
  while (a < b && Math.abs(s[a]!) < 300) a++;
  while (b > a && Math.abs(s[b - 1]!) < 300) b--;
  return s.slice(a, b);
}

/**
 * Pushes audio in 10 ms frames at real time, as a room's audio stream does. `stallMs`: a sender held up that
 * long (at the start, or `stallAtMs` into the audio), which then sends the audio it owes at once and goes on in
 * real time.
 */
async function play(stream: stt.SpeechStream, pcm: Pcm, stallMs = 0, stallAtMs = 0): Promise<void> {
  const step = RATE / 100;
  const t0 = performance.now();
  for (let i = 0, k = 0; i < pcm.samples.length; i += step, k++) {
    if (stallMs && k === Math.round(stallAtMs / 10)) await new Promise((r) => setTimeout(r, stallMs));
    const frame = new Int16Array(step);
    frame.set(pcm.samples.subarray(i, Math.min(i + step, pcm.samples.length)));
    stream.pushFrame(new AudioFrame(frame, RATE, 1, step));
    const wait = t0 + (k + 1) * 10 - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
}

async function collect(stream: stt.SpeechStream, into: stt.SpeechEvent[]): Promise<void> {
  for await (const ev of stream) into.push(ev);
}

const finals = (evs: stt.SpeechEvent[]) => evs.filter((e) => e.type === SpeechEventType.FINAL_TRANSCRIPT).map((e) => e.alternatives![0].text);

const PAUSED = ["I'd like to book a table for", 700, 'four people on Friday.', 1200];

/**
 * The paused sentence through the plugin and the stand-in, played in real time (`stall`: play()'s hold-up, given
 * the script to place it); resolves once the stream closed, with every event the plugin gave.
 */
async function transcribePaused(stall?: (script: Script) => [number, number]): Promise<{ events: stt.SpeechEvent[]; conn: DeepgramConnection }> {
  const { pcm, script } = await utterance(PAUSED);
  const engine = new deepgram.STT({ apiKey: 'test-key', baseUrl: dg.url, language: 'en-US' });
  const stream = engine.stream();
  const conn = await dg.nextConnection();
  conn.expect(script);
  const events: stt.SpeechEvent[] = [];
  const reading = collect(stream, events);
  await play(stream, pcm, ...(stall ? stall(script) : []));
  stream.endInput();
  await reading;
  await engine.close();
  return { events, conn };
}

describe('Deepgram stand-in with the deepgram plugin', () => {
  it('a paused sentence: start, interims, a final per stretch of speech with its words, an endpoint after each, then the close handshake', async () => {
    const { events, conn } = await transcribePaused();

    expect(conn.params.get('encoding')).toBe('linear16');
    expect(conn.params.get('sample_rate')).toBe('16000');
    expect(conn.params.get('interim_results')).toBe('true');
    expect(finals(events)).toEqual(["I'd like to book a table for", 'four people on Friday.']);
    const types = events.map((e) => e.type).filter((t) => t !== SpeechEventType.RECOGNITION_USAGE);
    expect(types[0]).toBe(SpeechEventType.START_OF_SPEECH);
    expect(types).toContain(SpeechEventType.INTERIM_TRANSCRIPT);
    // Each final is followed by the endpoint (speech_final), and speech starts again for the second part.
    expect(types.filter((t) => t === SpeechEventType.END_OF_SPEECH)).toHaveLength(2);
    expect(types.filter((t) => t === SpeechEventType.START_OF_SPEECH)).toHaveLength(2);
    const final = events.find((e) => e.type === SpeechEventType.FINAL_TRANSCRIPT)!;
    expect(final.alternatives![0].words?.map((w) => w.text)).toEqual(["I'd", 'like', 'to', 'book', 'a', 'table', 'for']);
    expect(conn.control).toContain('CloseStream');
    expect(conn.sent.at(-1)?.type).toBe('Metadata');
  });

  it('hears the words on the audio clock: a sender that stalls, then catches up, still gets every word in its finals', async () => {
    // The whole first stretch of speech arrives in one burst.
    const { events } = await transcribePaused((script) => [script.segments[0]!.endMs, 0]);
    expect(finals(events)).toEqual(["I'd like to book a table for", 'four people on Friday.']);
  });

  it('finds the endpoint on the audio clock: a sender held up mid-word for longer than the final delay cuts no word', async () => {
    // Held up for 600 ms (three times the final delay) half-way through the first stretch of speech.
    const { events } = await transcribePaused((script) => [600, (script.segments[0]!.startMs + script.segments[0]!.endMs) / 2]);
    expect(finals(events)).toEqual(["I'd like to book a table for", 'four people on Friday.']);
  });

  it('the final comes the configured delay after the last speech, not before', async () => {
    dg.setFinalDelay(300);
    try {
      const { pcm, script } = await utterance(['What time do you open tomorrow?', 900]);
      const engine = new deepgram.STT({ apiKey: 'test-key', baseUrl: dg.url, language: 'en-US' });
      const stream = engine.stream();
      const conn = await dg.nextConnection();
      conn.expect(script);
      const events: stt.SpeechEvent[] = [];
      const reading = collect(stream, events);
      const t0 = Date.now();
      await play(stream, pcm);
      stream.endInput();
      await reading;
      const speechEnd = t0 + script.segments[0]!.endMs;
      const final = conn.sent.find((m) => m.is_final)!;
      expect(final.transcript).toBe('What time do you open tomorrow?');
      // The order of events, with the delay as a lower bound only (a busy machine delays, never hastens).
      expect(final.at - speechEnd).toBeGreaterThanOrEqual(300 - 110);
      await engine.close();
    } finally {
      dg.setFinalDelay(200);
    }
  });

  it('Finalize (the stream flushed) sends the pending words at once', async () => {
    const { pcm, script } = await utterance(['Can I pay with a credit card?']);
    const engine = new deepgram.STT({ apiKey: 'test-key', baseUrl: dg.url, language: 'en-US' });
    const stream = engine.stream();
    const conn = await dg.nextConnection();
    conn.expect(script);
    const events: stt.SpeechEvent[] = [];
    const reading = collect(stream, events);
    await play(stream, pcm);
    stream.flush();
    await new Promise((r) => setTimeout(r, 100));
    stream.endInput();
    await reading;
    expect(conn.control).toContain('Finalize');
    expect(finals(events)).toEqual(['Can I pay with a credit card?']);
    await engine.close();
  });

  it('two connections at once keep their own labels (scripts pushed over the side endpoint too)', async () => {
    const a = await utterance(['Where is your nearest store?', 900]);
    const b = await utterance(['My order never arrived.', 900]);
    const engines = [0, 1].map(() => new deepgram.STT({ apiKey: 'test-key', baseUrl: dg.url, language: 'en-US' }));
    const sa = engines[0]!.stream();
    const ca = await dg.nextConnection();
    const sb = engines[1]!.stream();
    const cb = await dg.nextConnection();
    ca.expect(a.script);
    const res = await fetch(`${dg.httpUrl}/_scripts/${cb.id}`, { method: 'POST', body: JSON.stringify(b.script) });
    expect(res.status).toBe(204);
    const ea: stt.SpeechEvent[] = [];
    const eb: stt.SpeechEvent[] = [];
    const ra = collect(sa, ea);
    const rb = collect(sb, eb);
    await Promise.all([play(sa, a.pcm), play(sb, b.pcm)]);
    sa.endInput();
    sb.endInput();
    await Promise.all([ra, rb]);
    expect(finals(ea)).toEqual(['Where is your nearest store?']);
    expect(finals(eb)).toEqual(['My order never arrived.']);
    for (const e of engines) await e.close();
  });

  it('expectNext: an utterance left open (its last words never heard) does not put the next label out of step', async () => {
    // The first utterance's label has two stretches of speech, but only the first is spoken.
    const open = await utterance(['Could you check whether', 900, 'my package has shipped?']);
    const heard = await utterance(['Could you check whether', 900]);
    const next = await utterance(['My order never arrived.', 900]);
    const run = async (queue: 'expect' | 'expectNext') => {
      const engine = new deepgram.STT({ apiKey: 'test-key', baseUrl: dg.url, language: 'en-US' });
      const stream = engine.stream();
      const conn = await dg.nextConnection();
      const events: stt.SpeechEvent[] = [];
      const reading = collect(stream, events);
      conn[queue](open.script);
      await play(stream, heard.pcm);
      conn[queue](next.script);
      await play(stream, next.pcm);
      stream.endInput();
      await reading;
      await engine.close();
      return finals(events);
    };
    // Queued in order, the next utterance's audio gets the rest of the open one's words.
    expect(await run('expect')).toEqual(['Could you check whether', 'my package has shipped?']);
    expect(await run('expectNext')).toEqual(['Could you check whether', 'My order never arrived.']);
  });

  it('refuses a connection without the right key, as the service does (401 on the upgrade)', async () => {
    // The upgrade request as a WebSocket client sends it; the answer's status is what the client reports.
    const status = (headers: Record<string, string>) => upgradeStatus(`${dg.httpUrl}/v1/listen?encoding=linear16&sample_rate=16000`, headers);
    expect(await status({ authorization: 'Token wrong' })).toBe(401);
    expect(await status({})).toBe(401);
    expect(await status({ authorization: 'Token test-key' })).toBe(101);
  });
});
