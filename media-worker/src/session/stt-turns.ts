// The STT's own end of turn (turn_taking.detection 'stt'): Deepgram Flux, through the deepgram plugin's STTv2
// (docs/decisions/010-turn-taking.md). agents-js 1.9 does most of it with `turnDetection: 'stt'` (mappings.ts):
// Flux's StartOfTurn and EndOfTurn become the user turn's start and end, and an EagerEndOfTurn (the plugin's
// PREFLIGHT_TRANSCRIPT) starts the preemptive reply. What it does not do is drop that reply when the caller goes
// on: the plugin hands TurnResumed on as an interim transcript, the same event as an Update, and agents-js keeps
// the early reply generating (LLM tokens, TTS characters) until the EndOfTurn finds its transcript changed.
// Deepgram's state machine says the transcript never changes after an EagerEndOfTurn without a TurnResumed first,
// so a transcript that differs from the eager one means the turn resumed: the call drops the early reply there.
// A TurnResumed whose words have not changed yet leaves the reply until they do; if they never do, the
// EndOfTurn carries the eager transcript and the early reply is the right one (agents-js plays it).
import { stt, type voice } from '@livekit/agents';
import * as deepgram from '@livekit/agents-plugin-deepgram';
import type { TurnTaking } from '../../../shared/turn-taking.ts';
import { PinnedReleaseError, installedAgentsVersion } from './agents-release.ts';

/**
 * Flux's confidence for an EagerEndOfTurn, when the call starts its reply early (preemptive generation): the
 * plugin's own example value; Deepgram accepts 0.3-0.9, at most eot_threshold (left at Deepgram's 0.7). Lower
 * fires sooner and is resumed more often (each time a reply is dropped).
 */
export const EAGER_EOT_THRESHOLD = 0.5;
/** The shortest eot_timeout_ms Deepgram accepts. */
export const FLUX_EOT_TIMEOUT_MIN_MS = 500;

/**
 * turn_taking -> Flux's end-of-turn options: max_delay_ms is its eot_timeout_ms (the silence after which it
 * ends a turn whatever its confidence: the same meaning as the ceiling of the other modes), and with preemptive
 * generation the eager threshold that makes it send EagerEndOfTurn and TurnResumed at all.
 */
export function fluxTurnOptions(t: Pick<TurnTaking, 'max_delay_ms'>, preemptive: boolean): Pick<deepgram.STTv2Options, 'eotTimeoutMs' | 'eagerEotThreshold'> {
  return {
    eotTimeoutMs: Math.max(FLUX_EOT_TIMEOUT_MIN_MS, Math.round(t.max_delay_ms)),
    eagerEotThreshold: preemptive ? EAGER_EOT_THRESHOLD : undefined,
  };
}

/**
 * Sets a call's Flux STT to its turn taking, before any stream is open (a stream reads the options when it
 * connects). True when the call takes Flux's end of turn; false when the agent's detection is not `stt` or its
 * STT is not Flux (nothing to set, and no resumed turn to watch).
 */
export function applySttTurnTaking(engine: stt.STT, t: Pick<TurnTaking, 'detection' | 'max_delay_ms'>, preemptive: boolean): boolean {
  if (t.detection !== 'stt' || !(engine instanceof deepgram.STTv2)) return false;
  // The early reply is dropped through an agents-js internal (cancelPreemptiveReply): checked before the call runs.
  if (preemptive) assertPreemptiveCancelTarget();
  engine.updateOptions(fluxTurnOptions(t, preemptive));
  return true;
}

/** The words of a transcript, for telling a changed one from the same one re-punctuated. */
const wordsOf = (text: string) => (text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? []).join(' ');

/**
 * The STT's events on their way to agents-js, unchanged; `onResumed` is called when an interim transcript
 * differs from the last preflight (eager) one of the turn: the caller went on after Flux's EagerEndOfTurn.
 */
export function resumedTurns(onResumed: () => void): TransformStream<stt.SpeechEvent | string, stt.SpeechEvent | string> {
  let eager: string | null = null;
  return new TransformStream({
    transform(ev, controller) {
      if (typeof ev !== 'string') {
        const text = ev.alternatives?.[0]?.text ?? '';
        if (ev.type === stt.SpeechEventType.PREFLIGHT_TRANSCRIPT && text.trim()) eager = wordsOf(text);
        else if (ev.type === stt.SpeechEventType.INTERIM_TRANSCRIPT && eager !== null && text.trim() && wordsOf(text) !== eager) {
          eager = null;
          onResumed();
        } else if (ev.type === stt.SpeechEventType.FINAL_TRANSCRIPT || ev.type === stt.SpeechEventType.END_OF_SPEECH || ev.type === stt.SpeechEventType.START_OF_SPEECH) {
          // The turn ended (agents-js keeps or drops the early reply against the final) or a new one began.
          eager = null;
        }
      }
      controller.enqueue(ev);
    },
  });
}

/** The @livekit/agents release whose AgentActivity.cancelPreemptiveGeneration this module calls. */
export const PREEMPTIVE_CANCEL_AGENTS_VERSION = '1.9.0';

export class PreemptiveCancelVersionError extends PinnedReleaseError {
  constructor(installed: string) {
    const check = 'AgentActivity still has cancelPreemptiveGeneration() (cancel the parked preemptive reply and forget it) and whether agents-js now drops the reply on a resumed turn itself';
    super('stt-turns.ts', PREEMPTIVE_CANCEL_AGENTS_VERSION, installed, check, 'PREEMPTIVE_CANCEL_AGENTS_VERSION');
  }
}

export function assertPreemptiveCancelTarget(version = installedAgentsVersion()): void {
  if (version !== PREEMPTIVE_CANCEL_AGENTS_VERSION) throw new PreemptiveCancelVersionError(version);
}

/** The private method of agents-js 1.9.0's AgentActivity that its own paths use to drop a parked early reply. */
interface ActivityInternals {
  cancelPreemptiveGeneration(): void;
}

/**
 * Drops the session's parked preemptive reply, if any (no public API reaches it): agents-js's own way, which also
 * forgets it, so the end of the turn generates afresh rather than scheduling a cancelled reply.
 */
export function cancelPreemptiveReply(session: voice.AgentSession): void {
  const activity = session._activity as unknown as Partial<ActivityInternals> | undefined;
  if (!activity) return;
  if (typeof activity.cancelPreemptiveGeneration !== 'function') throw new PreemptiveCancelVersionError(installedAgentsVersion());
  activity.cancelPreemptiveGeneration();
}
