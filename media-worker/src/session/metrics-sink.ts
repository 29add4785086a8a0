// What a call reports its metrics to. The session's parts record through this contract; the worker's process
// implements it (metrics.ts: the Prometheus registry in the main process, a push sink in a job process), so the
// session depends on nothing of the worker's own layer.

export type LatencyKind = 'llm_ttft' | 'tts_ttfb' | 'eou_delay' | 'e2e';

export interface LatencyLabels {
  provider: string;
  model: string;
  call_type: string;
}

export interface KnowledgeLabels {
  call_type: string;
  /** hit (chunks found), empty, error (failed or timed out: the turn went on without) */
  result: 'hit' | 'empty' | 'error';
  /** yes when the search had started on a transcript before the turn ended */
  prefetched: 'yes' | 'no';
}

export interface MetricsSink {
  observeLatency(kind: LatencyKind, labels: LatencyLabels, seconds: number): void;
  callEnded(reason: string, callType: string): void;
  /** Time a user turn waited for its knowledge search (retrieval mode). */
  knowledgeRetrieval?(labels: KnowledgeLabels, seconds: number): void;
  /** A room action of a call failed (hang-up: the room could not be deleted). */
  actionFailed?(action: CallAction, callType: string): void;
  /** Preemptive generations discarded (the caller went on), and their completion tokens. */
  preemptiveWaste?(labels: LatencyLabels, tokens: number, generations: number): void;
  /** A pause of the agent's speech on the caller's sound that no word confirmed: resumed, or not (a new reply). */
  falseInterruption?(callType: string, resumed: boolean): void;
  /** The call's first audio played, `seconds` after its job started (the job's id lets the worker fork its replacement). */
  firstAudio?(callType: string, jobId: string, seconds: number): void;
  /** Event-loop stalls over 50 ms in the job process during the call's first 3 s (start-timeline.ts). */
  startLoopBlocks?(callType: string, count: number): void;
  /** A standby agent's job waits for a call (true), or has left that state (false: it took a call or left). */
  standby?(jobId: string, waiting: boolean): void;
  /** Sends what is still batched (a job process's sink), before the process exits. */
  flush?(): Promise<void>;
}

export const CALL_ACTIONS = ['hang_up', 'transfer', 'send_dtmf'] as const;
export type CallAction = (typeof CALL_ACTIONS)[number];

/** Sink that drops everything (tests, benchmarks). */
export const nullSink: MetricsSink = { observeLatency() {}, callEnded() {} };
