/**
 * One call: the AgentSession and every behaviour of the agent around it, as a short orchestration of named parts.
 * It needs no room: audio I/O can be a room (through `room`) or any AudioInput/AudioOutput.
 *
 * The parts, one concern a file (as agents-js's own `voice/` folder has them):
 * - call-context.ts: the options a call is made with (CallSessionOptions, CallModels), and the call as its parts
 *   see it (CallContext; CallSession is one). The parts import it, never this file.
 * - greeting.ts (start and greeting): the first message, synthesized ahead, said after the recording consent,
 *   and on an outbound call held by the greeting timer until the callee has spoken or stayed silent.
 * - turn-handling.ts (turns): the session's turn handling, the pause on the caller's onset, backchannels kept
 *   from agents-js, false interruptions.
 * - opening.ts (voicemail): who answered, a person or a machine, outbound and inbound; the phone-menu
 *   navigator; leaving the voicemail message.
 * - handoffs.ts (transfers and hand-offs): the tools' room actions (transfer, warm transfer, DTMF,
 *   do-not-call) and a squad's members taking the call.
 * - reporting.ts (reporting and end): transcript partials, the conversation as the spec's messages, the
 *   session's bounded close and the ended report.
 * This file builds them and the AgentSession, routes the session's events to them (#wire), starts the call and
 * ends it once. The worker's side of a call (its room, config, models, recorder) is in media-worker/src/call/.
 */
import { voice, type metrics as agentsMetrics } from '@livekit/agents';
import type { AudioFrame, Room } from '@livekit/rtc-node';
import type { CallConfig, EndReason, EndedMessage, EndedReport } from '../../../schemas/internal.ts';
import { matchesEndPhrase } from '../../../shared/phrases.ts';
import { interpolate, mergeVariables } from '../../../shared/template.ts';
import type { Logger } from '../../../shared/logger.ts';
import { VapAgent } from './agent.ts';
import type { CallContext, CallSessionOptions } from './call-context.ts';
import { Greeting } from './greeting.ts';
import { SquadCall, callActions, type AgentBase } from './handoffs.ts';
import type { IvrNavigator } from './ivr-navigator.ts';
import { Opening } from './opening.ts';
import { PreemptiveWaste } from './preemptive-waste.ts';
import { CallPrivacy } from './privacy.ts';
import { installPromptPause } from './prompt-pause.ts';
import { installRaceFix } from './race-fix.ts';
import { RecordingConsent } from './recording-consent.ts';
import { RealtimeTurnGate } from './realtime-turn-gate.ts';
import { releaseSpeech } from './release-speech.ts';
import { TranscriptPartials, closeWithin, conversationMessages, endedReport } from './reporting.ts';
import { installRoomSessionHostGuard } from './room-session-host.ts';
import type { Squad } from './squad.ts';
import { Supervision } from './supervision.ts';
import { buildTools } from './tools.ts';
import { TurnHandling } from './turn-handling.ts';
import { TurnMetrics } from './turn-metrics.ts';
import { TurnTrace } from './turn-trace.ts';
import { RealtimeTurns, realtimeTurnHandling } from './realtime-turns.ts';
import { tapVad } from './vad-tap.ts';
import type { BeepDetector, VoicemailClassifier } from './voicemail.ts';

export type { CallModels, CallSessionOptions } from './call-context.ts';
// The end-phrase rule is shared with agent tests (control plane), which judge a transcript the same way.
export { matchesEndPhrase };

export class CallSession implements CallContext {
  readonly session: voice.AgentSession;
  /** The agent speaking now (a squad's call switches it at each hand-off). */
  agent: VapAgent;
  /** A squad's call: each agent's own turns' latency, by agent id. */
  readonly agentMetrics: Map<string, TurnMetrics>;
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
  /** Preemptive generations discarded in this call, and their completion tokens. */
  readonly preemptive: PreemptiveWaste;
  /** A supervisor's say, whisper and mute (supervision.ts). */
  readonly supervision: Supervision;

  readonly #greeting: Greeting;
  readonly #turns: TurnHandling;
  readonly #opening: Opening;
  readonly #squad: SquadCall | null = null;
  readonly #transcripts: TranscriptPartials;
  /** A realtime model's turns, measured end of speech to first audio (realtime-turns.ts); null in the pipeline. */
  readonly #realtime: RealtimeTurns | null;
  #opts: CallSessionOptions;
  #log: Logger;
  #resolveEnded!: (r: EndedReport) => void;
  #timers: NodeJS.Timeout[] = [];
  /** A realtime model's held turns (realtime-turn-gate.ts); null in the pipeline. */
  #gate: RealtimeTurnGate | null = null;
  #hangupRequested = false;
  #error: string | undefined;
  /** The session's start while it runs: an end that comes meanwhile closes the session once it has settled. */
  #starting: Promise<void> | null = null;

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

    this.#turns = new TurnHandling(this, opts);
    this.#greeting = new Greeting(this, opts, (m) => this.#collectMetrics(m));
    this.#opening = new Opening(this, this.#greeting, opts);
    this.#transcripts = new TranscriptPartials(this, opts, () => this.messages());

    const actions = callActions(this, opts);
    const base: AgentBase = {
      callId: call.id,
      api: opts.api,
      logger: opts.logger,
      beforeReply: (text) => this.#beforeReply(text),
      metrics: opts.metrics,
      callType: call.type,
      // Beep and onset detection read the caller's audio where the STT does, whatever the audio input is.
      onInputAudio: this.#opening.beep || this.#turns.listensToAudio ? this.onInputFrame : undefined,
      ...this.#turns.agentHooks(),
    };
    if (opts.config.squad) this.#squad = new SquadCall(this, opts, actions, { base: () => base, onSwitch: (a) => (this.agent = a) });
    this.agentMetrics = this.#squad?.agentMetrics ?? new Map<string, TurnMetrics>();
    this.agent = new VapAgent({
      ...base,
      instructions: opts.config.prompt,
      tools: [...buildTools(opts.config, actions), ...(this.#squad?.squad.toolsFor(agent.id) ?? [])],
      knowledge: opts.config.knowledge,
      realtime: !!opts.config.llm.realtime,
      // A squad's agents carry their ids: the session's hand-off items say who speaks each message.
      ...(this.#squad ? { id: agent.id } : {}),
    });

    this.#realtime = opts.config.llm.realtime ? new RealtimeTurns() : null;
    const rt = this.#realtime;
    const vadEvents = (ev: Parameters<RealtimeTurns['onVadEvent']>[0]) => {
      if (this.#opening.tapsVad) this.#opening.onVadEvent(ev);
      rt?.onVadEvent(ev);
    };
    this.session = new voice.AgentSession({
      // A realtime model hears and speaks itself: no STT or TTS (realtime-call.ts).
      ...(opts.models.stt ? { stt: opts.models.stt } : {}),
      llm: opts.models.llm,
      ...(opts.models.tts ? { tts: opts.models.tts } : {}),
      // The callee's silence after a short first utterance decides a person from a machine: it is read off the
      // VAD's events, in the callee's audio. A timer would race the VAD, which runs behind the line under load.
      vad: this.#opening.tapsVad || rt ? tapVad(opts.models.vad, vadEvents) : opts.models.vad,
      userAwayTimeout: agent.silence_timeout_seconds,
      // A SIP line has no echo to cancel, and a web client cancels its own.
      aecWarmupDuration: null,
      turnHandling: opts.config.llm.realtime ? realtimeTurnHandling(this.#turns.options, opts.config.llm.realtime) : this.#turns.options,
    });
    this.turnTrace = new TurnTrace(this.session, opts.logger, this.preemptive);
    this.supervision = new Supervision(this, opts.logger);
    this.#wire();
  }

  /** A call started on a squad: its members, hand-offs and their count. */
  get squad(): Squad | null {
    return this.#squad?.squad ?? null;
  }
  get voicemail(): VoicemailClassifier | null {
    return this.#opening.voicemail;
  }
  get beep(): BeepDetector | null {
    return this.#opening.beep;
  }
  /** Outbound with an ivr_goal: the phone-menu navigation that runs before the conversation (ivr-navigator.ts). */
  get ivr(): IvrNavigator | null {
    return this.#opening.ivr;
  }
  /** Backchannel transcripts kept from agents-js (`ignore_backchannels`), interim and final, and finals alone. */
  get backchannelsIgnored(): number {
    return this.#turns.backchannelsIgnored;
  }
  get backchannelFinalsIgnored(): number {
    return this.#turns.backchannelFinalsIgnored;
  }
  /** Pauses on the caller's sound that no word confirmed (agents-js's false interruptions; most resume). */
  get falseInterruptions(): number {
    return this.#turns.falseInterruptions;
  }
  /** Onset pauses, and those the VAD did not take over (a noise: the reply resumed). */
  get onsetPauses(): number {
    return this.#turns.onsetPauses;
  }
  get onsetResumes(): number {
    return this.#turns.onsetResumes;
  }

  /** Interpolated with the call's variables (per-call over the agent's dynamic_variables). */
  render(template: string | null): string {
    return template ? interpolate(template, this.variables).trim() : '';
  }

  /** Starts synthesizing the first message ahead of the session's start (greeting.ts); start() calls it again. */
  prepareGreeting(): void {
    this.#greeting.prepare();
  }

  async start(io: { room?: Room; audioInput?: voice.AudioInput; audioOutput?: voice.AudioOutput; roomName?: string } = {}): Promise<void> {
    // Ended while it was being built (its room closed, the caller left): no session starts for it. agents-js would
    // even rejoin the job's room, by then deleted, to start one.
    if (this.endReason) return;
    this.#starting = this.#start(io);
    await this.#starting;
  }

  async #start(io: { room?: Room; audioInput?: voice.AudioInput; audioOutput?: voice.AudioOutput; roomName?: string }): Promise<void> {
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
      this.#greeting.sessionStarted();
    }
    // Ended while the session started: end() closes it once this start has settled; nothing more starts.
    if (this.endReason) return;
    this.startedAt = Date.now();
    this.#opts.reporter?.started({ started_at: new Date(this.startedAt).toISOString(), ...(io.roomName ? { room_name: io.roomName } : {}) });
    this.#timers.push(setTimeout(() => void this.end('max_duration'), this.config.agent.max_duration_seconds * 1000));

    if (this.config.call.type !== 'outbound') {
      // Inbound with voicemail detection: the agent greets as usual, and the opening window listens for a machine.
      this.#opening.start();
      this.#greeting.say();
    } else {
      // Outbound: the callee speaks first ("Hello?", or a machine's greeting); if they don't, we greet anyway.
      // A phone menu's navigation greets nobody: the person it reaches starts the conversation.
      if (!this.#opening.ivr) this.#greeting.armTimer();
    }
  }

  /** Each frame of the caller's audio: the onset pause (turn-handling.ts), then the beep (opening.ts). */
  onInputFrame = (frame: AudioFrame): void => {
    this.#turns.onFrame(frame);
    this.#opening.onFrame(frame);
  };

  /** Decides whether a completed user turn gets an LLM reply. */
  async #beforeReply(text: string): Promise<boolean> {
    if (this.endReason || this.#opening.leaving) return false;
    // Muted by a supervisor: no reply; the caller's words stay in the model's context.
    if (this.supervision.holdTurn(text)) return false;
    if (this.consent.pending) {
      // The answer to the recording question: no LLM reply; the first message follows it.
      this.#log.info({ verdict: this.consent.answer(text) }, 'recording consent answered');
      return false;
    }
    return this.#opening.onTurn(text);
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
    this.#squad?.currentMetrics()?.onMetrics(m);
  }

  /** A realtime model's turns held while muted or taken over, the recording question waits, or an outbound opening is undecided. */
  #turnGate(): RealtimeTurnGate {
    const gate = new RealtimeTurnGate({
      closed: () => this.supervision.silent || this.consent.pending || (this.config.call.type === 'outbound' && !this.#opening.over),
      cancel: () => {
        try {
          void Promise.resolve(this.session.interrupt()).catch(() => {});
        } catch {
          // A speech that does not allow interruptions (the recording question) plays on.
        }
      },
      // Muted or taken over: no reply, and nothing to add (the caller's words are in the model's conversation already).
      decide: (text) => (this.supervision.silent ? Promise.resolve(false) : this.#beforeReply(text)),
      reply: () => void this.session.generateReply(),
      log: this.#log,
    });
    this.#gate = gate;
    return gate;
  }

  /** The session's events, each to the parts it concerns. */
  #wire(): void {
    const s = this.session;
    s.on(voice.AgentSessionEventTypes.MetricsCollected, (ev) => this.#collectMetrics(ev.metrics));
    // A realtime model answers its turns itself: those the call must decide first are held here (realtime-turn-gate.ts).
    const gate = this.#realtime ? this.#turnGate() : null;
    if (gate) s.on(voice.AgentSessionEventTypes.MetricsCollected, (ev) => ev.metrics.type === 'realtime_model_metrics' && gate.onResponseDone());
    s.on(voice.AgentSessionEventTypes.SpeechCreated, (ev) => {
      this.preemptive.onSpeechCreated(ev.speechHandle);
      this.#opening.onSpeechCreated(ev);
      gate?.onSpeechCreated(ev);
    });
    // Knowledge retrieval starts on the transcript of the turn in progress, off the reply's latency path.
    s.on(voice.AgentSessionEventTypes.UserInputTranscribed, (ev) => {
      this.agent.onTranscript(ev.transcript, ev.isFinal);
      gate?.onTranscript(ev.transcript, ev.isFinal);
      // Words still on their way to a completed turn hold the phone-menu decision.
      if (this.ivr?.navigating) this.ivr.transcribed(ev.transcript);
    });
    s.on(voice.AgentSessionEventTypes.ConversationItemAdded, (ev) => {
      const item = ev.item;
      if (item.type !== 'message') return;
      // The words of a person who took the call over are no agent reply: no turn metrics, no end phrase.
      if (item.role === 'assistant' && this.supervision.marks.get(item.id)?.action !== 'takeover') {
        this.#realtime?.onAgentMessage(item);
        this.turnMetrics.onAgentMessage(item);
        this.#squad?.currentMetrics()?.onAgentMessage(item);
        if (!this.#opening.leaving && !item.interrupted && matchesEndPhrase(item.textContent ?? '', this.config.agent.end_call_phrases)) {
          void this.end('agent_hangup');
        }
      }
      this.#transcripts.schedule();
    });
    s.on(voice.AgentSessionEventTypes.UserStateChanged, (ev) => {
      this.#turns.onUserState(ev.newState);
      if (ev.newState === 'away' && !this.#opening.leaving) void this.end('silence_timeout');
      this.#opening.onUserState(ev.newState, !!this.startedAt);
    });
    s.on(voice.AgentSessionEventTypes.AgentStateChanged, (ev) => {
      this.#turns.onAgentState(ev);
      if (this.#hangupRequested && ev.newState === 'listening') void this.end('agent_hangup');
    });
    s.on(voice.AgentSessionEventTypes.AgentFalseInterruption, (ev) => this.#turns.onFalseInterruption(ev));
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

  /** The conversation as the spec's messages (tool calls as agent messages carrying `tool_call`). */
  messages(): EndedMessage[] {
    return conversationMessages(this.session.history.items, {
      entryAgentId: this.config.agent.id,
      squadMembers: this.squad?.members ?? null,
      turnMetrics: this.turnMetrics,
      supervisorMarks: this.supervision.marks,
    });
  }

  /**
   * Ends the call once; the first reason wins. Resolves with the report sent to the control plane. `at` is when
   * the call ended, where that was before this call (the caller's leave, the room's close): the call's length is
   * up to then, not up to whenever its session has finished closing.
   */
  async end(reason: EndReason, error?: string, at = Date.now()): Promise<EndedReport> {
    if (this.endReason) return this.ended;
    this.endReason = reason;
    if (error) this.#error = error;
    for (const t of this.#timers) clearTimeout(t);
    this.#gate?.close();
    this.#turns.stop();
    this.#greeting.stop();
    this.#opening.stop();
    this.#transcripts.stop();
    this.consent.close();
    this.#log.info({ end_reason: reason }, 'call ending');
    // A start in progress settles first: a session closed while it starts would start after its close.
    await this.#starting?.catch(() => {});
    // Nothing more plays: a speech held for a subscriber who will not come would hold the close (release-speech.ts).
    releaseSpeech(this.session);
    await closeWithin(this.session, this.#opts.sessionCloseWaitMs ?? 5000, this.#log);
    this.preemptive.settle();
    const report = endedReport(this, {
      reason,
      startedAt: this.startedAt,
      endedAt: Math.max(at, this.startedAt),
      messages: this.messages(),
      turnMetrics: this.turnMetrics,
      agentMetrics: this.#squad ? this.agentMetrics : null,
      error: this.#error,
    });
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
