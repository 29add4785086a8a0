// Prometheus metrics of a worker. Jobs run in child processes (agents-js forks one per job), so the job
// side records through a MetricsSink: in the main process it writes the registry directly; in a job
// process it posts each observation to the main process's metrics listener (loopback, fire and forget).
import http from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { CALL_ACTIONS, type CallAction, type KnowledgeLabels, type LatencyKind, type LatencyLabels, type MetricsSink } from './session/metrics-sink.ts';

const KNOWLEDGE_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.35, 0.5, 1, 1.5];

const BUCKETS = [0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10];

export class WorkerMetrics implements MetricsSink {
  readonly registry = new Registry();
  readonly histograms: Record<LatencyKind, Histogram<'provider' | 'model' | 'call_type'>>;
  readonly callsEnded: Counter<'end_reason' | 'call_type'>;
  readonly activeCalls: Gauge;
  readonly load: Gauge;
  readonly knowledge: Histogram<'call_type' | 'result' | 'prefetched'>;
  readonly actionFailures: Counter<'action' | 'call_type'>;
  readonly preemptiveDiscarded: Counter<'provider' | 'model' | 'call_type'>;
  readonly preemptiveWastedTokens: Counter<'provider' | 'model' | 'call_type'>;
  readonly falseInterruptions: Counter<'call_type' | 'resumed'>;
  readonly firstAudioSeconds: Histogram<'call_type'>;
  readonly startLoopBlocksTotal: Counter<'call_type'>;
  /** Called with the job id when a job process reports its call's first audio, or that it waits as a standby agent. */
  onFirstAudio?: (jobId: string) => void;
  /** Called with the job id when a standby agent stops waiting: it was given a call (or left). */
  onCallStarting?: (jobId: string) => void;
  /** Job ids of standby agents waiting for a call: not calls (voice_active_calls leaves them out). */
  readonly standbyJobs = new Set<string>();
  readonly standbyAgents: Gauge;

  constructor(opts: { activeCalls?: () => number; load?: () => number; defaultMetrics?: boolean } = {}) {
    const labelNames = ['provider', 'model', 'call_type'] as const;
    const h = (name: string, help: string) =>
      new Histogram({ name, help, labelNames, buckets: BUCKETS, registers: [this.registry] });
    this.histograms = {
      llm_ttft: h('voice_llm_ttft_seconds', 'LLM time to first token per turn'),
      tts_ttfb: h('voice_tts_ttfb_seconds', 'TTS time to first audio byte per utterance'),
      eou_delay: h('voice_eou_delay_seconds', 'End of user speech (VAD) to end-of-turn decision'),
      e2e: h('voice_e2e_latency_seconds', 'Voice to voice: end of user speech to first agent audio'),
    };
    this.callsEnded = new Counter({
      name: 'voice_calls_total',
      help: 'Calls ended, by end reason',
      labelNames: ['end_reason', 'call_type'],
      registers: [this.registry],
    });
    this.knowledge = new Histogram({
      name: 'voice_knowledge_retrieval_seconds',
      help: 'Time a user turn waited for its knowledge search (retrieval mode); prefetched=yes when it started on a transcript',
      labelNames: ['call_type', 'result', 'prefetched'],
      buckets: KNOWLEDGE_BUCKETS,
      registers: [this.registry],
    });
    this.actionFailures = new Counter({
      name: 'voice_call_action_failures_total',
      help: 'Room actions of calls that failed (hang_up: the room could not be deleted)',
      labelNames: ['action', 'call_type'],
      registers: [this.registry],
    });
    this.preemptiveDiscarded = new Counter({
      name: 'voice_preemptive_discarded_total',
      help: 'Preemptive LLM generations discarded because the caller went on or the transcript changed',
      labelNames,
      registers: [this.registry],
    });
    this.preemptiveWastedTokens = new Counter({
      name: 'voice_preemptive_wasted_tokens_total',
      help: 'LLM completion tokens of discarded preemptive generations',
      labelNames,
      registers: [this.registry],
    });
    this.falseInterruptions = new Counter({
      name: 'voice_false_interruptions_total',
      help: "Pauses of the agent's speech on the caller's sound that no word confirmed (a backchannel or a noise); resumed=yes when the reply went on",
      labelNames: ['call_type', 'resumed'],
      registers: [this.registry],
    });
    this.standbyAgents = new Gauge({
      name: 'voice_standby_agents',
      help: 'Standby agents: jobs joined to a room of their own, waiting for the next web call (each holds a job process)',
      registers: [this.registry],
      collect: () => this.standbyAgents.set(this.standbyJobs.size),
    });
    this.firstAudioSeconds = new Histogram({
      name: 'voice_first_audio_seconds',
      help: "From a call's job starting in its process to the agent's first audio playing (the greeting, on web and inbound calls)",
      labelNames: ['call_type'],
      buckets: [0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5],
      registers: [this.registry],
    });
    this.startLoopBlocksTotal = new Counter({
      name: 'voice_start_loop_blocks_total',
      help: "Event-loop stalls over 50 ms in job processes during their call's first 3 s",
      labelNames: ['call_type'],
      registers: [this.registry],
    });
    const activeCalls = opts.activeCalls;
    this.activeCalls = new Gauge({
      name: 'voice_active_calls',
      help: 'Calls (jobs) running on this worker',
      registers: [this.registry],
      collect() {
        if (activeCalls) this.set(activeCalls());
      },
    });
    const load = opts.load;
    this.load = new Gauge({
      name: 'voice_worker_load',
      help: 'Load reported to LiveKit (0-1; full at the load threshold)',
      registers: [this.registry],
      collect() {
        if (load) this.set(load());
      },
    });
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  observeLatency(kind: LatencyKind, labels: LatencyLabels, seconds: number): void {
    if (!Number.isFinite(seconds) || seconds < 0) return;
    this.histograms[kind].observe(labels, seconds);
  }

  callEnded(reason: string, callType: string): void {
    this.callsEnded.inc({ end_reason: reason, call_type: callType });
  }

  knowledgeRetrieval(labels: KnowledgeLabels, seconds: number): void {
    if (!Number.isFinite(seconds) || seconds < 0) return;
    this.knowledge.observe({ call_type: labels.call_type, result: labels.result, prefetched: labels.prefetched }, seconds);
  }

  actionFailed(action: CallAction, callType: string): void {
    this.actionFailures.inc({ action, call_type: callType });
  }

  preemptiveWaste(labels: LatencyLabels, tokens: number, generations: number): void {
    const l = { provider: labels.provider, model: labels.model, call_type: labels.call_type };
    if (Number.isFinite(generations) && generations > 0) this.preemptiveDiscarded.inc(l, generations);
    if (Number.isFinite(tokens) && tokens > 0) this.preemptiveWastedTokens.inc(l, tokens);
  }

  falseInterruption(callType: string, resumed: boolean): void {
    this.falseInterruptions.inc({ call_type: callType, resumed: resumed ? 'yes' : 'no' });
  }

  firstAudio(callType: string, jobId: string, seconds: number): void {
    if (Number.isFinite(seconds) && seconds >= 0) this.firstAudioSeconds.observe({ call_type: callType }, seconds);
    this.onFirstAudio?.(jobId);
  }

  startLoopBlocks(callType: string, count: number): void {
    if (Number.isFinite(count) && count > 0) this.startLoopBlocksTotal.inc({ call_type: callType }, count);
  }

  standby(jobId: string, waiting: boolean): void {
    if (!waiting) {
      this.standbyJobs.delete(jobId);
      this.onCallStarting?.(jobId);
      return;
    }
    this.standbyJobs.add(jobId);
    // No call waits on a standby job's start: its replacement process may be forked now (fork-after-greeting.ts).
    this.onFirstAudio?.(jobId);
  }

  /** Apply an observation pushed by a job process. */
  apply(msg: unknown): boolean {
    const m = msg as { op?: string; kind?: LatencyKind; labels?: LatencyLabels; seconds?: number; reason?: string; call_type?: string };
    if (m?.op === 'knowledge' && typeof m.seconds === 'number' && m.labels) {
      const l = m.labels as unknown as KnowledgeLabels;
      if (!['hit', 'empty', 'error'].includes(l.result) || !['yes', 'no'].includes(l.prefetched)) return false;
      this.knowledgeRetrieval({ call_type: String(l.call_type), result: l.result, prefetched: l.prefetched }, m.seconds);
      return true;
    }
    if (m?.op === 'latency' && m.kind && m.kind in this.histograms && m.labels && typeof m.seconds === 'number') {
      this.observeLatency(m.kind, { provider: String(m.labels.provider), model: String(m.labels.model), call_type: String(m.labels.call_type) }, m.seconds);
      return true;
    }
    if (m?.op === 'preemptive_waste' && m.labels) {
      const w = msg as { tokens?: unknown; generations?: unknown };
      if (typeof w.tokens !== 'number' || typeof w.generations !== 'number') return false;
      this.preemptiveWaste({ provider: String(m.labels.provider), model: String(m.labels.model), call_type: String(m.labels.call_type) }, w.tokens, w.generations);
      return true;
    }
    if (m?.op === 'false_interruption') {
      const f = msg as { call_type?: unknown; resumed?: unknown };
      if (typeof f.call_type !== 'string' || typeof f.resumed !== 'boolean') return false;
      this.falseInterruption(f.call_type, f.resumed);
      return true;
    }
    if (m?.op === 'action_failed') {
      const a = msg as { action?: unknown; call_type?: unknown };
      if (!(CALL_ACTIONS as readonly unknown[]).includes(a.action) || typeof a.call_type !== 'string') return false;
      this.actionFailed(a.action as CallAction, a.call_type);
      return true;
    }
    if (m?.op === 'first_audio') {
      const f = msg as { call_type?: unknown; job_id?: unknown; seconds?: unknown };
      if (typeof f.call_type !== 'string' || typeof f.job_id !== 'string' || typeof f.seconds !== 'number') return false;
      this.firstAudio(f.call_type, f.job_id, f.seconds);
      return true;
    }
    if (m?.op === 'start_loop_blocks') {
      const b = msg as { call_type?: unknown; count?: unknown };
      if (typeof b.call_type !== 'string' || typeof b.count !== 'number') return false;
      this.startLoopBlocks(b.call_type, b.count);
      return true;
    }
    if (m?.op === 'standby') {
      const b = msg as { job_id?: unknown; waiting?: unknown };
      if (typeof b.job_id !== 'string' || typeof b.waiting !== 'boolean') return false;
      this.standby(b.job_id, b.waiting);
      return true;
    }
    if (m?.op === 'call_ended' && typeof m.reason === 'string' && typeof m.call_type === 'string') {
      this.callEnded(m.reason, m.call_type);
      return true;
    }
    return false;
  }
}

/**
 * The metrics listener of the main process: GET /metrics for Prometheus, POST /observe for job processes
 * (loopback only, so it must stay bound to a private address).
 */
export function startMetricsServer(metrics: WorkerMetrics, host: string, port: number): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/metrics') {
      metrics.registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { 'content-type': metrics.registry.contentType });
          res.end(text);
        })
        .catch(() => {
          res.writeHead(500).end();
        });
      return;
    }
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"status":"ok"}');
      return;
    }
    if (req.method === 'POST' && req.url === '/observe') {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let ok = false;
        try {
          const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          ok = (Array.isArray(body) ? body : [body]).every((m) => metrics.apply(m));
        } catch {
          ok = false;
        }
        res.writeHead(ok ? 204 : 400).end();
      });
      return;
    }
    res.writeHead(404).end();
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

/** Sink for job processes: batches observations and posts them to the main process. */
export class PushMetricsSink implements MetricsSink {
  #url: string;
  #batch: unknown[] = [];
  #timer: NodeJS.Timeout | null = null;
  constructor(url: string) {
    this.#url = url;
  }
  observeLatency(kind: LatencyKind, labels: LatencyLabels, seconds: number): void {
    this.#push({ op: 'latency', kind, labels, seconds });
  }
  knowledgeRetrieval(labels: KnowledgeLabels, seconds: number): void {
    this.#push({ op: 'knowledge', labels, seconds });
  }
  callEnded(reason: string, callType: string): void {
    this.#push({ op: 'call_ended', reason, call_type: callType });
    void this.flush();
  }
  actionFailed(action: CallAction, callType: string): void {
    this.#push({ op: 'action_failed', action, call_type: callType });
    void this.flush();
  }
  preemptiveWaste(labels: LatencyLabels, tokens: number, generations: number): void {
    this.#push({ op: 'preemptive_waste', labels, tokens, generations });
  }
  falseInterruption(callType: string, resumed: boolean): void {
    this.#push({ op: 'false_interruption', call_type: callType, resumed });
  }
  firstAudio(callType: string, jobId: string, seconds: number): void {
    // At once: the worker waits for it to fork this process's replacement (fork-after-greeting.ts).
    this.#push({ op: 'first_audio', call_type: callType, job_id: jobId, seconds });
    void this.flush();
  }
  startLoopBlocks(callType: string, count: number): void {
    this.#push({ op: 'start_loop_blocks', call_type: callType, count });
  }
  standby(jobId: string, waiting: boolean): void {
    // At once: the gauge and the replacement fork follow it.
    this.#push({ op: 'standby', job_id: jobId, waiting });
    void this.flush();
  }
  #push(m: unknown) {
    this.#batch.push(m);
    this.#timer ??= setTimeout(() => void this.flush(), 1000).unref();
  }
  async flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    const batch = this.#batch;
    this.#batch = [];
    if (!batch.length) return;
    try {
      await fetch(this.#url, { method: 'POST', body: JSON.stringify(batch), headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(2000) });
    } catch {
      // Metrics are best effort; a restarting main process must not disturb the call.
    }
  }
}
