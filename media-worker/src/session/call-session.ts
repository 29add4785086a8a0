// One call: the AgentSession and every behaviour of the agent around it (first message, end-call phrases,
// max duration, silence timeout, voicemail on outbound and inbound calls, tools, knowledge), the reports to the
// control plane and the latency metrics. It needs no room: audio I/O can be a room (through `room`) or any
// AudioInput/AudioOutput.
import { VADEventType, llm, voice, type metrics as agentsMetrics, type stt as agentsStt, type tts as agentsTts, type VAD, type VADEvent } from '@livekit/agents';
import type { AudioFrame, Room } from '@livekit/rtc-node';
import type { CallConfig, EndReason, EndedMessage, EndedReport, SquadMemberConfig } from '../../../schemas/internal.ts';
import type { CallReporter, InternalApiClient } from '../../../shared/internal-api.ts';
import { interpolate, mergeVariables } from '../../../shared/template.ts';
import { matchesEndPhrase } from '../../../shared/phrases.ts';
import type { Logger } from '../../../shared/logger.ts';
import type { MetricsSink } from '../metrics.ts';
import { VapAgent } from './agent.ts';
import { isBackchannel, mayBeBackchannel } from './backchannel.ts';
import { pausesOnOnset, turnHandlingFor } from './mappings.ts';
import { OnsetDetector } from './onset.ts';
import { installRaceFix } from './race-fix.ts';
import { installPromptPause } from './prompt-pause.ts';
import { installRoomSessionHostGuard } from './room-session-host.ts';
import { buildTools, type CallActions } from './tools.ts';
import { TurnMetrics, type ProviderLabels } from './turn-metrics.ts';
import { TurnTrace } from './turn-trace.ts';
import { PreemptiveWaste } from './preemptive-waste.ts';
import { interimSoundsFinished } from './transcript-turn-detector.ts';
import { BeepDetector, VoicemailClassifier, transcriptLooksLikeVoicemail } from './voicemail.ts';
import { CallerSilence, tapVad } from './vad-tap.ts';
import { type GreetingAudio, synthesizeAhead } from './greeting-audio.ts';
import { CallPrivacy } from './privacy.ts';
import { RecordingConsent } from './recording-consent.ts';
import { Squad, withSummary, type Arrival } from './squad.ts';
import { IvrNavigator, askModel, handoverNote, recordStep } from './ivr-navigator.ts';
import { nullSink } from '../metrics.ts';

export interface CallModels {
  stt: agentsStt.STT;
  llm: llm.LLM;
  tts: agentsTts.TTS;
  vad: VAD;
  /** The local end-of-turn model; 'vad' ends turns on VAD silence alone. */
  turnDetection: NonNullable<voice.AgentSessionOptions['turnDetection']>;
}

export interface CallSessionOptions {
  config: CallConfig;
  models: CallModels;
  labels: ProviderLabels;
  reporter: CallReporter | null;
  api: InternalApiClient | null;
  metrics: MetricsSink;
  /** The call's logger, bound to its call id (the session's lines add no `call_id` of their own). */
  logger: Logger;
  /** Room actions (hang-up, SIP transfer, DTMF); absent ones fail politely. */
  actions?: Partial<Pick<CallActions, 'transfer' | 'warmTransfer' | 'sendDtmf'>> & { hangUp?: () => Promise<void> };
  /** Throttle of transcript partials. */
  transcriptIntervalMs?: number;
  /** Outbound calls: speak the first message anyway after this long of the callee's silence (from the answer, or
   * from the end of the callee's last speech); never while the callee speaks. */
  outboundGreetingWaitMs?: number;
  /** Outbound with voicemail detection: the callee's silence after a short first utterance that makes it a
   * person's "Hello?" (a machine's greeting pauses between sentences, then goes on). Counted in the callee's
   * audio from the VAD's end of speech, not on the clock. */
  outboundHumanSilenceMs?: number;
  /** Overrides the preemptive-generation choice (benchmarks compare like with like). */
  preemptiveGeneration?: boolean;
  /** After a voicemail greeting, the longest wait for the beep before leaving the message (outbound), or before
   * taking the caller for a person after all (inbound). */
  voicemailBeepWaitMs?: number;
  /** Inbound with voicemail detection: how long from the start a beep or a greeting cue can still make the caller a
   * machine (the window closes earlier once the caller answers a reply the agent said in full). */
  inboundVoicemailWindowMs?: number;
  /** How long the end of a call waits for the agent session to close before it reports and hangs up anyway. */
  sessionCloseWaitMs?: number;
  /**
   * A squad's call: the models of another member (squad.ts). Without it, members speak with the session's
   * models (their instructions, tools and knowledge still switch).
   */
  memberModels?: (member: SquadMemberConfig) => { llm?: llm.LLM; tts?: agentsTts.TTS; stt?: agentsStt.STT };
  /** Sample rate of the caller's audio taken from the room (the STT's own; agents-js defaults to 24 kHz). */
  inputSampleRate?: number;
  /** Rate of the agent's published audio. Phone legs use 8000: the caller's G.711 line carries nothing above
   * 4 kHz, so nothing above it is sent (docs/decisions.md, "Phone legs publish 8 kHz audio"). */
  outputSampleRate?: number;
}

/** An onset pause that agents-js has not taken over is checked this long after it began (ms)... */
const ONSET_CONFIRM_MS = 200;
/** ...and again at this interval while the VAD hears speech, up to a bound (then it resumes). */
const ONSET_CHECK_MS = 50;
const ONSET_HOLD_MAX_MS = 1000;

// The end-phrase rule is shared with agent tests (control plane), which judge a transcript the same way.
export { matchesEndPhrase };

export class CallSession {
  readonly session: voice.AgentSession;
  /** The agent speaking now (a squad's call switches it at each hand-off). */
  agent: VapAgent;
  /** A call started on a squad: its members, hand-offs and their count. */
  readonly squad: Squad | null = null;
  /** A squad's call: each agent's own turns' latency, by agent id. */
  readonly agentMetrics = new Map<string, TurnMetrics>();
  #agentLlm = new Map<string, llm.LLM>();
  #agentBase!: Omit<ConstructorParameters<typeof VapAgent>[0], 'instructions' | 'tools' | 'knowledge'>;
  readonly turnMetrics: TurnMetrics;
  /** Where each user turn's end-of-utterance time went (debug log). */
  readonly turnTrace: TurnTrace;
  readonly config: CallConfig;
  /** What the reports and logs may carry of the conversation (the call's data retention). */
  readonly privacy: CallPrivacy;
  /** The agent's recording consent: said before anything else; `ask` holds the recording for the caller's yes. */
  readonly consent: RecordingConsent;
  readonly variables: Record<string, unknown>;
  readonly ended: Promise<EndedReport>;
  endReason: EndReason | null = null;
  startedAt = 0;
  voicemail: VoicemailClassifier | null = null;
  beep: BeepDetector | null = null;
  /** Outbound with an ivr_goal: the phone-menu navigation that runs before the conversation (ivr-navigator.ts). */
  readonly ivr: IvrNavigator | null = null;
  /** Preemptive generations discarded in this call, and their completion tokens. */
  readonly preemptive: PreemptiveWaste;
  /** Backchannel transcripts kept from agents-js (`ignore_backchannels`), interim and final, and finals alone. */
  backchannelsIgnored = 0;
  backchannelFinalsIgnored = 0;
  /** Pauses on the caller's sound that no word confirmed (agents-js's false interruptions; most resume). */
  falseInterruptions = 0;

  #opts: CallSessionOptions;
  #log: Logger;
  #resolveEnded!: (r: EndedReport) => void;
  #timers: NodeJS.Timeout[] = [];
  #transcriptTimer: NodeJS.Timeout | null = null;
  #lastTranscriptAt = 0;
  #hangupRequested = false;
  #firstMessageSaid = false;
  #greeting: GreetingAudio | null = null;
  /**
   * Takes the TTS's metrics until the session's activity listens to them (session.start): a greeting synthesized
   * ahead can finish first, and its TTFB and characters would be lost. Metrics seen by both count once.
   */
  #stopEarlyTtsMetrics: (() => void) | null = null;
  /** Outbound: the first message is said (or decided against); the callee's words go to the LLM from here. */
  #greetingDone = false;
  /** The callee has answered the agent as a person would, or (inbound) the opening window is over: no more
   * answering-machine checks. */
  #openingOver = false;
  /** Inbound with voicemail detection: a reply of the agent to the caller played out in full (not cut off). */
  #replyPlayedOut = false;
  #greetingTimer: NodeJS.Timeout | null = null;
  /** Outbound: a short first utterance (its text) waiting for the callee's silence before it counts as a person. */
  #humanPending: string | null = null;
  /** Outbound with voicemail detection: the callee's silence, as the VAD measures it in their audio. */
  readonly #calleeSilence = new CallerSilence();
  #voicemailLeaving = false;
  #beepWaiter: (() => void) | null = null;
  #error: string | undefined;
  /** The caller's current utterance began while the agent was speaking (or the agent began over it). */
  #overAgent = false;
  /** The reply that last went from speaking to listening without an interruption (a pause; see #replyHeld). */
  #heldReply: voice.SpeechHandle | undefined;
  /** barge_in 'pause': the caller's onset pauses the agent before the VAD's start of speech (onset.ts). */
  #onset: OnsetDetector | undefined;
  /** The running onset pause: when it began, and the check that hands it to agents-js or resumes it. */
  #onsetHold: { at: number; timer: NodeJS.Timeout } | null = null;
  /** Onset pauses, and those the VAD did not take over (a noise: the reply resumed). */
  onsetPauses = 0;
  onsetResumes = 0;

  constructor(opts: CallSessionOptions) {
    installRaceFix();
    installPromptPause();
    installRoomSessionHostGuard();
    this.#opts = opts;
    this.#log = opts.logger;
    this.config = opts.config;
    this.privacy = new CallPrivacy(opts.config.data_retention);
    // Before the AgentSession is made: its loggers are taken from the framework's when it is constructed.
    this.privacy.guardFrameworkOutput();
    const { agent, call } = opts.config;
    this.consent = new RecordingConsent(agent.recording_consent, opts.config.recording.enabled && this.privacy.mode !== 'no_content', agent.recording_consent_message);
    this.variables = mergeVariables(agent.dynamic_variables, call.variables);
    this.turnMetrics = new TurnMetrics(opts.metrics, opts.labels, call.type);
    const llmLabels = { provider: opts.labels.llm.provider, model: opts.labels.llm.model, call_type: call.type };
    this.preemptive = new PreemptiveWaste((tokens, generations) => opts.metrics.preemptiveWaste?.(llmLabels, tokens, generations));
    this.ended = new Promise((r) => (this.#resolveEnded = r));

    const outbound = call.type === 'outbound';
    // The control plane says whether this call listens for a machine: outbound, the agent's flag; inbound, the
    // number's voicemail_message. An older control plane leaves it out, and then outbound follows the agent.
    const detects = call.voicemail_detection ?? (outbound && agent.voicemail_detection);
    if (detects && call.type !== 'web') {
      this.voicemail = new VoicemailClassifier();
      this.beep = new BeepDetector();
    }
    if (pausesOnOnset(agent.interruption_sensitivity, agent.turn_taking)) this.#onset = new OnsetDetector();
    if (outbound && call.ivr) this.ivr = this.#navigator(call.ivr);

    const actions: CallActions = {
      hangUp: () => this.requestHangup(),
      transfer: async (destination) => {
        if (!opts.actions?.transfer) throw new Error('transfer is not available on this call');
        await opts.actions.transfer(destination);
        void this.end('transferred');
      },
      // Joined: the agent's part is over (the worker leaves the room without hanging up the legs).
      warmTransfer: async (destination) => {
        if (!opts.actions?.warmTransfer) throw new Error('warm transfer is not available on this call');
        const r = await opts.actions.warmTransfer(destination);
        if (r.ok) void this.end('transferred');
        return r;
      },
      sendDtmf: async (digits) => {
        if (!opts.actions?.sendDtmf) throw new Error('DTMF is not available on this call');
        await opts.actions.sendDtmf(digits);
      },
      addToDoNotCall: async (reason) => {
        if (!opts.api) throw new Error('no control plane to list the number with');
        await opts.api.addToDoNotCall(call.id, reason ? { reason } : {});
      },
    };
    if (opts.config.squad) {
      this.squad = new Squad(opts.config, {
        current: () => this.agent,
        currentLlm: () => this.#agentLlm.get(this.squad!.currentAgentId) ?? opts.models.llm,
        makeAgent: (member, arrival) => this.#memberAgent(member, arrival, actions),
        onSwitch: (member, agent) => {
          this.agent = agent as VapAgent;
          if (!this.agentMetrics.has(member.agent.id)) this.agentMetrics.set(member.agent.id, new TurnMetrics(nullSink, opts.labels, call.type));
        },
        report: (h) => opts.reporter?.handoff(h),
        logger: opts.logger,
      });
      this.agentMetrics.set(agent.id, new TurnMetrics(nullSink, opts.labels, call.type));
      this.#agentLlm.set(agent.id, opts.models.llm);
    }
    const tools = [...buildTools(opts.config, actions), ...(this.squad?.toolsFor(agent.id) ?? [])];

    const retrieves = opts.config.knowledge.mode === 'retrieve' && opts.config.knowledge.knowledge_base_ids.length > 0;
    // Preemptive generation starts the LLM on the transcript, before onUserTurnCompleted: it would miss the
    // retrieved knowledge, and would spend a request on a voicemail greeting or the callee's "Hello?". Kept
    // for the other calls, where it saves up to the endpointing delay.
    const turnHandling = turnHandlingFor(agent, { turnDetector: opts.models.turnDetection, preemptiveAllowed: !retrieves && !outbound });
    if (opts.preemptiveGeneration !== undefined) turnHandling.preemptiveGeneration = { ...turnHandling.preemptiveGeneration, enabled: opts.preemptiveGeneration };
    this.#agentBase = {
      callId: call.id,
      api: opts.api,
      logger: opts.logger,
      beforeReply: (text) => this.#beforeReply(text),
      metrics: opts.metrics,
      callType: call.type,
      // Beep and onset detection read the caller's audio where the STT does, whatever the audio input is.
      onInputAudio: this.beep || this.#onset ? this.onInputFrame : undefined,
      dropTranscript: agent.turn_taking.ignore_backchannels ? (text, isFinal) => this.#isIgnoredBackchannel(text, isFinal) : undefined,
      // With the transcript rules, a finished-sounding interim starts the preemptive reply before the final.
      preflight: turnHandling.preemptiveGeneration?.enabled && agent.turn_taking.detection === 'transcript' ? interimSoundsFinished : undefined,
    };
    this.agent = new VapAgent({
      ...this.#agentBase,
      instructions: opts.config.prompt,
      tools,
      knowledge: opts.config.knowledge,
      // A squad's agents carry their ids: the session's hand-off items say who speaks each message.
      ...(this.squad ? { id: agent.id } : {}),
    });

    this.session = new voice.AgentSession({
      stt: opts.models.stt,
      llm: opts.models.llm,
      tts: opts.models.tts,
      // The callee's silence after a short first utterance decides a person from a machine: it is read off the
      // VAD's events, in the callee's audio. A timer would race the VAD, which runs behind the line under load.
      vad: this.voicemail && outbound ? tapVad(opts.models.vad, (ev) => this.#onVadEvent(ev)) : opts.models.vad,
      userAwayTimeout: agent.silence_timeout_seconds,
      // A SIP line has no echo to cancel, and a web client cancels its own.
      aecWarmupDuration: null,
      turnHandling,
    });
    this.turnTrace = new TurnTrace(this.session, opts.logger, this.preemptive);
    this.#wire();
  }

  /** Interpolated with the call's variables (per-call over the agent's dynamic_variables). */
  render(template: string | null): string {
    return template ? interpolate(template, this.variables).trim() : '';
  }

  /**
   * Starts synthesizing the first message now, ahead of the session's start (greeting-audio.ts), where the
   * agent greets as the call starts (web and inbound). Outbound calls wait for the callee, who may turn out to
   * be a machine. Called again by start(); only the first call does anything.
   */
  prepareGreeting(): void {
    if (this.#greeting || this.#firstMessageSaid || this.endReason || this.config.call.type === 'outbound') return;
    const text = this.render(this.config.agent.first_message);
    if (!text) return;
    const tts = this.#opts.models.tts;
    const collect = (m: agentsMetrics.TTSMetrics) => this.#collectMetrics(m);
    tts.on('metrics_collected', collect);
    this.#stopEarlyTtsMetrics = () => {
      tts.off('metrics_collected', collect);
      this.#stopEarlyTtsMetrics = null;
    };
    try {
      this.#greeting = synthesizeAhead(tts, text);
    } catch (err) {
      // The session's own TTS path says it instead.
      this.#log.warn({ err: (err as Error).message }, 'greeting synthesis ahead failed');
    }
  }

  async start(io: { room?: Room; audioInput?: voice.AudioInput; audioOutput?: voice.AudioOutput; roomName?: string } = {}): Promise<void> {
    this.prepareGreeting();
    if (io.audioInput) this.session.input.audio = io.audioInput;
    if (io.audioOutput) this.session.output.audio = io.audioOutput;
    // The caller talks; typed text on the room's chat topic (agents-js's default) would let any web page make the
    // agent reply, past the turn-taking and consent logic, as fast as it can send (room-session-host.ts).
    const inputOptions = { textEnabled: false, ...(this.#opts.inputSampleRate ? { audioSampleRate: this.#opts.inputSampleRate } : {}) };
    const outputOptions = this.#opts.outputSampleRate ? { audioSampleRate: this.#opts.outputSampleRate } : undefined;
    try {
      await this.session.start({ agent: this.agent, room: io.room, inputOptions, outputOptions });
    } finally {
      this.#stopEarlyTtsMetrics?.();
    }
    this.startedAt = Date.now();
    this.#opts.reporter?.started({ started_at: new Date(this.startedAt).toISOString(), ...(io.roomName ? { room_name: io.roomName } : {}) });

    const { agent, call } = this.config;
    this.#timers.push(setTimeout(() => void this.end('max_duration'), agent.max_duration_seconds * 1000));

    if (call.type !== 'outbound') {
      // Inbound with voicemail detection: the agent greets as usual, and the opening window listens for a machine.
      if (this.voicemail) this.#timers.push(setTimeout(() => this.#closeInboundOpening('the window ran out'), this.#opts.inboundVoicemailWindowMs ?? 30_000));
      this.#sayFirstMessage();
    } else {
      // Outbound: the callee speaks first ("Hello?", or a machine's greeting); if they don't, we greet anyway.
      // A phone menu's navigation greets nobody: the person it reaches starts the conversation.
      if (!this.ivr) this.#armGreetingTimer();
    }
  }

  /**
   * Outbound: greet after the callee has been silent for the greeting wait. Suspended while the callee speaks
   * (re-armed when they stop): a machine's greeting runs longer than the wait, and greeting over it would both
   * talk into the recording and turn off the answering-machine checks. The callee's transcript usually decides
   * first (#beforeReply); the timer covers a callee who says nothing, or words the STT did not catch.
   */
  #armGreetingTimer(): void {
    this.#clearGreetingTimer();
    if (this.#greetingDone || this.#voicemailLeaving || this.endReason) return;
    this.#greetingTimer = setTimeout(() => {
      this.#greetingTimer = null;
      if (this.#greetingDone || this.#voicemailLeaving || this.endReason) return;
      if (this.session.userState === 'speaking') return; // re-armed when the callee stops
      this.#log.info('outbound greeting: the callee is silent');
      this.#greetingDone = true;
      this.#sayFirstMessage();
    }, this.#opts.outboundGreetingWaitMs ?? 4000);
  }

  #clearGreetingTimer(): void {
    if (this.#greetingTimer) clearTimeout(this.#greetingTimer);
    this.#greetingTimer = null;
  }

  /**
   * Feed an input frame to the beep detector (voicemail detection). A beep means a machine until the callee has
   * answered the agent: also after a greeting said on silence, or after a short first utterance the STT made of a
   * machine's greeting (8 kHz phone audio is hard on it). Inbound, it does in the opening window, and for a
   * greeting cue's wait begun in it.
   */
  onInputFrame = (frame: AudioFrame): void => {
    if (this.#onset?.push(frame)) this.#pauseOnOnset();
    if (!this.beep || this.beep.detected || (this.#openingOver && !this.#beepWaiter)) return;
    if (this.beep.push(frame)) {
      this.#log.info('voicemail beep detected');
      if (this.#beepWaiter) this.#beepWaiter();
      else void this.#leaveVoicemail(false, 'beep');
    }
  };

  /**
   * The caller's onset over the agent's reply pauses it at once, as agents-js would on the VAD's start of speech
   * about 100 ms later (the same pause: the reply is held, not dropped). The VAD then decides: its start of
   * speech (the caller speaking) and agents-js's own pause (the agent listening) take the pause over, and its
   * words stop or resume the reply as before. A sound the VAD never calls speech (a knock, a cough) is resumed
   * here, and counts as a false interruption.
   */
  #pauseOnOnset(): void {
    if (this.#onsetHold || this.session.agentState !== 'speaking') return;
    const speech = this.session._activity?.currentSpeech;
    const out = this.session.output.audio;
    if (!out || !speech || speech.interrupted || speech.done() || !speech.allowInterruptions) return;
    out.pause();
    this.#log.debug({ by: 'onset' }, 'agent paused');
    this.onsetPauses++;
    const check = () => {
      const hold = this.#onsetHold;
      if (!hold) return;
      // agents-js paused the reply itself (the agent listens), or it ended: the pause is no longer ours.
      if (this.session.agentState !== 'speaking' || speech.interrupted || speech.done()) {
        this.#onsetHold = null;
        return;
      }
      // The VAD hears speech and agents-js is about to pause: wait for it, within a bound.
      if (this.session.userState === 'speaking' && Date.now() - hold.at < ONSET_HOLD_MAX_MS) {
        hold.timer = setTimeout(check, ONSET_CHECK_MS);
        return;
      }
      this.#onsetHold = null;
      this.onsetResumes++;
      this.#opts.metrics.falseInterruption?.(this.config.call.type, true);
      out.resume();
    };
    this.#onsetHold = { at: Date.now(), timer: setTimeout(check, ONSET_CONFIRM_MS) };
  }

  #sayFirstMessage(): void {
    if (this.#firstMessageSaid || this.endReason) return;
    // Recording consent goes before anything else the agent says; a question holds the first message for its answer.
    if (this.consent.before((text) => this.session.say(text, { allowInterruptions: false }).waitForPlayout(), () => this.#sayFirstMessage())) return;
    this.#firstMessageSaid = true;
    const text = this.render(this.config.agent.first_message);
    const greeting = this.#greeting;
    this.#greeting = null;
    if (text) this.session.say(text, { allowInterruptions: true, ...(greeting ? { audio: greeting.audio } : {}) });
    else greeting?.cancel();
  }

  /**
   * The agent's reply is paused on the caller's sound (turn_taking.barge_in 'pause'): it stopped speaking
   * without being interrupted, and resumes unless words stop it. An utterance begun then is over the agent.
   */
  #replyHeld(): boolean {
    const held = this.#heldReply;
    return !!held && !held.interrupted && !held.done() && this.session.agentState !== 'speaking';
  }

  /** A backchannel ("mm-hm", "yeah") the caller made over the agent: agents-js never sees it. */
  #isIgnoredBackchannel(text: string, isFinal: boolean): boolean {
    // Over the agent: its speech was playing when the utterance began, or is now (the VAD's start of speech
    // can come after the STT's first interim on a loaded machine).
    const held = this.#replyHeld();
    const overAgent = this.#overAgent || this.session.agentState === 'speaking' || held;
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
      this.#log.debug({ text: this.privacy.log(text) }, 'backchannel ignored');
    }
    return true;
  }

  /** Decides whether a completed user turn gets an LLM reply. */
  async #beforeReply(text: string): Promise<boolean> {
    if (this.endReason || this.#voicemailLeaving) return false;
    if (this.consent.pending) {
      // The answer to the recording question: no LLM reply; the first message follows it.
      this.#log.info({ verdict: this.consent.answer(text) }, 'recording consent answered');
      return false;
    }
    if (this.config.call.type === 'inbound') return this.#inboundTurn(text);
    if (this.config.call.type !== 'outbound' || this.#openingOver) return true;
    if (this.ivr?.navigating) {
      // No reply to a phone menu: the navigator decides once the prompt is over.
      this.ivr.hear(text);
      return false;
    }
    const words = text.trim().split(/\s+/).filter(Boolean).length;
    if (!this.#greetingDone) {
      // The callee's first words.
      const verdict = this.voicemail ? this.voicemail.onTranscript(text) : words > 0 ? 'human' : null;
      this.#log.info({ words, verdict, reason: this.voicemail?.reason }, 'outbound opening: the callee spoke');
      if (verdict === 'machine') {
        void this.#leaveVoicemail(true, this.voicemail?.reason ?? 'transcript');
        return false;
      }
      if (verdict === null) {
        // No verdict yet: more of the callee's words, a beep, or their silence (the greeting timer) decides.
        if (!this.#greetingTimer && this.session.userState !== 'speaking') this.#armGreetingTimer();
        return false;
      }
      if (this.voicemail) {
        // A short first utterance is a person's "Hello?" only if silence follows it: the turn commits on a short
        // pause, and a machine's greeting pauses between its sentences too.
        this.#confirmHuman(text);
        return false;
      }
      this.#clearGreetingTimer();
      this.#greetingDone = true;
      // A recording consent sentence goes where the first message would, even without one.
      if (this.render(this.config.agent.first_message) || this.consent.mode !== 'none') {
        this.#sayFirstMessage();
        return false;
      }
      this.#openingOver = true;
      return true;
    }
    // The first message is out: a machine's greeting cue still counts until the callee answers it.
    if (this.voicemail && transcriptLooksLikeVoicemail(text)) {
      this.#log.info({ words }, 'outbound opening: a voicemail cue after the greeting');
      void this.#leaveVoicemail(true, 'transcript_cue');
      return false;
    }
    if (words > 0) this.#openingOver = true;
    return true;
  }

  /**
   * Inbound with voicemail detection, a caller's turn in the opening window. A greeting cue ("you've reached...")
   * holds the reply while the beep is awaited: cue and beep make a machine, which gets the voicemail message. A
   * cue alone does not: a person calling in says "I got your voicemail" or "I'm not available on Monday", and
   * the cost of taking them for a machine (the message, then a hang-up on a customer) is far above that of
   * talking to a machine that never beeped. Without a beep the turn is answered, a little late.
   */
  async #inboundTurn(text: string): Promise<boolean> {
    if (!this.voicemail || this.#openingOver) return true;
    if (transcriptLooksLikeVoicemail(text)) {
      this.#log.info('inbound opening: a voicemail cue; waiting for the beep');
      const beeped = await this.#waitForBeep(this.#opts.voicemailBeepWaitMs ?? 2500);
      if (this.endReason || this.#voicemailLeaving) return false;
      if (beeped) {
        void this.#leaveVoicemail(false, 'transcript_cue');
        return false;
      }
      this.#log.info('inbound opening: no beep after the cue; answered as a person');
    }
    return true;
  }

  /** Inbound: no more answering-machine checks (a cue's wait already begun still hears its beep). */
  #closeInboundOpening(why: string): void {
    if (!this.voicemail || this.#openingOver || this.#voicemailLeaving || this.endReason) return;
    this.#openingOver = true;
    this.#log.info({ why }, 'inbound opening over: no voicemail');
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
   * verdict. The silence is counted in the callee's audio by the VAD (#onVadEvent), so the same audio gets the
   * same verdict however late the STT's final or the VAD's events come.
   */
  #confirmHuman(text: string): void {
    if (this.session.userState === 'speaking') {
      this.#reopenVerdict();
      return;
    }
    this.#humanPending = text;
    this.#checkHuman();
  }

  #onVadEvent(ev: VADEvent): void {
    this.#calleeSilence.onEvent(ev);
    if (ev.type === VADEventType.INFERENCE_DONE) this.#checkHuman();
  }

  #checkHuman(): void {
    const text = this.#humanPending;
    if (text === null) return;
    if (this.#greetingDone || this.#voicemailLeaving || this.endReason) {
      this.#humanPending = null;
      return;
    }
    const quiet = this.#calleeSilence.quietMs;
    if (quiet === null || quiet < (this.#opts.outboundHumanSilenceMs ?? 800)) return;
    this.#humanPending = null;
    this.#log.info({ quiet_ms: quiet }, 'outbound opening: a person answered');
    this.#clearGreetingTimer();
    this.#greetingDone = true;
    // A recording consent sentence goes where the first message would, even without one.
    if (this.render(this.config.agent.first_message) || this.consent.mode !== 'none') {
      this.#sayFirstMessage();
      return;
    }
    // No first message: the agent answers the callee's words.
    this.#openingOver = true;
    this.session.generateReply({ userInput: text });
  }

  #reopenVerdict(): void {
    this.#humanPending = null;
    if (this.voicemail?.verdict === 'human') {
      this.voicemail.reopen();
      this.#log.info('outbound opening: the callee went on speaking; no verdict yet');
    }
  }

  async #leaveVoicemail(waitForBeep: boolean, reason: string): Promise<void> {
    if (this.#voicemailLeaving || this.endReason) return;
    this.#voicemailLeaving = true;
    this.#greetingDone = true;
    this.#clearGreetingTimer();
    this.#greeting?.cancel();
    this.#greeting = null;
    this.#humanPending = null;
    this.voicemail?.markMachine(reason);
    this.#log.info({ reason: this.voicemail?.reason, wait_for_beep: waitForBeep && !this.beep?.detected }, 'voicemail detected');
    if (waitForBeep && !this.beep?.detected) await this.#waitForBeep(this.#opts.voicemailBeepWaitMs ?? 2500);
    const message = this.render(this.config.agent.voicemail_message);
    if (message && !this.endReason) {
      try {
        // A first message said on the callee's silence stops here: the machine records the voicemail alone.
        void Promise.resolve(this.session.interrupt()).catch(() => {});
      } catch {
        // nothing to interrupt
      }
      const handle = this.session.say(message, { allowInterruptions: false });
      await handle.waitForPlayout();
      this.#log.info({ interrupted: handle.interrupted }, 'voicemail message played');
    }
    await this.end('voicemail');
  }

  #currentMetrics(): TurnMetrics | undefined {
    return this.squad ? this.agentMetrics.get(this.squad.currentAgentId) : undefined;
  }

  /**
   * The session agent of another squad member: its prompt, tools (its own and its hand-offs), knowledge and
   * models, with the session's hooks (turn handling, voicemail, backchannels) as the entry agent has them.
   */
  #memberAgent(member: SquadMemberConfig, arrival: Arrival, actions: CallActions): VapAgent {
    const entry = member.agent.id === this.config.agent.id;
    const models = entry ? {} : (this.#opts.memberModels?.(member) ?? {});
    if (models.llm) this.#agentLlm.set(member.agent.id, models.llm);
    const memberConfig: CallConfig = { ...this.config, tools: member.tools };
    return new VapAgent({
      ...this.#agentBase,
      id: member.agent.id,
      instructions: member.prompt,
      tools: [...buildTools(memberConfig, actions), ...arrival.handoffTools],
      knowledge: member.knowledge,
      knowledgeAgentId: member.agent.id,
      models,
      chatCtx: arrival.chatCtx,
      summary: arrival.summary,
      enter: (a) => this.#arrive(member, a),
    });
  }

  /**
   * The next agent takes the call: its first message is said at once (the caller hears the new voice as soon as
   * its TTS starts); a handed summary joins its context when ready. Without a first message it replies to the
   * conversation so far (after the summary, with `summary`).
   */
  async #arrive(member: SquadMemberConfig, agent: VapAgent): Promise<void> {
    if (this.endReason) return;
    const vars = mergeVariables(member.agent.dynamic_variables, this.config.call.variables);
    const greeting = member.agent.first_message ? interpolate(member.agent.first_message, vars).trim() : '';
    if (greeting) this.session.say(greeting);
    const pending = agent.handedSummary;
    if (pending) {
      const summary = await pending;
      const ctx = agent.chatCtx.copy();
      if (withSummary(ctx, summary)) await agent.updateChatCtx(ctx);
    }
    if (!greeting && !this.endReason) this.session.generateReply();
  }

  /**
   * The phone-menu navigator of an outbound call with an ivr_goal: silent until a person answers; then the
   * conversation starts as on a person's "Hello?" (the first message, else a reply to their words).
   */
  #navigator(ivr: NonNullable<CallConfig['call']['ivr']>): IvrNavigator {
    let step = 0;
    return new IvrNavigator({
      goal: ivr.goal,
      maxMenus: ivr.max_menus,
      logger: this.#log,
      redact: (text) => this.privacy.log(text),
      ask: (menu, pressed) => askModel(this.#opts.models.llm, ivr.goal, menu, pressed),
      press: async (keys) => {
        if (!this.#opts.actions?.sendDtmf) throw new Error('DTMF is not available on this call');
        await this.#opts.actions.sendDtmf(keys);
      },
      // The person's own words are added by the reply below (or here, when the first message answers them).
      onStep: (s) => s.kind !== 'person' && recordStep(this.session, s, ++step),
      onGiveUp: () => void this.end('ivr_failed'),
      onPerson: (text) => {
        if (this.endReason || this.#voicemailLeaving) return;
        this.#greetingDone = true;
        this.#openingOver = true;
        this.#clearGreetingTimer();
        const note = llm.ChatMessage.create({ role: 'system', content: handoverNote(ivr.goal, this.ivr?.pressed ?? []) });
        this.agent._chatCtx.items.push(note);
        if (this.render(this.config.agent.first_message) || this.consent.mode !== 'none') {
          const said = llm.ChatMessage.create({ role: 'user', content: text });
          this.agent._chatCtx.items.push(said);
          this.session._conversationItemAdded(said);
          this.#sayFirstMessage();
          return;
        }
        this.session.generateReply({ userInput: text });
      },
    });
  }

  /** end_call tool: hang up once the agent has finished speaking. */
  requestHangup(): void {
    if (this.#hangupRequested) return;
    this.#hangupRequested = true;
    // Safety net if the agent never returns to listening.
    this.#timers.push(setTimeout(() => void this.end('agent_hangup'), 15_000));
    if (this.session.agentState === 'listening' || this.session.agentState === 'idle') {
      setTimeout(() => {
        if (this.session.agentState === 'listening' || this.session.agentState === 'idle') void this.end('agent_hangup');
      }, 300);
    }
  }

  #collectMetrics(m: agentsMetrics.AgentMetrics): void {
    if (m.type === 'llm_metrics') this.preemptive.onLlmMetrics(m);
    this.turnMetrics.onMetrics(m);
    this.#currentMetrics()?.onMetrics(m);
  }

  #wire(): void {
    const s = this.session;
    s.on(voice.AgentSessionEventTypes.MetricsCollected, (ev) => this.#collectMetrics(ev.metrics));
    s.on(voice.AgentSessionEventTypes.SpeechCreated, (ev) => {
      this.preemptive.onSpeechCreated(ev.speechHandle);
      // Inbound opening: an LLM reply (not the first message, a `say`) heard to its end. A discarded preemptive
      // reply counts as interrupted.
      const handle = ev.speechHandle;
      if (this.config.call.type === 'inbound' && this.voicemail && !this.#openingOver && ev.source === 'generate_reply') {
        void handle.waitForPlayout().then(
          () => {
            if (!handle.interrupted) this.#replyPlayedOut = true;
          },
          () => {},
        );
      }
    });
    // Knowledge retrieval starts on the transcript of the turn in progress, off the reply's latency path.
    s.on(voice.AgentSessionEventTypes.UserInputTranscribed, (ev) => {
      this.agent.onTranscript(ev.transcript, ev.isFinal);
      // Words still on their way to a completed turn hold the phone-menu decision.
      if (this.ivr?.navigating) this.ivr.transcribed(ev.transcript);
    });
    s.on(voice.AgentSessionEventTypes.ConversationItemAdded, (ev) => {
      const item = ev.item;
      if (item.type !== 'message') return;
      if (item.role === 'assistant') {
        this.turnMetrics.onAgentMessage(item);
        this.#currentMetrics()?.onAgentMessage(item);
        if (!this.#voicemailLeaving && !item.interrupted && matchesEndPhrase(item.textContent ?? '', this.config.agent.end_call_phrases)) {
          void this.end('agent_hangup');
        }
      }
      this.#scheduleTranscript();
    });
    s.on(voice.AgentSessionEventTypes.UserStateChanged, (ev) => {
      if (ev.newState === 'speaking') this.#overAgent = s.agentState === 'speaking' || this.#replyHeld();
      if (ev.newState === 'away' && !this.#voicemailLeaving) void this.end('silence_timeout');
      // Inbound: speaking after a reply the agent said in full is answering it, as a person does; a machine's
      // greeting runs on over the agent (and cuts its replies off).
      if (ev.newState === 'speaking' && this.#replyPlayedOut) this.#closeInboundOpening('the caller answered the agent');
      if (this.ivr?.navigating && (ev.newState === 'speaking' || ev.newState === 'listening')) this.ivr.calleeSpeaking(ev.newState === 'speaking');
      // Outbound, before the greeting: the callee's speech holds the greeting timer; its end re-arms it.
      if (this.config.call.type === 'outbound' && !this.#greetingDone && this.startedAt && !this.ivr?.navigating) {
        if (ev.newState === 'speaking') {
          this.#clearGreetingTimer();
          if (this.#humanPending !== null) this.#reopenVerdict();
        } else if (ev.newState === 'listening') this.#armGreetingTimer();
      }
    });
    s.on(voice.AgentSessionEventTypes.AgentStateChanged, (ev) => {
      if (ev.newState === 'speaking' && s.userState === 'speaking') this.#overAgent = true;
      // agents-js exposes the current reply only on the activity; a reply that stops playing uninterrupted is paused.
      if (ev.oldState === 'speaking' && ev.newState === 'listening') {
        const speech = s._activity?.currentSpeech;
        this.#heldReply = speech && !speech.interrupted && !speech.done() ? speech : undefined;
        // Where a barge-in's time goes (bench:turns): when the reply paused, by the onset or by agents-js (the VAD, or words).
        if (this.#heldReply && !this.#onsetHold) this.#log.debug({ by: 'agents-js' }, 'agent paused');
      }
      if (this.#hangupRequested && ev.newState === 'listening') void this.end('agent_hangup');
    });
    s.on(voice.AgentSessionEventTypes.AgentFalseInterruption, (ev) => {
      this.falseInterruptions++;
      this.#opts.metrics.falseInterruption?.(this.config.call.type, ev.resumed);
    });
    s.on(voice.AgentSessionEventTypes.Error, (ev) => {
      const err = ev.error as { recoverable?: boolean; error?: Error } | undefined;
      if (err && err.recoverable === false) this.#error = err.error?.message ?? 'unrecoverable provider error';
    });
    s.on(voice.AgentSessionEventTypes.Close, (ev) => {
      if (this.endReason) return;
      const reason: EndReason =
        ev.reason === voice.CloseReason.ERROR || ev.error ? 'error' : ev.reason === voice.CloseReason.JOB_SHUTDOWN ? 'worker_shutdown' : 'user_hangup';
      if (ev.error) this.#error = (ev.error as { error?: Error }).error?.message ?? String(ev.error);
      void this.end(reason);
    });
  }

  #scheduleTranscript(): void {
    if (!this.#opts.reporter || this.#transcriptTimer || this.endReason) return;
    const interval = this.#opts.transcriptIntervalMs ?? 1000;
    const wait = Math.max(0, this.#lastTranscriptAt + interval - Date.now());
    this.#transcriptTimer = setTimeout(() => {
      this.#transcriptTimer = null;
      if (this.endReason) return;
      this.#lastTranscriptAt = Date.now();
      const partial = this.privacy.partial(this.messages().map(({ role, content }) => ({ role, content })).filter((m) => m.content));
      if (partial) this.#opts.reporter?.transcript(partial);
    }, wait);
  }

  /** The conversation as the spec's messages (tool calls as agent messages carrying `tool_call`). */
  messages(): EndedMessage[] {
    const out: EndedMessage[] = [];
    const iso = (sec?: number) => (typeof sec === 'number' && Number.isFinite(sec) ? new Date(sec * 1000).toISOString() : undefined);
    const calls = new Map<string, { name: string; args: string }>();
    // A squad's call: who speaks, from the session's hand-off items (the agents carry their vap ids).
    let speaking = this.config.agent.id;
    const by = this.squad ? () => ({ agent_id: speaking }) : () => ({});
    for (const item of this.session.history.items) {
      if (item.type === 'agent_handoff') {
        if (this.squad?.members.has(item.newAgentId)) speaking = item.newAgentId;
      } else if (item.type === 'message') {
        if (item.role !== 'user' && item.role !== 'assistant') continue;
        const content = item.textContent ?? '';
        if (!content.trim()) continue;
        const m: EndedMessage = { role: item.role === 'user' ? 'user' : 'agent', content };
        const started = iso(item.metrics?.startedSpeakingAt) ?? new Date(item.createdAt).toISOString();
        m.started_at = started;
        const stopped = iso(item.metrics?.stoppedSpeakingAt);
        if (stopped) m.ended_at = stopped;
        if (item.role === 'assistant' && item.interrupted) m.interrupted = true;
        if (item.role === 'assistant') Object.assign(m, by());
        const metrics = item.role === 'assistant' ? this.turnMetrics.messageMetrics(item.id) : undefined;
        if (metrics) m.metrics = metrics;
        out.push(m);
      } else if (item.type === 'function_call') {
        calls.set(item.callId, { name: item.name, args: item.args });
      } else if (item.type === 'function_call_output') {
        const call = calls.get(item.callId);
        out.push({
          role: 'agent',
          content: '',
          started_at: new Date(item.createdAt).toISOString(),
          ...by(),
          tool_call: { name: call?.name ?? item.name, arguments: call?.args ?? '{}', output: item.output, is_error: item.isError },
        });
      }
    }
    return out;
  }

  /** Ends the call once; the first reason wins. Resolves with the report sent to the control plane. */
  async end(reason: EndReason, error?: string): Promise<EndedReport> {
    if (this.endReason) return this.ended;
    this.endReason = reason;
    if (error) this.#error = error;
    for (const t of this.#timers) clearTimeout(t);
    if (this.#onsetHold) clearTimeout(this.#onsetHold.timer);
    this.#onsetHold = null;
    this.#clearGreetingTimer();
    this.#greeting?.cancel();
    this.#greeting = null;
    // A call ended before its session started (the caller hung up while it connected) leaves no listener behind.
    this.#stopEarlyTtsMetrics?.();
    this.#humanPending = null;
    this.ivr?.stop();
    if (this.#transcriptTimer) clearTimeout(this.#transcriptTimer);
    this.consent.close();
    this.#log.info({ end_reason: reason }, 'call ending');
    // The session's close drains speech, STT and audio I/O; a stuck part must not keep the line open (the
    // hang-up below is what the callee hears), so the wait for it is bounded.
    const closeWait = this.#opts.sessionCloseWaitMs ?? 5000;
    let waitTimer: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      this.session.close().then(
        () => true,
        (err: unknown) => {
          this.#log.warn({ err: (err as Error).message }, 'session close failed');
          return true;
        },
      ),
      new Promise<false>((r) => (waitTimer = setTimeout(() => r(false), closeWait))),
    ]);
    clearTimeout(waitTimer);
    if (!closed) this.#log.warn({ waited_ms: closeWait }, 'session close is slow: reporting and hanging up without waiting for it');
    this.preemptive.settle();
    const endedAt = Date.now();
    const report: EndedReport = {
      end_reason: reason,
      ended_at: new Date(endedAt).toISOString(),
      duration_seconds: this.startedAt ? Math.round((endedAt - this.startedAt) / 100) / 10 : 0,
      messages: this.privacy.ended(this.messages()),
      usage: this.turnMetrics.usageReport(),
      latency: this.turnMetrics.summary(),
      recording_consent: this.consent.result,
      ...(this.squad ? { agent_latency: Object.fromEntries([...this.agentMetrics].map(([id, m]) => [id, m.summary()])) } : {}),
      ...(reason === 'error' && this.#error ? { error: this.#error.slice(0, 500) } : {}),
    } as EndedReport;
    const seq = this.#opts.reporter?.ended(report) ?? 0;
    this.#opts.metrics.callEnded(reason, this.config.call.type);
    try {
      await this.#opts.actions?.hangUp?.();
    } catch (err) {
      this.#log.warn({ err: (err as Error).message }, 'hang-up failed');
    }
    const full = { ...report, seq };
    this.#resolveEnded(full);
    return full;
  }
}
