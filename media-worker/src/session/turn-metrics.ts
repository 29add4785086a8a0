// Per-turn latency samples and usage of one call, from agents-js metrics events and ChatMessage.metrics.
// TTS metrics can arrive twice for one reply (a non-streaming TTS behind the stream adapter reports both
// from the chunked stream and from the adapter), so they are de-duplicated by request id before they count
// as a latency sample or as usage.
import type { metrics as agentsMetrics, llm } from '@livekit/agents';
import type { CallUsage } from '../../../schemas/internal.ts';
import { summarizeCall, type LatencySamples } from '../../../shared/latency.ts';
import type { LatencyKind, LatencyLabels, MetricsSink } from '../metrics.ts';

type AgentMetrics = agentsMetrics.AgentMetrics;

export interface ProviderLabels {
  stt: { provider: string; model: string };
  llm: { provider: string; model: string };
  tts: { provider: string; model: string };
}

export class TurnMetrics {
  readonly samples: LatencySamples = { llm_ttft: [], tts_ttfb: [], eou_delay: [], e2e: [] };
  readonly usage: CallUsage = { stt_seconds: 0, llm_prompt_tokens: 0, llm_completion_tokens: 0, tts_characters: 0 };
  #tts: agentsMetrics.TTSMetrics[] = [];
  #seenTtsSpeech = new Set<string>();
  #seenLlm = new Set<string>();
  #seenE2e = new Set<string>();
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
    const l = component === 'eou' ? { provider: 'livekit', model: 'turn-detector' } : this.#labels[component];
    const labels: LatencyLabels = { provider: l.provider, model: l.model, call_type: this.#callType };
    this.#sink.observeLatency(kind, labels, ms / 1000);
  }

  onMetrics(m: AgentMetrics): void {
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
      case 'eou_metrics':
        if (m.endOfUtteranceDelayMs > 0) this.#observe('eou_delay', 'eou', m.endOfUtteranceDelayMs);
        break;
      default:
        break;
    }
  }

  /** Voice-to-voice latency of an agent reply, from its ChatMessage.metrics (seconds). */
  onAgentMessage(msg: llm.ChatMessage): void {
    const e2e = msg.metrics?.e2eLatency;
    if (typeof e2e !== 'number' || this.#seenE2e.has(msg.id)) return;
    this.#seenE2e.add(msg.id);
    this.#observe('e2e', 'llm', e2e * 1000);
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
