// bench:realtime's arithmetic: the Realtime double's part of a realtime call's turns (the vap agent's and the bare
// floor's alike), and the figures of an arm.
import { percentile } from '../../shared/latency.ts';
import type { RealtimeConnection } from '../../test/support/fake-openai.ts';
import type { RoomTurn } from '../support/room-call.ts';

export const round = (x: number) => Math.round(x * 10) / 10;

/** A p50 of fewer than 30 samples or a p95 of fewer than 100 is null, never a mean called a percentile. */
export function stats(v: number[]) {
  return {
    n: v.length,
    p50_ms: v.length >= 30 ? round(percentile(v, 50)) : null,
    p95_ms: v.length >= 100 ? round(percentile(v, 95)) : null,
    mean_ms: v.length ? round(v.reduce((a, b) => a + b, 0) / v.length) : null,
  };
}

/** Per turn of an arm: its voice to voice, its doubles' part, and the rest (the platform's and WebRTC's). */
export interface ArmTurn {
  v2v_ms: number;
  double_ms: number;
  rest_ms: number;
  [part: string]: number;
}

/** An arm's figures: v2v, the doubles' part and the rest, and each named part. */
export function armStats(turns: ArmTurn[]) {
  const keys = Object.keys(turns[0] ?? { v2v_ms: 0, double_ms: 0, rest_ms: 0 });
  return Object.fromEntries(keys.map((k) => [k, stats(turns.map((t) => t[k]!))]));
}

/**
 * The double's part of each turn of a realtime call whose connections are `conns` (those opened since the call
 * began): its VAD silence (on the audio's clock) and its end of turn to first audio delta, for the answers `reply`.
 */
export function realtimeParts(conns: RealtimeConnection[], turns: RoomTurn[], reply: string, silenceMs: number): ArmTurn[] {
  const conn = conns.find((x) => x.responses.some((r) => r.text === reply));
  const answers = (conn?.responses ?? []).filter((r) => r.text === reply && r.firstAudioAt !== undefined);
  if (answers.length !== turns.length) throw new Error(`${turns.length} turns heard, ${answers.length} answers sent by the double`);
  return turns.map((t, i) => {
    const firstAudio = answers[i]!.firstAudioAt! - answers[i]!.turnEndedAt;
    const double = silenceMs + firstAudio;
    return { v2v_ms: t.v2v_ms, double_ms: double, rest_ms: t.v2v_ms - double, double_first_audio_ms: firstAudio };
  });
}

/** a - b at p50, p95 and mean (null where either lacks the figure). */
export function difference(a: ReturnType<typeof stats>, b: ReturnType<typeof stats>) {
  const d = (x: number | null, y: number | null) => (x === null || y === null ? null : round(x - y));
  return { p50_ms: d(a.p50_ms, b.p50_ms), p95_ms: d(a.p95_ms, b.p95_ms), mean_ms: d(a.mean_ms, b.mean_ms) };
}
