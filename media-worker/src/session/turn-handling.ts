// Turn handling: how the caller and the agent take turns in a call. The session's options (endpointing, the
// turn detector, preemptive generation: mappings.ts), and what the call adds to agents-js's own: the pause on
// the caller's onset (barge_in 'pause'), backchannels kept from it (ignore_backchannels), and the counts of
// pauses that no word confirmed.
import type { voice } from '@livekit/agents';
import type { AudioFrame } from '@livekit/rtc-node';
import type { Logger } from '../../../shared/logger.ts';
import type { VapAgentOptions } from './agent.ts';
import { isBackchannel, mayBeBackchannel } from './backchannel.ts';
import type { CallContext, CallSessionOptions } from './call-context.ts';
import { AdaptiveWait } from './adaptive-wait.ts';
import { VAD_END_LAG_MS, pausesOnOnset, turnHandlingFor, vadSilenceFor } from './mappings.ts';
import { OnsetDetector } from './onset.ts';
import { applySttTurnTaking, cancelPreemptiveReply } from './stt-turns.ts';
import { interimSoundsFinished } from './transcript-turn-detector.ts';

/** An onset pause that agents-js has not taken over is checked this long after it began (ms)... */
const ONSET_CONFIRM_MS = 200;
/** ...and again at this interval while the VAD hears speech, up to a bound (then it resumes). */
const ONSET_CHECK_MS = 50;
const ONSET_HOLD_MAX_MS = 1000;

export class TurnHandling {
  /** The AgentSession's turn handling for this call's agent. */
  readonly options: ReturnType<typeof turnHandlingFor>;
  /** Backchannel transcripts kept from agents-js (`ignore_backchannels`), interim and final, and finals alone. */
  backchannelsIgnored = 0;
  backchannelFinalsIgnored = 0;
  /** Pauses on the caller's sound that no word confirmed (agents-js's false interruptions; most resume). */
  falseInterruptions = 0;
  /** Onset pauses, and those the VAD did not take over (a noise: the reply resumed). */
  onsetPauses = 0;
  onsetResumes = 0;
  #call: CallContext;
  #opts: CallSessionOptions;
  #log: Logger;
  /** The caller's current utterance began while the agent was speaking (or the agent began over it). */
  #overAgent = false;
  /** The reply that last went from speaking to listening without an interruption (a pause; see #replyHeld). */
  #heldReply: voice.SpeechHandle | undefined;
  /** barge_in 'pause': the caller's onset pauses the agent before the VAD's start of speech (onset.ts). */
  #onset: OnsetDetector | undefined;
  /** The running onset pause: when it began, and the check that hands it to agents-js or resumes it. */
  #onsetHold: { at: number; timer: NodeJS.Timeout } | null = null;
  /** Flux's eager end of turn starts the early reply (detection 'stt' with preemptive generation: stt-turns.ts). */
  #fluxEager: boolean;
  /** endpointing 'dynamic': the caller's pauses so far set the wait after a finished-sounding turn (adaptive-wait.ts). */
  #adaptive: AdaptiveWait | undefined;
  #waitMs = 0;

  constructor(call: CallContext, opts: CallSessionOptions) {
    this.#call = call;
    this.#opts = opts;
    this.#log = opts.logger;
    const { agent, call: c } = opts.config;
    if (pausesOnOnset(agent.interruption_sensitivity, agent.turn_taking)) this.#onset = new OnsetDetector();
    const retrieves = opts.config.knowledge.mode === 'retrieve' && opts.config.knowledge.knowledge_base_ids.length > 0;
    // Preemptive generation starts the LLM on the transcript, before onUserTurnCompleted: it would miss the
    // retrieved knowledge, and would spend a request on a voicemail greeting or the callee's "Hello?". Kept
    // for the other calls, where it saves up to the endpointing delay.
    this.options = turnHandlingFor(agent, { turnDetector: opts.models.turnDetection, preemptiveAllowed: !retrieves && c.type !== 'outbound' });
    if (opts.preemptiveGeneration !== undefined) this.options.preemptiveGeneration = { ...this.options.preemptiveGeneration, enabled: opts.preemptiveGeneration };
    // Flux's own end of turn (detection 'stt'): its timeout, and its eager end of turn for the early reply.
    const preemptive = !!this.options.preemptiveGeneration?.enabled;
    this.#fluxEager = !!opts.models.stt && applySttTurnTaking(opts.models.stt, agent.turn_taking, preemptive) && preemptive;
    const ep = this.options.endpointing;
    if (agent.turn_taking.endpointing === 'dynamic' && agent.turn_taking.detection !== 'stt' && ep?.minDelay !== undefined && ep.maxDelay !== undefined) {
      // agents-js's own dynamic filter is replaced, not stacked: its endpointing stays fixed and this sets its floor.
      this.options.endpointing = { ...ep, mode: 'fixed' };
      this.#adaptive = new AdaptiveWait({ minDelay: ep.minDelay, maxDelay: ep.maxDelay, vadEndMs: vadSilenceFor(agent.turn_taking) + VAD_END_LAG_MS });
      this.#waitMs = ep.minDelay;
    }
  }

  /** barge_in 'pause': the caller's audio goes through the onset detector. */
  get listensToAudio(): boolean {
    return !!this.#onset;
  }

  /** What the call's agents do with the caller's transcripts before agents-js sees them (agent.ts). */
  agentHooks(): Pick<VapAgentOptions, 'dropTranscript' | 'preflight' | 'onTurnResumed'> {
    const { turn_taking } = this.#opts.config.agent;
    return {
      dropTranscript: turn_taking.ignore_backchannels ? (text, isFinal) => this.#isIgnoredBackchannel(text, isFinal) : undefined,
      // With the transcript rules, a finished-sounding interim starts the preemptive reply before the final.
      preflight: this.options.preemptiveGeneration?.enabled && turn_taking.detection === 'transcript' ? interimSoundsFinished : undefined,
      // With Flux's eager end of turn, the early reply is dropped when the caller goes on.
      onTurnResumed: this.#fluxEager ? () => cancelPreemptiveReply(this.#call.session) : undefined,
    };
  }

  onFrame(frame: AudioFrame): void {
    if (this.#onset?.push(frame)) this.#pauseOnOnset();
  }

  onUserState(state: voice.UserState): void {
    if (state === 'speaking') this.#overAgent = this.#call.session.agentState === 'speaking' || this.#replyHeld();
    const a = this.#adaptive;
    if (!a) return;
    if (state === 'listening') a.onSpeechEnd(Date.now());
    else if (state === 'speaking' && a.onSpeechStart(Date.now()) && a.minDelay !== this.#waitMs) {
      this.#waitMs = a.minDelay;
      this.#call.session.updateOptions({ turnHandling: { endpointing: { minDelay: this.#waitMs } } });
      this.#log.debug({ min_delay_ms: this.#waitMs, pauses: a.pauses.length }, 'adaptive wait');
    }
  }

  onAgentState(ev: voice.AgentStateChangedEvent): void {
    const s = this.#call.session;
    if (ev.newState === 'speaking') this.#adaptive?.onAgentSpeaking(Date.now());
    if (ev.newState === 'speaking' && s.userState === 'speaking') this.#overAgent = true;
    // agents-js exposes the current reply only on the activity; a reply that stops playing uninterrupted is paused.
    if (ev.oldState === 'speaking' && ev.newState === 'listening') {
      const speech = s._activity?.currentSpeech;
      this.#heldReply = speech && !speech.interrupted && !speech.done() ? speech : undefined;
      // Where a barge-in's time goes (bench:turns): when the reply paused, by the onset or by agents-js (the VAD, or words).
      if (this.#heldReply && !this.#onsetHold) this.#log.debug({ by: 'agents-js' }, 'agent paused');
    }
  }

  onFalseInterruption(ev: voice.AgentFalseInterruptionEvent): void {
    this.falseInterruptions++;
    this.#opts.metrics.falseInterruption?.(this.#opts.config.call.type, ev.resumed);
  }

  /** The call ends: a running onset pause is dropped. */
  stop(): void {
    if (this.#onsetHold) clearTimeout(this.#onsetHold.timer);
    this.#onsetHold = null;
  }

  /**
   * The caller's onset over the agent's reply pauses it at once, as agents-js would on the VAD's start of speech
   * about 100 ms later (the same pause: the reply is held, not dropped). The VAD then decides: its start of
   * speech (the caller speaking) and agents-js's own pause (the agent listening) take the pause over, and its
   * words stop or resume the reply as before. A sound the VAD never calls speech (a knock, a cough) is resumed
   * here, and counts as a false interruption.
   */
  #pauseOnOnset(): void {
    const session = this.#call.session;
    if (this.#onsetHold || session.agentState !== 'speaking') return;
    const speech = session._activity?.currentSpeech;
    const out = session.output.audio;
    if (!out || !speech || speech.interrupted || speech.done() || !speech.allowInterruptions) return;
    out.pause();
    this.#log.debug({ by: 'onset' }, 'agent paused');
    this.onsetPauses++;
    const check = () => {
      const hold = this.#onsetHold;
      if (!hold) return;
      // agents-js paused the reply itself (the agent listens), or it ended: the pause is no longer ours.
      if (session.agentState !== 'speaking' || speech.interrupted || speech.done()) {
        this.#onsetHold = null;
        return;
      }
      // The VAD hears speech and agents-js is about to pause: wait for it, within a bound.
      if (session.userState === 'speaking' && Date.now() - hold.at < ONSET_HOLD_MAX_MS) {
        hold.timer = setTimeout(check, ONSET_CHECK_MS);
        return;
      }
      this.#onsetHold = null;
      this.onsetResumes++;
      this.#opts.metrics.falseInterruption?.(this.#opts.config.call.type, true);
      out.resume();
    };
    this.#onsetHold = { at: Date.now(), timer: setTimeout(check, ONSET_CONFIRM_MS) };
  }

  /**
   * The agent's reply is paused on the caller's sound (turn_taking.barge_in 'pause'): it stopped speaking
   * without being interrupted, and resumes unless words stop it. An utterance begun then is over the agent.
   */
  #replyHeld(): boolean {
    const held = this.#heldReply;
    return !!held && !held.interrupted && !held.done() && this.#call.session.agentState !== 'speaking';
  }

  /** A backchannel ("mm-hm", "yeah") the caller made over the agent: agents-js never sees it. */
  #isIgnoredBackchannel(text: string, isFinal: boolean): boolean {
    // Over the agent: its speech was playing when the utterance began, or is now (the VAD's start of speech
    // can come after the STT's first interim on a loaded machine).
    const held = this.#replyHeld();
    const overAgent = this.#overAgent || this.#call.session.agentState === 'speaking' || held;
    if (!overAgent) return false;
    if (!isBackchannel(text)) {
      // Words that are not a backchannel confirm the barge-in the pause began: the held reply stops now, not
      // on the final (which a slow STT could send after agents-js had resumed the reply). An interim that may
      // still become one ("I" of "I see") waits for more words.
      if (held && (isFinal || !mayBeBackchannel(text))) this.#heldReply?.interrupt();
      return false;
    }
    this.backchannelsIgnored++;
    if (isFinal) {
      this.backchannelFinalsIgnored++;
      this.#log.debug({ text: this.#call.privacy.log(text) }, 'backchannel ignored');
    }
    return true;
  }
}
