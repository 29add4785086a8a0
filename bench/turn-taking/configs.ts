// The configurations bench:turns compares (docs/benchmarks.md, "Turn-taking"), and the sweep of the endpointing
// delays that gives the false cut-off / latency budget figures.
import type { TurnTakingConfig } from './rig.ts';

export interface BenchConfig {
  name: string;
  label: string;
  stt: 'deepgram' | 'local';
  turnTaking: TurnTakingConfig | null;
  /** Other agent fields (interruption_sensitivity). */
  agent?: Record<string, unknown>;
  turns: number;
  /** Default BENCH_BARGE_INS and BENCH_BACKCHANNELS. */
  bargeIns?: number;
  backchannels?: number;
  /** A point of a sweep of this configuration's delays (its name). */
  sweepOf?: string;
}

/** Trials per configuration (BENCH_TURNS...; the transcript rules' default row gets the most, for p95s). */
export interface TrialCounts {
  TURNS: number;
  TURNS_BEST: number;
  BARGE_INS_BEST: number;
  BACKCHANNELS_BEST: number;
}

/** The transcript rules' rows start from this (the default's turn taking but for barge_in), each changing one thing. */
const TRANSCRIPT = { detection: 'transcript', endpointing: 'fixed', min_delay_ms: 150, max_delay_ms: 1500, preemptive_generation: true, ignore_backchannels: true } as const;

// Silero only at agents-js's default delays (500 ms after the VAD's end of speech); the end-of-turn model
// with fixed delays; the same with dynamic endpointing; and that plus preemptive generation.
export function deepgramConfigs(n: TrialCounts): BenchConfig[] {
  const { TURNS, TURNS_BEST, BARGE_INS_BEST, BACKCHANNELS_BEST } = n;
  return [
    { name: 'silero', label: 'Silero only (VAD, 500 ms silence)', stt: 'deepgram', turns: TURNS, turnTaking: { detection: 'vad', endpointing: 'fixed', min_delay_ms: 500, max_delay_ms: 3000, preemptive_generation: false, ignore_backchannels: false, barge_in: 'words' } },
    { name: 'eot-fixed', label: 'EOT model, fixed 300/1500 ms', stt: 'deepgram', turns: TURNS, turnTaking: { detection: 'model', endpointing: 'fixed', min_delay_ms: 300, max_delay_ms: 1500, preemptive_generation: false, ignore_backchannels: true, barge_in: 'words' } },
    { name: 'eot-dynamic', label: 'EOT model, dynamic 300/1500 ms', stt: 'deepgram', turns: TURNS, turnTaking: { detection: 'model', endpointing: 'dynamic', min_delay_ms: 300, max_delay_ms: 1500, preemptive_generation: false, ignore_backchannels: true, barge_in: 'words' } },
    { name: 'eot-dynamic-preemptive', label: 'EOT model, dynamic 300/1500 ms, preemptive generation', stt: 'deepgram', turns: TURNS, turnTaking: { detection: 'model', endpointing: 'dynamic', min_delay_ms: 300, max_delay_ms: 1500, preemptive_generation: true, ignore_backchannels: true, barge_in: 'words' } },
    // Silero alone with the delay cut to 200 ms: what a short silence costs without a turn detector.
    { name: 'silero-200', label: 'Silero only, 200 ms, preemptive generation', stt: 'deepgram', turns: TURNS, turnTaking: { detection: 'vad', endpointing: 'fixed', min_delay_ms: 200, max_delay_ms: 1500, preemptive_generation: true, ignore_backchannels: true, barge_in: 'words' } },
    // The transcript rules (below), stopping on sound alone (any 100 ms of speech, no word needed): the fastest
    // barge-in, at the cost of backchannels stopping the agent too.
    { name: 'transcript-sound-barge-in', label: 'Transcript rules, 150/1500 ms, barge-in on sound (sensitivity 1)', stt: 'deepgram', turns: TURNS, bargeIns: 10, backchannels: 10, agent: { interruption_sensitivity: 1 }, turnTaking: { ...TRANSCRIPT, ignore_backchannels: false, barge_in: 'words' } },
    // The transcript rules with the previous default floor (200 ms), and without preemptive generation: what
    // the shorter floor and starting the reply early (on a finished-sounding interim, LLM and TTS) buy.
    { name: 'transcript-200', label: 'Transcript rules, fixed 200/1500 ms, preemptive generation', stt: 'deepgram', turns: TURNS, turnTaking: { ...TRANSCRIPT, min_delay_ms: 200, barge_in: 'words' } },
    // The previous default: the same, but the agent speaks on until the caller's first word that is not a
    // backchannel (barge_in 'words'): no pause on a backchannel, a later stop on a barge-in.
    { name: 'transcript-words', label: 'Transcript rules, fixed 150/1500 ms, preemptive generation, stop on words', stt: 'deepgram', turns: TURNS, bargeIns: 10, backchannels: 10, turnTaking: { ...TRANSCRIPT, barge_in: 'words' } },
    // The default but for the pause's trigger: the VAD's start of speech (barge_in 'pause_on_speech', the default
    // until the onset), against the onset of the caller's sound.
    { name: 'transcript-pause-on-speech', label: 'Transcript rules, fixed 150/1500 ms, preemptive generation, pause on the VAD\'s speech', stt: 'deepgram', turns: TURNS, bargeIns: 20, backchannels: 10, turnTaking: { ...TRANSCRIPT, barge_in: 'pause_on_speech' } },
    { name: 'transcript-no-preemptive', label: 'Transcript rules, fixed 150/1500 ms, no preemptive generation', stt: 'deepgram', turns: TURNS, turnTaking: { ...TRANSCRIPT, preemptive_generation: false, barge_in: 'words' } },
    // The transcript rules (media-worker/src/session/transcript-turn-detector.ts) at 150 ms after a finished
    // sentence, 1500 ms after an open one: the agents' default until the realistic stand-in's figures moved the
    // default floor to 1000 ms, and issue 47's to 1700/3000 ms (shared/turn-taking.ts; `current` runs it). Kept
    // as the base of the sweep so the runs stay comparable. The most trials, for p95s: 280 turns hold 112 complete
    // sentences, so the p95 on complete utterances has its 100 samples.
    // The transcript rules with adaptive waiting (endpointing 'dynamic', media-worker/src/session/adaptive-wait.ts):
    // a finished-sounding turn waits 600 ms until the caller has paused mid-turn, then 150 ms over the 90th
    // percentile of the caller's last 12 pauses, up to 2500 ms (also the wait after an open one).
    { name: 'transcript-adaptive', label: 'Transcript rules, adaptive wait from 600 ms (the caller\'s pauses), ceiling 2500 ms, preemptive generation, pause on the onset of sound', stt: 'deepgram', turns: TURNS, turnTaking: { ...TRANSCRIPT, endpointing: 'dynamic', min_delay_ms: 600, max_delay_ms: 2500, barge_in: 'pause' } },
    { name: 'transcript', label: 'Transcript rules, fixed 150/1500 ms, preemptive generation, pause on the onset of sound', stt: 'deepgram', turns: TURNS_BEST, bargeIns: BARGE_INS_BEST, backchannels: BACKCHANNELS_BEST, turnTaking: { ...TRANSCRIPT, barge_in: 'pause' } },
  ];
}

/**
 * Deepgram Flux's own end of turn (detection 'stt', its delays at responsiveness 0.5) through the Flux stand-in
 * (test/support/fake-deepgram-flux.ts): `node bench/turn-taking/run.ts flux-stt`. It measures the wiring and its
 * timing (EagerEndOfTurn starts the reply, EndOfTurn plays it); its cut-offs are the stand-in's rule's, never
 * Flux's (docs/benchmarks.md quotes Flux's published ones), so it runs only when named and is never the best.
 */
export const fluxConfig = (turns: number): BenchConfig => ({
  name: 'flux-stt',
  label: "Flux's end of turn (stt), 0/5000 ms, preemptive generation, through the Flux stand-in (wiring and timing only)",
  stt: 'deepgram',
  turns,
  agent: { transcriber: { provider: 'deepgram', model: 'flux-general-en' } },
  turnTaking: { detection: 'stt', endpointing: 'fixed', min_delay_ms: 0, max_delay_ms: 5000, preemptive_generation: true, ignore_backchannels: true, barge_in: 'pause' },
});

/** Configurations that run only when named. */
export const NAMED_ONLY = ['current', 'flux-stt'];

/** The agent's defaults (no turn_taking sent): `node bench/turn-taking/run.ts current`. */
export const currentConfig = (turns: number): BenchConfig => ({ name: 'current', label: "The agent's defaults", stt: 'deepgram', turns, turnTaking: null });

/** The configuration whose delays are swept by default: the agents' default (the transcript rules). */
export const SWEPT_CONFIG = 'transcript';

/**
 * The sweep's points, min_delay_ms/max_delay_ms: the floor from 300 ms to the API's 2000 ms maximum, the ceiling
 * kept at 1500 ms until the floor passes it (it must stay the larger).
 */
export const DEFAULT_SWEEP = '300/1500,600/1500,1000/1500,1500/2000,2000/2500';

/** Parses BENCH_SWEEP ("min/max,min/max", or 0 / empty for none). */
export function parseSweep(spec: string): { min_delay_ms: number; max_delay_ms: number }[] {
  if (spec.trim() === '' || spec.trim() === '0') return [];
  return spec.split(',').map((p) => {
    const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(p);
    if (!m) throw new Error(`BENCH_SWEEP: "${p}" is not min/max (ms), as in ${DEFAULT_SWEEP}`);
    const [min, max] = [Number(m[1]), Number(m[2])];
    if (min > 2000 || max < 100 || max > 6000 || max < min) throw new Error(`BENCH_SWEEP: ${p}: min_delay_ms 0-2000, max_delay_ms 100-6000 and at least min`);
    return { min_delay_ms: min, max_delay_ms: max };
  });
}

/** The points of a sweep of `base`'s delays, turns only; the base's own delays are not repeated (it is a point). */
export function sweepConfigs(base: BenchConfig, points: { min_delay_ms: number; max_delay_ms: number }[], turns: number): BenchConfig[] {
  const tt = base.turnTaking;
  if (!tt) return [];
  return points
    .filter((p) => p.min_delay_ms !== tt.min_delay_ms || p.max_delay_ms !== tt.max_delay_ms)
    .map((p) => ({
      ...base,
      name: `${base.name}@${p.min_delay_ms}/${p.max_delay_ms}`,
      label: `${base.label.replace(/\b\d+\/\d+ ms\b/, '').replace(/\s+,/, ',').trim()} at ${p.min_delay_ms}/${p.max_delay_ms} ms`,
      turnTaking: { ...tt, ...p },
      turns,
      bargeIns: 0,
      backchannels: 0,
      sweepOf: base.name,
    }));
}
