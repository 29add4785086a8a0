import { initializeLogger } from '@livekit/agents';
import { beforeAll, describe, expect, it } from 'vitest';
import { LocalTTS } from '../../../shared/speech/local-tts.ts';
import { synthesizeAhead } from './greeting-audio.ts';

beforeAll(() => initializeLogger({ pretty: false, level: 'warn' }));

describe('greeting synthesized ahead', () => {
  it("holds the whole greeting, in the agent's frames of at most 20 ms", async () => {
    const tts = new LocalTTS({ model: 'espeak-ng' });
    const greeting = synthesizeAhead(tts, 'Hello, thank you for calling. How can I help you today?');
    const frames = [];
    for await (const f of greeting.audio) frames.push(f);
    expect(frames.length).toBeGreaterThan(50);
    // At most 20 ms each (output-frames.ts splits each TTS frame; a piece's remainder is shorter).
    for (const f of frames) expect(f.samplesPerChannel).toBeGreaterThan(0);
    for (const f of frames) expect(f.samplesPerChannel).toBeLessThanOrEqual(tts.sampleRate / 50);
    expect(frames.filter((f) => f.samplesPerChannel === tts.sampleRate / 50).length).toBeGreaterThan(frames.length / 2);
    expect(frames.some((f) => f.data.some((s) => Math.abs(s) > 1000))).toBe(true);
    await tts.close();
  });

  it('stops the synthesis when the greeting will not be played', async () => {
    const tts = new LocalTTS({ model: 'espeak-ng' });
    const greeting = synthesizeAhead(tts, 'A long greeting that will never be heard, because the caller hung up first. '.repeat(20));
    greeting.cancel();
    const frames = [];
    for await (const f of greeting.audio) frames.push(f);
    // Cancelled at once: far less than the ~100 s of speech (5000 frames) the text holds, and no synthesizer left running.
    expect(frames.length).toBeLessThan(3000);
    await new Promise((r) => setTimeout(r, 200));
    expect(tts._runningPids).toEqual([]);
    await tts.close();
  });
});
