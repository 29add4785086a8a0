// A small pitch tracker (normalized autocorrelation per 40 ms frame, 10 ms hop) for the turn-taking corpus: it
// checks that speech before a mid-turn pause sounds unlike speech at a true end (test/turn-prosody.test.ts). A
// finished sentence ends on a pitch fall; a voice holding the turn does not fall as far. Enough for espeak-ng's
// clean voices; not a general-purpose tracker.
import type { Pcm } from '../../test/support/speech.ts';

export interface PitchFrame {
  /** Centre of the frame (ms from the clip's start). */
  ms: number;
  /** Fundamental frequency (Hz), or null when the frame is unvoiced or silent. */
  f0: number | null;
}

const FRAME_MS = 40;
const HOP_MS = 10;
const MIN_HZ = 60;
const MAX_HZ = 400;
/** A frame is voiced when its autocorrelation at the best lag is at least this share of its energy. */
const VOICED = 0.5;
/** Frames quieter than this RMS (int16 scale) are silence. */
const QUIET_RMS = 300;

/** The pitch track of a clip, read at 8 kHz or so (every sixth sample at 48 kHz): enough for 60-400 Hz, and quick. */
export function pitchTrack(pcm: Pcm, from = 0, to = pcm.samples.length): PitchFrame[] {
  const step = pcm.sampleRate > 8000 ? Math.floor(pcm.sampleRate / 8000) : 1;
  const rate = pcm.sampleRate / step;
  const x: number[] = [];
  for (let i = from; i < to; i += step) x.push(pcm.samples[i]!);
  const frame = Math.round((FRAME_MS / 1000) * rate);
  const hop = Math.round((HOP_MS / 1000) * rate);
  const minLag = Math.floor(rate / MAX_HZ);
  const maxLag = Math.ceil(rate / MIN_HZ);
  const out: PitchFrame[] = [];
  for (let at = 0; at + frame + maxLag <= x.length; at += hop) {
    const ms = ((from + (at + frame / 2) * step) / pcm.sampleRate) * 1000;
    let energy = 0;
    for (let i = at; i < at + frame; i++) energy += x[i]! * x[i]!;
    if (Math.sqrt(energy / frame) < QUIET_RMS) {
      out.push({ ms, f0: null });
      continue;
    }
    let best = 0;
    let bestLag = 0;
    for (let lag = minLag; lag <= maxLag; lag++) {
      let c = 0;
      let e2 = 0;
      for (let i = at; i < at + frame; i++) {
        c += x[i]! * x[i + lag]!;
        e2 += x[i + lag]! * x[i + lag]!;
      }
      const r = c / Math.sqrt(energy * e2 || 1);
      if (r > best) {
        best = r;
        bestLag = lag;
      }
    }
    out.push({ ms, f0: best >= VOICED && bestLag > 0 ? rate / bestLag : null });
  }
  return out;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)]! : NaN;
};

/**
 * The pitch movement at the end of a stretch of speech, in semitones: the median f0 of its last `tailMs` of voiced
 * frames against the median of the `bodyMs` of voiced frames before them. A final fall is well under zero; NaN when
 * there are too few voiced frames to say.
 */
export function endingSemitones(track: PitchFrame[], tailMs = 150, bodyMs = 400): number {
  const voiced = track.filter((f): f is { ms: number; f0: number } => f.f0 !== null);
  const tailN = Math.round(tailMs / HOP_MS);
  const bodyN = Math.round(bodyMs / HOP_MS);
  if (voiced.length < tailN + Math.round(bodyN / 2)) return NaN;
  const tail = voiced.slice(-tailN).map((f) => f.f0);
  const body = voiced.slice(-(tailN + bodyN), -tailN).map((f) => f.f0);
  return 12 * Math.log2(median(tail) / median(body));
}
