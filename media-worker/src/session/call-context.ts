// The shapes a call's parts share: the options a CallSession is made with, and the call as each of its parts
// (greeting.ts, opening.ts, turn-handling.ts, handoffs.ts, reporting.ts) sees it. The parts import these types,
// never call-session.ts, so the session can import every part without a cycle.
import type { llm, stt as agentsStt, tts as agentsTts, voice, VAD } from '@livekit/agents';
import type { CallConfig, EndReason, EndedReport, SquadMemberConfig } from '../../../schemas/internal.ts';
import type { CallReporter, InternalApiClient } from '../../../shared/internal-api.ts';
import type { Logger } from '../../../shared/logger.ts';
import type { VapAgent } from './agent.ts';
import type { MetricsSink } from './metrics-sink.ts';
import type { CallPrivacy } from './privacy.ts';
import type { RecordingConsent } from './recording-consent.ts';
import type { CallActions } from './tools.ts';
import type { ProviderLabels } from './turn-metrics.ts';

/** A model as a text LLM: itself, or null for a realtime model (it takes no chat completions). */
export function textLlm(model: llm.LLM | llm.RealtimeModel): llm.LLM | null {
  return 'chat' in model ? model : null;
}

/**
 * The call's text LLM for side tasks (a hand-off's summary, a phone menu, a warm transfer's brief): the pipeline's
 * own, or a realtime model's side-task model (providers/side-llm.ts); null when there is none.
 */
export function sideTaskLlm(models: Pick<CallModels, 'llm' | 'sideLlm'>): llm.LLM | null {
  return textLlm(models.llm) ?? models.sideLlm ?? null;
}

export interface CallModels {
  /** None with a realtime model, which hears the caller itself. */
  stt: agentsStt.STT | null;
  /** The pipeline's text LLM, or a realtime (speech-to-speech) model: the session's whole voice loop (realtime-call.ts). */
  llm: llm.LLM | llm.RealtimeModel;
  /** None with a realtime model, which speaks itself. */
  tts: agentsTts.TTS | null;
  vad: VAD;
  /** The local end-of-turn model; 'vad' ends turns on VAD silence alone. */
  turnDetection: NonNullable<voice.AgentSessionOptions['turnDetection']>;
  /** With a realtime model: the text model of its side tasks (sideTaskLlm). */
  sideLlm?: llm.LLM | null | undefined;
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
  memberModels?: (member: SquadMemberConfig) => { llm?: llm.LLM | llm.RealtimeModel; tts?: agentsTts.TTS; stt?: agentsStt.STT };
  /** Sample rate of the caller's audio taken from the room (the STT's own; agents-js defaults to 24 kHz). */
  inputSampleRate?: number;
  /** Rate of the agent's published audio. Phone legs use 8000: the caller's G.711 line carries nothing above
   * 4 kHz, so nothing above it is sent (docs/decisions/016-phone-numbers-and-inbound-calls.md, "Phone legs publish 8 kHz audio"). */
  outputSampleRate?: number;
}

/** The call as its parts see it (CallSession is one): what they read of it, and how they end it. */
export interface CallContext {
  readonly config: CallConfig;
  /** Made after the parts: read it when the call runs, not in a part's constructor. */
  readonly session: voice.AgentSession;
  /** The agent speaking now (a squad's call switches it at each hand-off). */
  readonly agent: VapAgent;
  readonly consent: RecordingConsent;
  readonly privacy: CallPrivacy;
  /** Set once, by the first end(). */
  readonly endReason: EndReason | null;
  /** A template interpolated with the call's variables. */
  render(template: string | null): string;
  end(reason: EndReason): Promise<EndedReport>;
  /** Hang up once the agent has finished speaking (end_call). */
  requestHangup(): void;
}
