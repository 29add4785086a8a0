// An agent's OpenAI transcriber (createSTT, provider openai) against the local stand-in of OpenAI's realtime
// transcription socket (test/support/fake-openai-transcription.ts): the plugin's real client on the real wire
// protocol, as a call's live audio reaches it (24 kHz, the server's VAD ending each turn).
import { initializeLogger, stt } from '@livekit/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../../test/support/fake-openai.ts';
import { toneFrames } from '../../test/support/voice-io.ts';
import { createSTT } from './providers.ts';

const ORG_KEY = 'sk-org-live';
/** `speechMs` of a loud tone then `silenceMs` of silence at 24 kHz, the rate a call's audio reaches this STT at. */
const clip = (speechMs: number, silenceMs: number) => toneFrames(24000, speechMs, silenceMs);

let openai: FakeOpenAI;

beforeAll(async () => {
  initializeLogger({ pretty: false, level: 'error' });
  openai = await startFakeOpenAI({ transcription: { apiKeys: [ORG_KEY] } });
});
afterAll(async () => {
  await openai?.close();
});

describe('the OpenAI transcriber on a call', () => {
  it("ends each turn on the server's VAD: speech events and one final per turn, with the org's key and the agent's model and language", async () => {
    const said = ['I would like to book a cleaning.', 'Next Tuesday if you can.'];
    openai.setTranscriber((item) => said[item.index] ?? '');
    const engine = createSTT({ provider: 'openai', model: 'gpt-4o-transcribe', language: 'en-GB' }, { openai: ORG_KEY }, { OPENAI_BASE_URL: openai.url });
    const stream = engine.stream();
    // Two turns with more silence after each than the plugin's server VAD waits for (350 ms).
    for (const f of [...clip(800, 700), ...clip(600, 700)]) stream.pushFrame(f);
    const events: { type: stt.SpeechEventType; text?: string }[] = [];
    for await (const ev of stream) {
      if (ev.type === stt.SpeechEventType.RECOGNITION_USAGE) continue;
      events.push({ type: ev.type, ...(ev.type === stt.SpeechEventType.FINAL_TRANSCRIPT ? { text: ev.alternatives?.[0]?.text } : {}) });
      if (events.filter((e) => e.type === stt.SpeechEventType.FINAL_TRANSCRIPT).length === said.length) stream.endInput();
    }
    await engine.close();

    const { START_OF_SPEECH: start, END_OF_SPEECH: end, FINAL_TRANSCRIPT: final } = stt.SpeechEventType;
    // The audio went in faster than real time, so the second turn may start before the first's transcript is back.
    const kinds = events.map((e) => e.type);
    expect(kinds.filter((k) => k === start || k === end)).toEqual([start, end, start, end]);
    expect(events.filter((e) => e.type === final).map((e) => e.text)).toEqual(said);
    expect(kinds.indexOf(final)).toBeGreaterThan(kinds.indexOf(end));
    // Interims (the deltas, accumulated) came before each final.
    expect(events.filter((e) => e.type === stt.SpeechEventType.INTERIM_TRANSCRIPT).length).toBeGreaterThanOrEqual(said.join(' ').split(' ').length);

    const conn = openai.transcriptions.at(-1)!;
    expect(conn.headers.authorization).toBe(`Bearer ${ORG_KEY}`);
    expect(conn.params.get('model')).toBe('gpt-4o-transcribe');
    expect(conn.sessions[0]).toMatchObject({
      type: 'transcription',
      audio: { input: { format: { type: 'audio/pcm', rate: 24000 }, transcription: { model: 'gpt-4o-transcribe', language: 'en' }, turn_detection: { type: 'server_vad', silence_duration_ms: 350 } } },
    });
    // The server's VAD committed both turns; the client never had to.
    expect(conn.received).toEqual(['session.update']);
    expect(conn.completed()).toEqual(said);
  });

  it('a key the provider refuses fails the stream with an error, not silence', async () => {
    const engine = createSTT({ provider: 'openai', model: 'gpt-4o-transcribe', language: 'en-US' }, { openai: 'sk-not-the-org' }, { OPENAI_BASE_URL: openai.url });
    const before = openai.transcriptions.length;
    const errors: unknown[] = [];
    engine.on('error', (e) => errors.push(e));
    const stream = engine.stream({ connOptions: { maxRetry: 0, retryIntervalMs: 10, timeoutMs: 5000 } });
    for (const f of clip(300, 100)) stream.pushFrame(f);
    stream.endInput();
    const events: stt.SpeechEvent[] = [];
    await expect(
      (async () => {
        for await (const ev of stream) events.push(ev);
      })(),
    ).resolves.toBeUndefined();
    await engine.close();
    expect(events.filter((e) => e.type === stt.SpeechEventType.FINAL_TRANSCRIPT)).toEqual([]);
    expect(errors.length).toBeGreaterThan(0);
    expect(openai.transcriptions.length).toBe(before);
  });
});
