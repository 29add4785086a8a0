// What the SDK reads from the room, kept free of DOM and livekit-client so that it is unit-tested in Node:
// the LiveKit Agents conventions (agent state attribute, transcription text streams) and the platform's
// per-turn metrics topic (docs/decisions/028-web-sdk-and-widget.md).

export type CallState = 'connecting' | 'listening' | 'thinking' | 'speaking' | 'ended';

/** Participant attribute that agents-js keeps at the agent's state. */
export const AGENT_STATE_ATTRIBUTE = 'lk.agent.state';
/** Text-stream topic of both sides' transcriptions (agents-js room output). */
export const TRANSCRIPTION_TOPIC = 'lk.transcription';
export const TRANSCRIPTION_FINAL_ATTRIBUTE = 'lk.transcription_final';
export const TRANSCRIPTION_SEGMENT_ATTRIBUTE = 'lk.segment_id';
/** Data topic on which the worker publishes one JSON message per completed turn. */
export const METRICS_TOPIC = 'vap.metrics';

/** agents-js states: initializing, idle, listening, thinking, speaking. */
export function callStateFor(agentState: string | undefined): CallState {
  switch (agentState) {
    case 'listening':
    case 'idle':
      return 'listening';
    case 'thinking':
      return 'thinking';
    case 'speaking':
      return 'speaking';
    default:
      return 'connecting';
  }
}

export interface TurnMetricsEvent {
  turn: number;
  eou_delay_ms: number | null;
  llm_ttft_ms: number | null;
  tts_ttfb_ms: number | null;
  e2e_latency_ms: number | null;
}

const msOrNull = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);

/** Parses a `vap.metrics` payload; anything else (another message type, bad JSON) is null. */
export function parseMetrics(payload: Uint8Array): TurnMetricsEvent | null {
  let m: unknown;
  try {
    m = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    return null;
  }
  if (m === null || typeof m !== 'object') return null;
  const o = m as Record<string, unknown>;
  if (o.type !== 'turn_metrics' || typeof o.turn !== 'number') return null;
  return {
    turn: o.turn,
    eou_delay_ms: msOrNull(o.eou_delay_ms),
    llm_ttft_ms: msOrNull(o.llm_ttft_ms),
    tts_ttfb_ms: msOrNull(o.tts_ttfb_ms),
    e2e_latency_ms: msOrNull(o.e2e_latency_ms),
  };
}

/**
 * Whether a transcription stream, once closed, holds a final segment. The agent's side is a delta stream
 * (one stream per segment, closed when the segment ends), the caller's side sends one stream per update with
 * `lk.transcription_final` on the last.
 */
export function isFinalSegment(role: 'user' | 'agent', attributes: Record<string, string> | undefined): boolean {
  return role === 'agent' || attributes?.[TRANSCRIPTION_FINAL_ATTRIBUTE] === 'true';
}

/** Why a call could not start, as the control plane writes it into the room's metadata (configuration_error). */
export interface CallFailure {
  /** The platform's cause code: `provider_key_missing`, `model_host_refused`, `local_model_missing`... */
  reason: string;
  /** The cause and the fix, in words. */
  message: string;
}

/** The failure in a room's metadata (`{"call_id", "error": {code: "configuration_error", reason, message}}`), else null. */
export function parseCallFailure(metadata: string | undefined | null): CallFailure | null {
  if (!metadata) return null;
  let m: unknown;
  try {
    m = JSON.parse(metadata);
  } catch {
    return null;
  }
  const e = m !== null && typeof m === 'object' ? (m as { error?: unknown }).error : null;
  if (e === null || typeof e !== 'object') return null;
  const { code, reason, message } = e as Record<string, unknown>;
  if (code !== 'configuration_error' || typeof message !== 'string' || !message) return null;
  return { reason: typeof reason === 'string' ? reason : 'invalid_configuration', message };
}
