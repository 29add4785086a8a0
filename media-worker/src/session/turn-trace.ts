// Where a user turn's end-of-utterance time goes, one debug record per committed turn: the VAD's end of
// speech, the STT's final transcript, the turn detector's prediction and agents-js's EOU metrics, all as
// milliseconds after the user's last speech (EOUMetrics.lastSpeakingTimeMs). Off unless the logger is at
// debug level; the latency summary does not depend on it.
import { voice, type metrics as agentsMetrics } from '@livekit/agents';
import type { Logger } from '../../../shared/logger.ts';
import type { PreemptiveWaste } from './preemptive-waste.ts';

export interface TurnTiming {
  turn: number;
  /** VAD end of speech (user state speaking → listening), relative to the last speaking time. */
  vad_end_ms: number | null;
  /** Last final transcript of the turn. */
  stt_final_ms: number | null;
  eot_probability: number | null;
  eot_threshold: number | null;
  eot_inference_ms: number | null;
  /** End of speech → prediction received, as agents-js measures it. */
  eot_delay_ms: number | null;
  eou_delay_ms: number;
  transcription_delay_ms: number;
  on_user_turn_completed_ms: number;
  /**
   * Preemptive generations found discarded since the previous turn, and their completion tokens. A cancelled
   * stream's tokens can be known only after the turn commits; the call's totals (CallSession.preemptive) are
   * complete.
   */
  preemptive_discarded: number;
  wasted_tokens: number;
}

export class TurnTrace {
  readonly turns: TurnTiming[] = [];
  #vadEndAt: number | null = null;
  #finalAt: number | null = null;
  #eot: voice.EotPredictionEvent | null = null;
  #log: Logger;
  #waste: PreemptiveWaste | null;
  #wasteSeen = { discarded: 0, tokens: 0 };

  constructor(session: voice.AgentSession, log: Logger, waste: PreemptiveWaste | null = null) {
    this.#log = log;
    this.#waste = waste;
    session.on(voice.AgentSessionEventTypes.UserStateChanged, (ev) => {
      if (ev.newState === 'speaking') {
        this.#vadEndAt = null;
        this.#finalAt = null;
        this.#eot = null;
      } else if (ev.oldState === 'speaking') {
        this.#vadEndAt = ev.createdAt;
      }
    });
    session.on(voice.AgentSessionEventTypes.UserInputTranscribed, (ev) => {
      if (ev.isFinal) this.#finalAt = ev.createdAt;
    });
    session.on(voice.AgentSessionEventTypes.EotPrediction, (ev) => {
      this.#eot = ev;
    });
    session.on(voice.AgentSessionEventTypes.MetricsCollected, (ev) => {
      if (ev.metrics.type === 'eou_metrics') this.#onEou(ev.metrics);
    });
  }

  #onEou(m: agentsMetrics.EOUMetrics): void {
    this.#waste?.settle();
    const discarded = (this.#waste?.discarded ?? 0) - this.#wasteSeen.discarded;
    const wasted = (this.#waste?.wastedTokens ?? 0) - this.#wasteSeen.tokens;
    this.#wasteSeen = { discarded: this.#waste?.discarded ?? 0, tokens: this.#waste?.wastedTokens ?? 0 };
    const anchor = m.lastSpeakingTimeMs;
    const rel = (t: number | null) => (t !== null && anchor > 0 ? Math.round(t - anchor) : null);
    const timing: TurnTiming = {
      turn: this.turns.length + 1,
      vad_end_ms: rel(this.#vadEndAt),
      stt_final_ms: rel(this.#finalAt),
      eot_probability: this.#eot ? +this.#eot.probability.toFixed(3) : null,
      eot_threshold: this.#eot ? +this.#eot.threshold.toFixed(3) : null,
      eot_inference_ms: this.#eot ? Math.round(this.#eot.inferenceDurationMs) : null,
      eot_delay_ms: this.#eot ? Math.round(this.#eot.delayMs) : null,
      eou_delay_ms: Math.round(m.endOfUtteranceDelayMs),
      transcription_delay_ms: Math.round(m.transcriptionDelayMs),
      on_user_turn_completed_ms: Math.round(m.onUserTurnCompletedDelayMs),
      preemptive_discarded: discarded,
      wasted_tokens: wasted,
    };
    this.turns.push(timing);
    this.#log.debug(timing, 'user turn timing');
    this.#vadEndAt = null;
    this.#finalAt = null;
    this.#eot = null;
  }
}
