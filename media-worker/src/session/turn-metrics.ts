// Per-turn latency samples and usage of one call, from agents-js metrics events and ChatMessage.metrics.
// TTS metrics can arrive twice for one reply (a non-streaming TTS behind the stream adapter reports both
// from the chunked stream and from the adapter), so they are de-duplicated by request id before they count
// as a latency sample or as usage.
import type { metrics as agentsMetrics, llm } from '@livekit/agents';
import type { CallUsage, EndedMessage } from '../../../schemas/internal.ts';
import { summarizeCall, type LatencySamples } from '../../../shared/latency.ts';
import type { LatencyKind, LatencyLabels, MetricsSink } from './metrics-sink.ts';

type AgentMetrics = agentsMetrics.AgentMetrics;

export interface ProviderLabels {
  stt: { provider: string; model: string };
  llm: { provider: string; model: string };
  tts: { provider: string; model: string };
}

/**
 * One agent reply's figures, published to the room on `vap.metrics` (room-metrics.ts). Null: not measured in
 * this turn (the first message has no user turn, so no EOU delay, LLM TTFT or end-to-end latency).
 */
export interface TurnReport {
  turn: number;
  eou_delay_ms: number | null;
  llm_ttft_ms: number | null;
  tts_ttfb_ms: number | null;
  e2e_latency_ms: number | null;
}

/** An agent message's turn in the call record (schemas/internal.ts `EndedMessage.metrics`). */
export type MessageMetrics = NonNullable<EndedMessage['metrics']>;

export class TurnMetrics {
  readonly samples: LatencySamples = { llm_ttft: [], tts_ttfb: [], eou_delay: [], e2e: [] };
  readonly usage: CallUsage = { stt_seconds: 0, llm_prompt_tokens: 0, llm_completion_tokens: 0, tts_characters: 0 };
  #tts: agentsMetrics.TTSMetrics[] = [];
  #seenTtsSpeech = new Set<string>();
  #seenLlm = new Set<string>();
  #seenE2e = new Set<string>();
  #seenReplies = new Set<string>();
  /** Each metrics object counts once, whichever listener brought it (greeting.ts listens early to the TTS). */
  #seenMetrics = new WeakSet<AgentMetrics>();
  /** Samples of the turn in progress: the user's end of turn, then the reply's first LLM token and audio. */
  #turn: { eou: number | null; llm: number | null; tts: number | null } = { eou: null, llm: null, tts: null };
  #turns = 0;
  /** Each reply's turn, by ChatMessage id: the call record's messages carry it (`metrics`). */
  #byMessage = new Map<string, TurnReport>();
  #turnListeners: ((t: TurnReport) => void)[] = [];
  #sink: MetricsSink;
  #labels: ProviderLabels;
  #callType: string;
  /** TTS metrics dropped as duplicates (exposed for tests). */
  duplicatesDropped = 0;

  constructor(sink: MetricsSink, labels: ProviderLabels, callType: string) {
    this.#sink = sink;
    this.#labels = labels;
    this.#callType = callType;
  }

  #observe(kind: LatencyKind, component: keyof ProviderLabels | 'eou', ms: number) {
    if (!Number.isFinite(ms) || ms < 0) return;
    this.samples[kind].push(ms);
    if (kind === 'eou_delay') this.#turn.eou = ms;
    else if (kind === 'llm_ttft') this.#turn.llm ??= ms;
    else if (kind === 'tts_ttfb') this.#turn.tts ??= ms;
    const l = component === 'eou' ? { provider: 'livekit', model: 'turn-detector' } : this.#labels[component];
    const labels: LatencyLabels = { provider: l.provider, model: l.model, call_type: this.#callType };
    this.#sink.observeLatency(kind, labels, ms / 1000);
  }

  onMetrics(m: AgentMetrics): void {
    if (this.#seenMetrics.has(m)) return;
    this.#seenMetrics.add(m);
    switch (m.type) {
      case 'stt_metrics':
        this.usage.stt_seconds += Math.max(0, m.audioDurationMs) / 1000;
        break;
      case 'llm_metrics': {
        if (this.#seenLlm.has(m.requestId)) return;
        this.#seenLlm.add(m.requestId);
        this.usage.llm_prompt_tokens += m.promptTokens;
        this.usage.llm_completion_tokens += m.completionTokens;
        if (!m.cancelled && m.ttftMs >= 0) this.#observe('llm_ttft', 'llm', m.ttftMs);
        break;
      }
      case 'tts_metrics': {
        // Usage is settled at the end (see usageReport); the first TTFB of a reply is its latency sample.
        this.#tts.push(m);
        const key = m.speechId ?? m.requestId;
        if (this.#seenTtsSpeech.has(key)) {
          this.duplicatesDropped++;
          return;
        }
        this.#seenTtsSpeech.add(key);
        if (m.ttfbMs >= 0 && !m.cancelled) this.#observe('tts_ttfb', 'tts', m.ttfbMs);
        break;
      }
      case 'realtime_model_metrics': {
        // A realtime model's response: its tokens, and the provider's time from the response to its first audio.
        if (this.#seenLlm.has(m.requestId)) return;
        this.#seenLlm.add(m.requestId);
        this.usage.llm_prompt_tokens += m.inputTokens;
        this.usage.llm_completion_tokens += m.outputTokens;
        if (!m.cancelled && m.ttftMs >= 0) this.#observe('llm_ttft', 'llm', m.ttftMs);
        break;
      }
      case 'eou_metrics':
        if (m.endOfUtteranceDelayMs > 0) this.#observe('eou_delay', 'eou', m.endOfUtteranceDelayMs);
        break;
      default:
        break;
    }
  }

  /** Voice-to-voice latency of an agent reply, from its ChatMessage.metrics (seconds); the reply ends a turn. */
  onAgentMessage(msg: llm.ChatMessage): void {
    const e2e = msg.metrics?.e2eLatency;
    if (typeof e2e === 'number' && !this.#seenE2e.has(msg.id)) {
      this.#seenE2e.add(msg.id);
      this.#observe('e2e', 'llm', e2e * 1000);
    }
    if (this.#seenReplies.has(msg.id)) return;
    this.#seenReplies.add(msg.id);
    const round = (v: number | null) => (v === null ? null : Math.round(v));
    const report: TurnReport = {
      turn: ++this.#turns,
      eou_delay_ms: round(this.#turn.eou),
      llm_ttft_ms: round(this.#turn.llm),
      tts_ttfb_ms: round(this.#turn.tts),
      e2e_latency_ms: typeof e2e === 'number' && Number.isFinite(e2e) && e2e >= 0 ? Math.round(e2e * 1000) : null,
    };
    this.#turn = { eou: null, llm: null, tts: null };
    this.#byMessage.set(msg.id, report);
    for (const fn of this.#turnListeners) fn(report);
  }

  /** The figures of the turn an agent reply ended, as a call record message carries them; undefined when none was seen. */
  messageMetrics(messageId: string): MessageMetrics | undefined {
    const t = this.#byMessage.get(messageId);
    return t && { eou_delay_ms: t.eou_delay_ms, llm_ttft_ms: t.llm_ttft_ms, tts_ttfb_ms: t.tts_ttfb_ms, e2e_ms: t.e2e_latency_ms };
  }

  /** Calls `fn` with each completed turn (each agent reply added to the conversation). */
  onTurn(fn: (t: TurnReport) => void): void {
    this.#turnListeners.push(fn);
  }

  summary() {
    return summarizeCall(this.samples);
  }

  /**
   * TTS characters without double counting: a reply reported both by the stream adapter (streamed: true,
   * the whole reply) and by the chunked requests inside it (streamed: false, one per sentence) counts once,
   * from the streamed report; a request id reported twice counts once.
   */
  ttsCharacters(): number {
    const byReply = new Map<string, agentsMetrics.TTSMetrics[]>();
    const seenRequest = new Set<string>();
    for (const m of this.#tts) {
      if (seenRequest.has(m.requestId)) continue;
      seenRequest.add(m.requestId);
      const key = m.speechId ?? m.requestId;
      const list = byReply.get(key) ?? [];
      list.push(m);
      byReply.set(key, list);
    }
    let total = 0;
    for (const list of byReply.values()) {
      const streamed = list.filter((m) => m.streamed);
      total += (streamed.length ? streamed : list).reduce((a, m) => a + m.charactersCount, 0);
    }
    return total;
  }

  usageReport(): CallUsage {
    return { ...this.usage, tts_characters: this.ttsCharacters(), stt_seconds: Math.round(this.usage.stt_seconds * 100) / 100 };
  }
}
