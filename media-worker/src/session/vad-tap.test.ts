// The caller's silence read off the VAD's events: counted in their audio from the end of speech, whatever the clock.
import { inference, initializeLogger, VAD, VADEventType, type VADEvent } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { describe, expect, it } from 'vitest';
import { CallerSilence, tapVad } from './vad-tap.ts';

const ev = (type: VADEventType, e: Partial<VADEvent> = {}): VADEvent => ({
  type,
  samplesIndex: 0,
  timestamp: 0,
  speechDuration: 0,
  silenceDuration: 0,
  frames: [],
  probability: 0,
  inferenceDuration: 0,
  speaking: false,
  rawAccumulatedSilence: 0,
  rawAccumulatedSpeech: 0,
  ...e,
});

describe('CallerSilence', () => {
  it('counts the audio after the end of speech, not before the first speech, and stops at an onset', () => {
    const s = new CallerSilence();
    s.onEvent(ev(VADEventType.INFERENCE_DONE, { silenceDuration: 5000 }));
    expect(s.quietMs).toBeNull(); // no speech yet: the greeting timer covers a silent line
    s.onEvent(ev(VADEventType.START_OF_SPEECH, { speaking: true }));
    s.onEvent(ev(VADEventType.INFERENCE_DONE, { speaking: true, speechDuration: 320 }));
    expect(s.quietMs).toBeNull();
    s.onEvent(ev(VADEventType.END_OF_SPEECH, { silenceDuration: 256 }));
    expect(s.quietMs).toBe(0);
    s.onEvent(ev(VADEventType.INFERENCE_DONE, { silenceDuration: 288 }));
    expect(s.quietMs).toBe(32);
    // A sound that may become speech: not silence while it lasts; a blip that does not, and the count goes on.
    s.onEvent(ev(VADEventType.INFERENCE_DONE, { silenceDuration: 320, rawAccumulatedSpeech: 32 }));
    expect(s.quietMs).toBeNull();
    s.onEvent(ev(VADEventType.INFERENCE_DONE, { silenceDuration: 1056 }));
    expect(s.quietMs).toBe(800);
    s.onEvent(ev(VADEventType.START_OF_SPEECH, { speaking: true }));
    expect(s.quietMs).toBeNull();
  });
});

describe('tapVad', () => {
  it('reports each event of a real VAD stream and leaves the shared VAD as it was', async () => {
    initializeLogger({ pretty: false, level: 'warn' });
    const vad = new inference.VAD({ minSilenceDuration: 250 });
    const seen: VADEventType[] = [];
    const tapped = tapVad(vad, (e) => seen.push(e.type));
    expect(tapped).toBeInstanceOf(VAD);
    expect(tapped.minSilenceDuration).toBe(250);
    expect(tapped.capabilities).toEqual(vad.capabilities);
    const stream = tapped.stream();
    // 640 ms of silence: 20 inference windows of 32 ms.
    for (let i = 0; i < 32; i++) stream.pushFrame(new AudioFrame(new Int16Array(320), 16000, 1, 320));
    const read: VADEventType[] = [];
    for await (const e of stream) {
      read.push(e.type);
      if (read.length === 20) break;
    }
    stream.close();
    expect(read.every((t) => t === VADEventType.INFERENCE_DONE)).toBe(true);
    expect(seen).toEqual(read);
    // The shared VAD's own streams are not tapped.
    const other = vad.stream();
    for (let i = 0; i < 2; i++) other.pushFrame(new AudioFrame(new Int16Array(320), 16000, 1, 320));
    expect((await other.next()).value?.type).toBe(VADEventType.INFERENCE_DONE);
    other.close();
    expect(seen).toHaveLength(20);
  });
});
