// The SIP test peers' shared media leg and audio readings, on their own: two legs on loopback play speech and
// keypad presses to each other, as a caller and a phone system do through the bridge.
import { afterEach, describe, expect, it } from 'vitest';
import { RtpLeg } from './support/rtp-leg.ts';
import { loudCount, loudSpan, quietSince, soundSeconds, utterance, type Listener } from './support/phone-audio.ts';

const legs: RtpLeg[] = [];
afterEach(() => {
  for (const l of legs.splice(0)) l.close();
});

async function pair(): Promise<[RtpLeg, RtpLeg]> {
  const a = await RtpLeg.open();
  const b = await RtpLeg.open(() => ({ host: '127.0.0.1', port: a.port }));
  a.peer = { host: '127.0.0.1', port: b.port };
  legs.push(a, b);
  return [a, b];
}

/** A tone of `seconds` at 8 kHz, loud enough to count as sound. */
const tone = (seconds: number) => {
  const samples = new Int16Array(Math.round(8000 * seconds));
  for (let i = 0; i < samples.length; i++) samples[i] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 8000));
  return { samples, sampleRate: 8000 };
};

const waitFor = async <T>(what: string, fn: () => T | null | undefined | false, timeoutMs = 10_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('the SIP test peers’ media leg', () => {
  it('carries speech both ways in G.711 µ-law, in whole 20 ms frames', async () => {
    const [a, b] = await pair();
    await a.speak(tone(0.3));
    await waitFor('the tone at b', () => b.received.length >= 2400);
    expect(b.received.length).toBe(2400);
    expect(b.firstAudioAt).not.toBeNull();
    expect(soundSeconds(b.received)).toBeGreaterThan(0.29);
    // b answers to the address it was given (the INVITE's offer), not only to where packets came from.
    await b.speak(tone(0.1));
    await waitFor('the tone at a', () => a.received.length >= 800);
    expect(loudCount(a.received)).toBeGreaterThan(400);
  });

  it('decodes keypad presses once each, however many packets carry them', async () => {
    const [a, b] = await pair();
    const next = b.nextKey(5000);
    await a.pressKey('4');
    await a.pressKey('#');
    expect(await next).toBe('4');
    await waitFor('two keys', () => b.keys.length === 2);
    expect(b.keys).toEqual(['4', '#']);
    expect(await b.nextKey(50)).toBeNull();
  });

  it('fills the quiet with silence while nothing else is sent', async () => {
    const [a, b] = await pair();
    a.startSilence();
    await waitFor('silence at b', () => b.received.length >= 800);
    expect(loudCount(b.received)).toBe(0);
    expect(b.firstAudioAt).toBeNull();
  });
});

describe('reading what a peer heard', () => {
  const r = [0, 0, 2000, 0, -3000, 0, 0, 0];
  it('finds the loud span, its length and the quiet after it', () => {
    expect(loudSpan(r)).toEqual({ first: 2, last: 4 });
    expect(loudSpan(r, 5)).toEqual({ first: -1, last: -1 });
    expect(loudSpan(r, 0, 3)).toEqual({ first: 2, last: 2 });
    expect(soundSeconds(r)).toBe(2 / 8000);
    expect(soundSeconds(r, 5)).toBe(0);
    expect(loudCount(r)).toBe(2);
    expect(quietSince(r)).toBe(3 / 8000);
    expect(quietSince(r, 5)).toBeNull();
  });

  it('waits for an utterance to end: enough sound, then the quiet asked for (a lone click is not enough)', async () => {
    const received: number[] = [];
    const peer: Listener = { received, waitFor };
    const click = Array.from({ length: 40 }, () => 5000);
    received.push(...click, ...new Array(8000).fill(0));
    const pending = utterance(peer, { quietSeconds: 0.5, minSoundSeconds: 0.1, timeoutMs: 5000 });
    await new Promise((r) => setTimeout(r, 100));
    // 0.2 s of sound, then 0.6 s of quiet.
    received.push(...Array.from(tone(0.2).samples), ...new Array(4800).fill(0));
    const u = await pending;
    // From the first loud sample (the click) to the tone's last.
    expect(u.seconds).toBeGreaterThan(1.19);
    expect(u.end).toBe(received.length);
  });
});
