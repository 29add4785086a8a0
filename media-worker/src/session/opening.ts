// The call's opening: who answered. Outbound, the callee's first words (or silence) decide between a person's
// "Hello?" and a machine's greeting, a phone menu is navigated first where the call has an ivr_goal, and a machine
// gets the voicemail message. Inbound with voicemail detection, an opening window listens for a machine calling
// in. The classifiers themselves are voicemail.ts's; this module decides what the call does with their verdicts.
import { VADEventType, llm, type VADEvent, type voice } from '@livekit/agents';
import type { AudioFrame } from '@livekit/rtc-node';
import type { CallConfig } from '../../../schemas/internal.ts';
import type { Logger } from '../../../shared/logger.ts';
import { sideTaskLlm, type CallContext, type CallSessionOptions } from './call-context.ts';
import type { Greeting } from './greeting.ts';
import { sayFixed } from './fixed-sentence.ts';
import { IvrNavigator, askModel, handoverNote, recordStep } from './ivr-navigator.ts';
import { CallerSilence } from './vad-tap.ts';
import { BeepDetector, VoicemailClassifier, transcriptLooksLikeVoicemail } from './voicemail.ts';

export class Opening {
  readonly voicemail: VoicemailClassifier | null = null;
  readonly beep: BeepDetector | null = null;
  /** Outbound with an ivr_goal: the phone-menu navigation that runs before the conversation (ivr-navigator.ts). */
  readonly ivr: IvrNavigator | null = null;
  /** The callee has answered the agent as a person would, or (inbound) the opening window is over: no more
   * answering-machine checks. */
  over = false;
  /** A machine answered: the voicemail message is being left, and the call ends after it. */
  leaving = false;
  #call: CallContext;
  #greeting: Greeting;
  #opts: CallSessionOptions;
  #log: Logger;
  /** Inbound with voicemail detection: a reply of the agent to the caller played out in full (not cut off). */
  #replyPlayedOut = false;
  /** Outbound: a short first utterance (its text) waiting for the callee's silence before it counts as a person. */
  #humanPending: string | null = null;
  /** Outbound with voicemail detection: the callee's silence, as the VAD measures it in their audio. */
  readonly #calleeSilence = new CallerSilence();
  #beepWaiter: (() => void) | null = null;
  #windowTimer: NodeJS.Timeout | null = null;

  constructor(call: CallContext, greeting: Greeting, opts: CallSessionOptions) {
    this.#call = call;
    this.#greeting = greeting;
    this.#opts = opts;
    this.#log = opts.logger;
    const { agent, call: c } = opts.config;
    const outbound = c.type === 'outbound';
    // The control plane says whether this call listens for a machine: outbound, the agent's flag; inbound, the
    // number's voicemail_message. An older control plane leaves it out, and then outbound follows the agent.
    const detects = c.voicemail_detection ?? (outbound && agent.voicemail_detection);
    if (detects && c.type !== 'web') {
      this.voicemail = new VoicemailClassifier();
      this.beep = new BeepDetector();
    }
    if (outbound && c.ivr) this.ivr = this.#navigator(c.ivr);
  }

  /** Outbound with voicemail detection: the session's VAD is tapped, and its events come here. */
  get tapsVad(): boolean {
    return !!this.voicemail && this.#opts.config.call.type === 'outbound';
  }

  /** The session started. Inbound with voicemail detection: the opening window opens. */
  start(): void {
    if (this.voicemail && this.#opts.config.call.type !== 'outbound') {
      this.#windowTimer = setTimeout(() => this.closeInbound('the window ran out'), this.#opts.inboundVoicemailWindowMs ?? 30_000);
    }
  }

  /** The call ends: no verdict is waited for any more. */
  stop(): void {
    if (this.#windowTimer) clearTimeout(this.#windowTimer);
    this.#humanPending = null;
    this.ivr?.stop();
  }

  /** Decides whether a completed turn of the caller gets an LLM reply, while the opening lasts. */
  async onTurn(text: string): Promise<boolean> {
    const type = this.#opts.config.call.type;
    if (type === 'inbound') return this.#inboundTurn(text);
    if (type !== 'outbound' || this.over) return true;
    if (this.ivr?.navigating) {
      // No reply to a phone menu: the navigator decides once the prompt is over.
      this.ivr.hear(text);
      return false;
    }
    const words = text.trim().split(/\s+/).filter(Boolean).length;
    const greeting = this.#greeting;
    if (!greeting.decided) {
      // The callee's first words.
      const verdict = this.voicemail ? this.voicemail.onTranscript(text) : words > 0 ? 'human' : null;
      this.#log.info({ words, verdict, reason: this.voicemail?.reason }, 'outbound opening: the callee spoke');
      if (verdict === 'machine') {
        void this.leave(true, this.voicemail?.reason ?? 'transcript');
        return false;
      }
      if (verdict === null) {
        // No verdict yet: more of the callee's words, a beep, or their silence (the greeting timer) decides.
        if (!greeting.timerArmed && this.#call.session.userState !== 'speaking') greeting.armTimer();
        return false;
      }
      if (this.voicemail) {
        // A short first utterance is a person's "Hello?" only if silence follows it: the turn commits on a short
        // pause, and a machine's greeting pauses between its sentences too.
        this.#confirmHuman(text);
        return false;
      }
      greeting.clearTimer();
      greeting.decided = true;
      // A recording consent sentence goes where the first message would, even without one.
      if (greeting.hasSomethingToSay) {
        greeting.say();
        return false;
      }
      this.over = true;
      return true;
    }
    // The first message is out: a machine's greeting cue still counts until the callee answers it.
    if (this.voicemail && transcriptLooksLikeVoicemail(text)) {
      this.#log.info({ words }, 'outbound opening: a voicemail cue after the greeting');
      void this.leave(true, 'transcript_cue');
      return false;
    }
    if (words > 0) this.over = true;
    return true;
  }

  /**
   * Feed an input frame to the beep detector (voicemail detection). A beep means a machine until the callee has
   * answered the agent: also after a greeting said on silence, or after a short first utterance the STT made of a
   * machine's greeting (8 kHz phone audio is hard on it). Inbound, it does in the opening window, and for a
   * greeting cue's wait begun in it.
   */
  onFrame(frame: AudioFrame): void {
    if (!this.beep || this.beep.detected || (this.over && !this.#beepWaiter)) return;
    if (this.beep.push(frame)) {
      this.#log.info('voicemail beep detected');
      if (this.#beepWaiter) this.#beepWaiter();
      else void this.leave(false, 'beep');
    }
  }

  onVadEvent(ev: VADEvent): void {
    this.#calleeSilence.onEvent(ev);
    if (ev.type === VADEventType.INFERENCE_DONE) this.#checkHuman();
  }

  /** Inbound opening: an LLM reply (not the first message, a `say`) heard to its end. A discarded preemptive
   * reply counts as interrupted. */
  onSpeechCreated(ev: voice.SpeechCreatedEvent): void {
    const handle = ev.speechHandle;
    if (this.#opts.config.call.type === 'inbound' && this.voicemail && !this.over && ev.source === 'generate_reply') {
      void handle.waitForPlayout().then(
        () => {
          if (!handle.interrupted) this.#replyPlayedOut = true;
        },
        () => {},
      );
    }
  }

  onUserState(state: voice.UserState, sessionStarted: boolean): void {
    // Inbound: speaking after a reply the agent said in full is answering it, as a person does; a machine's
    // greeting runs on over the agent (and cuts its replies off).
    if (state === 'speaking' && this.#replyPlayedOut) this.closeInbound('the caller answered the agent');
    if (this.ivr?.navigating && (state === 'speaking' || state === 'listening')) this.ivr.calleeSpeaking(state === 'speaking');
    // Outbound, before the greeting: the callee's speech holds the greeting timer; its end re-arms it.
    if (this.#opts.config.call.type === 'outbound' && !this.#greeting.decided && sessionStarted && !this.ivr?.navigating) {
      if (state === 'speaking') {
        this.#greeting.clearTimer();
        if (this.#humanPending !== null) this.#reopenVerdict();
      } else if (state === 'listening') this.#greeting.armTimer();
    }
  }

  /** Inbound: no more answering-machine checks (a cue's wait already begun still hears its beep). */
  closeInbound(why: string): void {
    if (!this.voicemail || this.over || this.leaving || this.#call.endReason) return;
    this.over = true;
    this.#log.info({ why }, 'inbound opening over: no voicemail');
  }

  /** A machine answered: the voicemail message (after its beep, within a bound), then the end of the call. */
  async leave(waitForBeep: boolean, reason: string): Promise<void> {
    if (this.leaving || this.#call.endReason) return;
    this.leaving = true;
    this.#greeting.abandon();
    this.#humanPending = null;
    this.voicemail?.markMachine(reason);
    this.#log.info({ reason: this.voicemail?.reason, wait_for_beep: waitForBeep && !this.beep?.detected }, 'voicemail detected');
    if (waitForBeep && !this.beep?.detected) await this.#waitForBeep(this.#opts.voicemailBeepWaitMs ?? 2500);
    const message = this.#call.render(this.#opts.config.agent.voicemail_message);
    const session = this.#call.session;
    if (message && !this.#call.endReason) {
      try {
        // A first message said on the callee's silence stops here: the machine records the voicemail alone.
        void Promise.resolve(session.interrupt()).catch(() => {});
      } catch {
        // nothing to interrupt
      }
      const handle = sayFixed(session, message, { allowInterruptions: false });
      await handle.waitForPlayout();
      this.#log.info({ interrupted: handle.interrupted }, 'voicemail message played');
    }
    await this.#call.end('voicemail');
  }

  /**
   * Inbound with voicemail detection, a caller's turn in the opening window. A greeting cue ("you've reached...")
   * holds the reply while the beep is awaited: cue and beep make a machine, which gets the voicemail message. A
   * cue alone does not: a person calling in says "I got your voicemail" or "I'm not available on Monday", and
   * the cost of taking them for a machine (the message, then a hang-up on a customer) is far above that of
   * talking to a machine that never beeped. Without a beep the turn is answered, a little late.
   */
  async #inboundTurn(text: string): Promise<boolean> {
    if (!this.voicemail || this.over) return true;
    if (transcriptLooksLikeVoicemail(text)) {
      this.#log.info('inbound opening: a voicemail cue; waiting for the beep');
      const beeped = await this.#waitForBeep(this.#opts.voicemailBeepWaitMs ?? 2500);
      if (this.#call.endReason || this.leaving) return false;
      if (beeped) {
        void this.leave(false, 'transcript_cue');
        return false;
      }
      this.#log.info('inbound opening: no beep after the cue; answered as a person');
    }
    return true;
  }

  /** Resolves true on the beep (at once if it was heard already), false after `ms` without one. */
  #waitForBeep(ms: number): Promise<boolean> {
    if (this.beep?.detected) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const t = setTimeout(() => {
        this.#beepWaiter = null;
        resolve(false);
      }, ms);
      this.#beepWaiter = () => {
        clearTimeout(t);
        this.#beepWaiter = null;
        resolve(true);
      };
    });
  }

  /**
   * Greets a person once the callee stays quiet after their short first utterance; more speech reopens the
   * verdict. The silence is counted in the callee's audio by the VAD (onVadEvent), so the same audio gets the
   * same verdict however late the STT's final or the VAD's events come.
   */
  #confirmHuman(text: string): void {
    if (this.#call.session.userState === 'speaking') {
      this.#reopenVerdict();
      return;
    }
    this.#humanPending = text;
    this.#checkHuman();
  }

  #checkHuman(): void {
    const text = this.#humanPending;
    if (text === null) return;
    if (this.#greeting.decided || this.leaving || this.#call.endReason) {
      this.#humanPending = null;
      return;
    }
    const quiet = this.#calleeSilence.quietMs;
    if (quiet === null || quiet < (this.#opts.outboundHumanSilenceMs ?? 800)) return;
    this.#humanPending = null;
    this.#log.info({ quiet_ms: quiet }, 'outbound opening: a person answered');
    this.#greeting.clearTimer();
    this.#greeting.decided = true;
    // A recording consent sentence goes where the first message would, even without one.
    if (this.#greeting.hasSomethingToSay) {
      this.#greeting.say();
      return;
    }
    // No first message: the agent answers the callee's words.
    this.over = true;
    this.#call.session.generateReply({ userInput: text });
  }

  #reopenVerdict(): void {
    this.#humanPending = null;
    if (this.voicemail?.verdict === 'human') {
      this.voicemail.reopen();
      this.#log.info('outbound opening: the callee went on speaking; no verdict yet');
    }
  }

  /**
   * The phone-menu navigator of an outbound call with an ivr_goal: silent until a person answers; then the
   * conversation starts as on a person's "Hello?" (the first message, else a reply to their words).
   */
  #navigator(ivr: NonNullable<CallConfig['call']['ivr']>): IvrNavigator {
    let step = 0;
    const call = this.#call;
    return new IvrNavigator({
      goal: ivr.goal,
      maxMenus: ivr.max_menus,
      logger: this.#log,
      redact: (text) => call.privacy.log(text),
      ask: (menu, pressed) => askModel(sideTaskLlm(this.#opts.models), ivr.goal, menu, pressed),
      press: async (keys) => {
        if (!this.#opts.actions?.sendDtmf) throw new Error('DTMF is not available on this call');
        await this.#opts.actions.sendDtmf(keys);
      },
      // The person's own words are added by the reply below (or here, when the first message answers them).
      onStep: (s) => s.kind !== 'person' && recordStep(call.session, s, ++step),
      onGiveUp: () => void call.end('ivr_failed'),
      onPerson: (text) => {
        if (call.endReason || this.leaving) return;
        this.#greeting.decided = true;
        this.over = true;
        this.#greeting.clearTimer();
        const note = llm.ChatMessage.create({ role: 'system', content: handoverNote(ivr.goal, this.ivr?.pressed ?? []) });
        call.agent._chatCtx.items.push(note);
        if (this.#greeting.hasSomethingToSay) {
          const said = llm.ChatMessage.create({ role: 'user', content: text });
          call.agent._chatCtx.items.push(said);
          call.session._conversationItemAdded(said);
          this.#greeting.say();
          return;
        }
        call.session.generateReply({ userInput: text });
      },
    });
  }
}
