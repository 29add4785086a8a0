import { APIError, initializeLogger, stt, type STTMetrics } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { LocalSTT } from './local-stt.ts';
import { LocalTTS } from './local-tts.ts';

/** The error event's payload (the type itself is not exported by agents). */
type STTError = { error: Error; recoverable: boolean };

beforeAll(() => {
  initializeLogger({ pretty: false, level: 'warn' });
});

const { SpeechEventType } = stt;

/** Festival speech (32 kHz), the voice pocketsphinx recognises best, as frames. */
async function speak(text: string): Promise<AudioFrame[]> {
  const engine = new LocalTTS({ model: 'festival' });
  try {
    const frames: AudioFrame[] = [];
    for await (const audio of engine.synthesize(text)) frames.push(audio.frame);
    return frames;
  } finally {
    await engine.close();
  }
}

function silence(ms: number, sampleRate: number): AudioFrame {
  const n = Math.round((sampleRate * ms) / 1000);
  return new AudioFrame(new Int16Array(n), sampleRate, 1, n);
}

async function transcribe(engine: LocalSTT, frames: AudioFrame[], flush = true): Promise<stt.SpeechEvent[]> {
  const stream = engine.stream();
  for (const frame of frames) stream.pushFrame(frame);
  if (flush) stream.flush();
  stream.endInput();
  const events: stt.SpeechEvent[] = [];
  for await (const ev of stream) events.push(ev);
  return events;
}

const finals = (events: stt.SpeechEvent[]) =>
  events.filter((e) => e.type === SpeechEventType.FINAL_TRANSCRIPT).map((e) => e.alternatives![0].text);

describe('LocalSTT', () => {
  it('transcribes festival speech: start, interim, final with word times, end, and usage', async () => {
    const frames = await speak('I would like to book a table for two people tomorrow evening.');
    const engine = new LocalSTT();
    const metrics: STTMetrics[] = [];
    engine.on('metrics_collected', (m) => metrics.push(m));
    const events = await transcribe(engine, [...frames, silence(800, 32000)], false);

    const types = events.map((e) => e.type);
    const start = types.indexOf(SpeechEventType.START_OF_SPEECH);
    const final = types.indexOf(SpeechEventType.FINAL_TRANSCRIPT);
    const end = types.indexOf(SpeechEventType.END_OF_SPEECH);
    expect(start).toBeGreaterThanOrEqual(0);
    expect(types.slice(start, final)).toContain(SpeechEventType.INTERIM_TRANSCRIPT);
    expect(end).toBeGreaterThan(final);

    const text = finals(events).join(' ');
    for (const word of ['like', 'table', 'two', 'people', 'tomorrow', 'evening']) expect(text.split(' ')).toContain(word);
    const data = events[final]!.alternatives![0];
    expect(data.language).toBe('en-US');
    expect(data.words!.length).toBeGreaterThan(5);
    expect(data.endTime).toBeGreaterThan(data.startTime);
    expect(data.confidence).toBeGreaterThan(0);
    expect(events[end]!.alternatives![0].text).toBe(data.text);

    const audioSeconds = frames.reduce((s, f) => s + f.samplesPerChannel / f.sampleRate, 0) + 0.8;
    const usage = events.filter((e) => e.type === SpeechEventType.RECOGNITION_USAGE);
    const reported = usage.reduce((s, e) => s + e.recognitionUsage!.audioDuration, 0);
    expect(Math.abs(reported - audioSeconds)).toBeLessThan(0.02);
    await vi.waitFor(() => expect(metrics.length).toBe(usage.length));
    expect(metrics[0]).toMatchObject({ type: 'stt_metrics', label: 'local.STT', streamed: true, metadata: { modelProvider: 'local', modelName: 'pocketsphinx-en-us' } });
  });

  it('takes the helper started ahead (prewarm) when its options match, and transcribes with it', async () => {
    const frames = await speak('I would like to book a table for two people tomorrow evening.');
    const spare = LocalSTT.prewarm();
    const engine = new LocalSTT();
    const spawned = vi.spyOn(engine, '_spawnHelper');
    const events = await transcribe(engine, [...frames, silence(800, 32000)], false);
    const child = spawned.mock.results[0]!.value as { spawnargs: string[]; pid: number };
    expect(child.pid).toBe(spare.pid);
    // The spare is taken once: the next helper is a new process.
    LocalSTT.prewarm();
    const other = new LocalSTT({ endSilenceMs: 600 });
    const fresh = other._spawnHelper();
    expect(fresh.pid).not.toBe(child.pid);
    fresh.kill('SIGKILL');
    const text = finals(events).join(' ');
    for (const word of ['table', 'two', 'people']) expect(text.split(' ')).toContain(word);
  });

  it('starts its own helper when the spare was started with other options', () => {
    LocalSTT.prewarm({ endSilenceMs: 400 });
    const a = new LocalSTT({ endSilenceMs: 700 })._spawnHelper();
    // The spare (400 ms) did not fit and was stopped; this one was started with the STT's own options.
    expect(a.spawnargs.at(-1)).toContain('"vadPostspeech":70');
    a.kill('SIGKILL');
    LocalSTT.prewarm();
    const b = new LocalSTT()._spawnHelper();
    expect(b.spawnargs.at(-1)).toContain('"vadPostspeech":40');
    b.kill('SIGKILL');
  });

  it('ends the utterance at once on flush, and separates utterances', async () => {
    const engine = new LocalSTT();
    const one = await speak('Good morning.');
    const two = await speak('Thank you very much.');
    const stream = engine.stream();
    for (const frame of one) stream.pushFrame(frame);
    stream.flush();
    const events: stt.SpeechEvent[] = [];
    for await (const ev of stream) {
      events.push(ev);
      if (ev.type === SpeechEventType.END_OF_SPEECH) break;
    }
    // No trailing silence was sent: only the flush can have ended it.
    expect(finals(events)).toEqual(['good morning']);
    for (const frame of two) stream.pushFrame(frame);
    stream.flush();
    stream.endInput();
    for await (const ev of stream) events.push(ev);
    expect(finals(events)).toEqual(['good morning', 'thank you very much']);
    expect(events.filter((e) => e.type === SpeechEventType.START_OF_SPEECH)).toHaveLength(2);
  });

  // A near-silent start used to open a wordless pocketsphinx utterance whose end moved the live cepstral
  // mean to the noise: the first real utterance then came out late and wrong, the later ones right.
  it.each([
    ['a resampler dither over digital silence (+-1)', 1],
    ['a low noise floor (+-8)', 8],
  ])('recognises the first utterance after %s as well as the later ones', async (_name, amplitude) => {
    const speech = await speak('What time do you open tomorrow morning?');
    let seed = 7;
    const noisy = (f: AudioFrame) => {
      const data = new Int16Array(f.samplesPerChannel);
      for (let i = 0; i < data.length; i++) {
        seed = (seed * 1103515245 + 12345) & 0x7fffffff;
        data[i] = Math.max(-32768, Math.min(32767, f.data[i]! + ((seed % (2 * amplitude + 1)) - amplitude)));
      }
      return new AudioFrame(data, f.sampleRate, 1, f.samplesPerChannel);
    };
    const gap = () => Array.from({ length: 15 }, () => noisy(silence(100, 32000)));
    const frames = [...gap(), ...speech.map(noisy), ...gap(), ...speech.map(noisy), ...gap()];
    const texts = finals(await transcribe(new LocalSTT(), frames, false));
    expect(texts).toHaveLength(2);
    for (const text of texts) for (const word of ['what', 'time', 'tomorrow', 'morning']) expect(text.split(' ')).toContain(word);
  });

  it('recognises exactly with a JSGF grammar, from 48 kHz frames', async () => {
    const grammar = `#JSGF V1.0;
grammar orders;
public <order> = ( i want | i would like ) ( a pizza | two coffees | the soup ) [ please ];`;
    const frames32 = await speak('I would like two coffees please.');
    // Resampled by the stream's own resampler: feed it what a LiveKit room delivers.
    const mixed = mergeTo48k(frames32);
    const events = await transcribe(new LocalSTT({ grammar }), mixed);
    expect(finals(events)).toEqual(['i would like two coffees please']);
  });

  it('recognize() transcribes a whole buffer', async () => {
    const frames = await speak('Please call me back tomorrow.');
    const ev = await new LocalSTT({ grammar: '#JSGF V1.0;\ngrammar g;\npublic <s> = please call me back ( today | tomorrow );' }).recognize(frames);
    expect(ev.type).toBe(SpeechEventType.FINAL_TRANSCRIPT);
    expect(ev.alternatives![0].text).toBe('please call me back tomorrow');
  });

  it('fails for good when the helper cannot start (a bad grammar)', async () => {
    const engine = new LocalSTT({ grammar: 'this is not JSGF' });
    const errors: STTError[] = [];
    engine.on('error', (e) => errors.push(e));
    const events = await transcribe(engine, [silence(500, 16000)]);
    expect(finals(events)).toEqual([]);
    expect(errors).toHaveLength(1);
    expect(errors[0]!.error).toBeInstanceOf(APIError);
    expect((errors[0]!.error as APIError).retryable).toBe(false);
  });

  it('supports English only', () => {
    expect(() => new LocalSTT({ language: 'de-DE' })).toThrow(/English only/);
  });
});

/** Upsamples 32 kHz mono frames to 48 kHz stereo (sample-and-hold is enough for a test of plumbing). */
function mergeTo48k(frames: AudioFrame[]): AudioFrame[] {
  return frames.map((f) => {
    const n = Math.round((f.samplesPerChannel * 48000) / f.sampleRate);
    const data = new Int16Array(n * 2);
    for (let i = 0; i < n; i++) {
      const s = f.data[Math.min(f.samplesPerChannel - 1, Math.floor((i * f.sampleRate) / 48000))]!;
      data[2 * i] = s;
      data[2 * i + 1] = s;
    }
    return new AudioFrame(data, 48000, 2, n);
  });
}
