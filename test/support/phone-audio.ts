// Reading what a SIP test peer (SipPhone, SipCallee) heard: 8 kHz samples, where "loud" is above the quiet parts
// of speech and of the line's silence. The phone e2e tests ask the same questions of it: how long was the sound,
// has an utterance ended (sound, then a stretch of quiet), how much of it is there.
export const RATE = 8000;
export const LOUD = 1500;

/** A peer whose received audio grows as the call goes on. */
export interface Listener {
  readonly received: number[];
  waitFor<T>(what: string, fn: () => T | null | undefined | false, timeoutMs?: number): Promise<T>;
}

const isLoud = (v: number) => Math.abs(v) > LOUD;

/** The first and last loud sample in `r[from, to)`; both -1 when there is none. */
export function loudSpan(r: ArrayLike<number>, from = 0, to = r.length): { first: number; last: number } {
  const end = Math.min(to, r.length);
  let first = -1;
  for (let i = from; i < end; i++)
    if (isLoud(r[i]!)) {
      first = i;
      break;
    }
  if (first < 0) return { first: -1, last: -1 };
  let last = first;
  for (let i = end - 1; i > first; i--)
    if (isLoud(r[i]!)) {
      last = i;
      break;
    }
  return { first, last };
}

/** Seconds from the first loud sample to the last in `r[from, to)`; 0 when there is none. */
export function soundSeconds(r: ArrayLike<number>, from = 0, to = r.length): number {
  const { first, last } = loudSpan(r, from, to);
  return first < 0 ? 0 : (last - first) / RATE;
}

/** How many loud samples there are from `from` on. */
export function loudCount(r: ArrayLike<number>, from = 0): number {
  let n = 0;
  for (let i = from; i < r.length; i++) if (isLoud(r[i]!)) n++;
  return n;
}

/** Seconds of quiet since the last loud sample after `from`; null while nothing loud came. */
export function quietSince(r: ArrayLike<number>, from = 0): number | null {
  for (let i = r.length - 1; i >= from; i--) if (isLoud(r[i]!)) return (r.length - 1 - i) / RATE;
  return null;
}

export interface UtteranceOptions {
  from?: number;
  /** The quiet that ends it (local TTS on a loaded machine can pause mid-sentence, so tests wait out such gaps). */
  quietSeconds: number;
  /** At least this much sound, so that a click is not an utterance. */
  minSoundSeconds?: number;
  timeoutMs?: number;
}

/**
 * Waits for the next utterance the peer hears after sample `from`: sound, then `quietSeconds` of quiet. Returns its
 * length (first loud sample to last) and where the received audio ended when it was seen.
 */
export async function utterance(peer: Listener, o: UtteranceOptions): Promise<{ seconds: number; end: number }> {
  const from = o.from ?? 0;
  const minSound = (o.minSoundSeconds ?? 0) * RATE;
  let seconds = 0;
  const end = await peer.waitFor(
    `the peer to hear speech, then ${o.quietSeconds} s of quiet`,
    () => {
      const r = peer.received;
      const quiet = quietSince(r, from);
      if (quiet === null || quiet < o.quietSeconds) return null;
      const { first, last } = loudSpan(r, from);
      if (minSound > 0 && last - first <= minSound) return null;
      seconds = (last - first) / RATE;
      return r.length;
    },
    o.timeoutMs ?? 90_000,
  );
  return { seconds, end };
}
