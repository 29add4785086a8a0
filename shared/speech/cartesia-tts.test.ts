import { APIStatusError, initializeLogger, type TTSMetrics } from '@livekit/agents';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MS_PER_CHARACTER, startFakeCartesia, type FakeCartesia } from '../../test/support/fake-cartesia.ts';
import { collect, type Audio } from '../../test/support/tts-stream.ts';
import { CartesiaTTS, cartesiaRequest } from './cartesia-tts.ts';

/** The error event's payload (the type itself is not exported by agents). */
type TTSError = { error: Error; recoverable: boolean };

let fake: FakeCartesia;
beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'error' });
  fake = await startFakeCartesia();
});
afterAll(async () => {
  await fake.close();
});

const quick = { maxRetry: 1, retryIntervalMs: 10, timeoutMs: 5000 };

const samples = (audio: Audio[]) => audio.reduce((s, a) => s + a.frame.samplesPerChannel, 0);

describe('CartesiaTTS', () => {
  it('synthesizes over /tts/bytes: headers, body, every PCM byte as 20 ms frames, metrics', async () => {
    fake.setResponder(() => ({}));
    const engine = new CartesiaTTS({ apiKey: fake.apiKey, baseURL: fake.url, voice: 'voice-1', speed: 1.2, emotion: ['excited'] });
    const metrics: TTSMetrics[] = [];
    engine.on('metrics_collected', (m) => metrics.push(m));
    const text = 'Hello from the Cartesia double.';
    const { audio } = await collect(engine.synthesize(text, quick));

    const req = fake.requests.at(-1)!;
    expect(req.headers['cartesia-version']).toBe('2025-04-16');
    expect(req.body).toEqual({
      model_id: 'sonic-3',
      transcript: text,
      voice: { mode: 'id', id: 'voice-1' },
      output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: 24000 },
      language: 'en',
      generation_config: { speed: 1.2, emotion: 'excited' },
    });
    // Odd-sized network chunks, yet no byte lost or shifted.
    expect(samples(audio)).toBe(Math.round((text.length * MS_PER_CHARACTER * 24000) / 1000));
    expect(audio.slice(0, -1).every((a) => a.frame.samplesPerChannel === 480)).toBe(true);
    expect(audio.filter((a) => a.final)).toHaveLength(1);
    expect(audio.at(-1)!.final).toBe(true);
    await vi.waitFor(() => expect(metrics).toHaveLength(1));
    expect(metrics[0]).toMatchObject({ label: 'cartesia.TTS', metadata: { modelProvider: 'cartesia', modelName: 'sonic-3' } });
  });

  it('maps speed and emotion to the experimental controls of older models', () => {
    const body = cartesiaRequest(
      { baseURL: '', sentenceTokenizer: undefined as never, model: 'sonic-2', voice: 'v', language: 'en', sampleRate: 16000, speed: 0.5, emotion: ['positivity:high'] },
      'Hi',
    );
    expect(body.voice).toEqual({ mode: 'id', id: 'v', __experimental_controls: { speed: -0.5, emotion: ['positivity:high'] } });
    expect(body).not.toHaveProperty('generation_config');
  });

  it('streams sentence by sentence, one request each', async () => {
    fake.setResponder(() => ({}));
    const before = fake.requests.length;
    const engine = new CartesiaTTS({ apiKey: fake.apiKey, baseURL: fake.url });
    const stream = engine.stream({ connOptions: quick });
    stream.pushText('This is the first sentence here. ');
    stream.pushText('And this is the second one, a bit longer.');
    stream.endInput();
    const { audio, ends } = await collect(stream);
    expect(fake.requests.slice(before).map((r) => r.body.transcript)).toEqual([
      'This is the first sentence here.',
      'And this is the second one, a bit longer.',
    ]);
    expect(ends).toBe(1);
    expect(audio.filter((a) => a.final)).toHaveLength(1);
  });

  it('retries a 503 and gives up on a 401 at once', async () => {
    const before = fake.requests.length;
    fake.setResponder((_r, i) => (i === before ? { error: { status: 503, body: '{"error":"busy"}' } } : {}));
    const ok = await collect(new CartesiaTTS({ apiKey: fake.apiKey, baseURL: fake.url }).synthesize('Retry me please.', quick));
    expect(ok.audio.length).toBeGreaterThan(0);
    expect(fake.requests.length - before).toBe(2);

    const denied = new CartesiaTTS({ apiKey: 'wrong', baseURL: fake.url });
    const errors: TTSError[] = [];
    denied.on('error', (e) => errors.push(e));
    const failed = await collect(denied.synthesize('Hello.', quick));
    expect(failed.audio).toEqual([]);
    expect(errors).toHaveLength(1);
    const error = errors[0]!.error as APIStatusError;
    expect(error).toBeInstanceOf(APIStatusError);
    expect(error.statusCode).toBe(401);
    expect(error.retryable).toBe(false);
    expect(error.body).toEqual({ error: 'Invalid API key' });
  });

  it('requires a key', () => {
    expect(() => new CartesiaTTS({ apiKey: undefined })).toThrow(/API key is required/);
  });
});
