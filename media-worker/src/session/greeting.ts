// The agent's first message: synthesized ahead of the session's start where the agent greets as the call starts
// (web and inbound), said after the recording consent, and, on an outbound call, held until the callee has spoken
// or stayed silent for the greeting wait.
import type { metrics as agentsMetrics } from '@livekit/agents';
import type { Logger } from '../../../shared/logger.ts';
import type { CallContext, CallSessionOptions } from './call-context.ts';
import { type GreetingAudio, synthesizeAhead } from './greeting-audio.ts';
import { sayFixed } from './fixed-sentence.ts';

export class Greeting {
  /** Outbound: the first message is said (or decided against); the callee's words go to the LLM from here. */
  decided = false;
  #call: CallContext;
  #opts: CallSessionOptions;
  #log: Logger;
  #collectMetrics: (m: agentsMetrics.AgentMetrics) => void;
  #said = false;
  #audio: GreetingAudio | null = null;
  /** The greeting's audio handed to the session: synthesized ahead, maybe still being synthesized. */
  #playing: GreetingAudio | null = null;
  /**
   * Takes the TTS's metrics until the session's activity listens to them (session.start): a greeting synthesized
   * ahead can finish first, and its TTFB and characters would be lost. Metrics seen by both count once.
   */
  #stopEarlyTtsMetrics: (() => void) | null = null;
  #timer: NodeJS.Timeout | null = null;

  constructor(call: CallContext, opts: CallSessionOptions, collectMetrics: (m: agentsMetrics.AgentMetrics) => void) {
    this.#call = call;
    this.#opts = opts;
    this.#log = opts.logger;
    this.#collectMetrics = collectMetrics;
  }

  /** The first message as the call says it, or '' when the agent has none. */
  get text(): string {
    return this.#call.render(this.#call.config.agent.first_message);
  }

  /** Something goes where the first message would: the message, or a recording consent sentence without one. */
  get hasSomethingToSay(): boolean {
    return !!this.text || this.#call.consent.mode !== 'none';
  }

  /** Outbound: the greeting timer runs (the callee has not spoken, or has stopped speaking). */
  get timerArmed(): boolean {
    return this.#timer !== null;
  }

  /**
   * Starts synthesizing the first message now, ahead of the session's start (greeting-audio.ts), where the
   * agent greets as the call starts (web and inbound). Outbound calls wait for the callee, who may turn out to
   * be a machine. Called again by start(); only the first call does anything.
   */
  prepare(): void {
    if (this.#audio || this.#said || this.#call.endReason || this.#call.config.call.type === 'outbound') return;
    const text = this.text;
    const tts = this.#opts.models.tts;
    // A realtime model says it itself when the session has started (say()).
    if (!text || !tts) return;
    const collect = (m: agentsMetrics.TTSMetrics) => this.#collectMetrics(m);
    tts.on('metrics_collected', collect);
    this.#stopEarlyTtsMetrics = () => {
      tts.off('metrics_collected', collect);
      this.#stopEarlyTtsMetrics = null;
    };
    try {
      this.#audio = synthesizeAhead(tts, text);
    } catch (err) {
      // The session's own TTS path says it instead.
      this.#log.warn({ err: (err as Error).message }, 'greeting synthesis ahead failed');
    }
  }

  /** The session's activity listens to the TTS now (or its start failed): the early listener goes. */
  sessionStarted(): void {
    this.#stopEarlyTtsMetrics?.();
  }

  say(): void {
    const session = this.#call.session;
    if (this.#said || this.#call.endReason) return;
    // Recording consent goes before anything else the agent says; a question holds the first message for its answer.
    if (this.#call.consent.before((text) => this.#speak(text, false).waitForPlayout(), () => this.say())) return;
    this.#said = true;
    const text = this.text;
    const audio = this.#audio;
    this.#audio = null;
    // Kept while it plays: the call's end stops its synthesis (stop()), whether or not the session's close does.
    this.#playing = audio;
    if (text && !this.#opts.models.tts) this.#speak(text, true);
    else if (text) session.say(text, { allowInterruptions: true, ...(audio ? { audio: audio.audio } : {}) });
    else audio?.cancel();
  }

  /** Says a fixed sentence (fixed-sentence.ts; a model may still word it its own way, which the docs say). */
  #speak(text: string, allowInterruptions: boolean) {
    return sayFixed(this.#call.session, text, { allowInterruptions });
  }

  /**
   * Outbound: greet after the callee has been silent for the greeting wait. Suspended while the callee speaks
   * (re-armed when they stop): a machine's greeting runs longer than the wait, and greeting over it would both
   * talk into the recording and turn off the answering-machine checks. The callee's transcript usually decides
   * first (opening.ts); the timer covers a callee who says nothing, or words the STT did not catch.
   */
  armTimer(): void {
    this.clearTimer();
    if (this.decided || this.#call.endReason) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (this.decided || this.#call.endReason) return;
      if (this.#call.session.userState === 'speaking') return; // re-armed when the callee stops
      this.#log.info('outbound greeting: the callee is silent');
      this.decided = true;
      this.say();
    }, this.#opts.outboundGreetingWaitMs ?? 4000);
  }

  clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  /** A machine answered: no greeting (the voicemail message takes its place). */
  abandon(): void {
    this.decided = true;
    this.clearTimer();
    this.#dropAudio();
  }

  /** The call ends: nothing more is said, and no listener stays on the TTS. */
  stop(): void {
    this.clearTimer();
    this.#dropAudio();
    // The greeting still being synthesized stops too: nothing will play it.
    this.#playing?.cancel();
    this.#playing = null;
    // A call ended before its session started (the caller hung up while it connected) leaves no listener behind.
    this.#stopEarlyTtsMetrics?.();
  }

  #dropAudio(): void {
    this.#audio?.cancel();
    this.#audio = null;
  }
}

