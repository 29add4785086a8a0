// Typed client of the control plane's internal API (`/internal/v1`, see docs/internal-api.md), used by media
// workers. Reads (config, knowledge search) are awaited by the caller; reports are queued and sent in the
// background with retries, so a slow or restarting control plane never blocks the audio loop. Every report
// carries a per-call `seq`, so a retried report is applied once.
import { setTimeout as sleep } from 'node:timers/promises';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import {
  CallConfig,
  type DoNotCallRequest,
  type DoNotCallResult,
  type EndedReport,
  type FailedReport,
  type HandoffReport,
  type InboundOpenRequest,
  type InboundOpenResult,
  type InboundRoomStatus,
  type KnowledgeSearchRequest,
  type KnowledgeSearchResult,
  type StandbyWaitResult,
  type StartedReport,
  type TranscriptReport,
  type TransferRequest,
  type TransferResult,
  type TransferUpdate,
} from '../schemas/internal.ts';
import type { WorkerSupervisionList } from '../schemas/supervision.ts';
import { traceCarrier } from './tracing.ts';
import { context as otelContext, type Context as OtelContext } from '@opentelemetry/api';

export const INTERNAL_API_PREFIX = '/internal/v1';
/** The header of a call's capability (docs/internal-api.md, "Per-call capability"). */
export const CAPABILITY_HEADER = 'x-call-capability';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;
// Lenient about unknown keywords and extra fields: the control plane may add fields before workers know them.
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: false }));
const checkConfig = ajv.compile<CallConfig>(CallConfig);

export interface RetryOptions {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
}

export interface InternalApiOptions {
  /** Control plane base URL, e.g. http://127.0.0.1:8080 */
  baseUrl: string;
  /** The workers' own credential (WORKER_TOKEN). */
  token: string;
  /** This worker's LiveKit id: the control plane rate-limits each worker in a bucket of its own. */
  workerId?: string;
  /** Per-request timeout. */
  timeoutMs?: number;
  retry?: Partial<RetryOptions>;
  /** Called when a report is given up on (after all retries, or a final 4xx). */
  onReportFailed?: (info: { callId: string; kind: string; seq: number; error: unknown }) => void;
}

export class InternalApiError extends Error {
  readonly status: number | null;
  readonly retryable: boolean;
  readonly body: unknown;
  constructor(message: string, status: number | null, retryable: boolean, body?: unknown) {
    super(message);
    this.name = 'InternalApiError';
    this.status = status;
    this.retryable = retryable;
    this.body = body;
  }
}

const DEFAULT_RETRY: RetryOptions = { maxAttempts: 8, baseDelayMs: 250, maxDelayMs: 10_000 };

/** 4xx answers are final, except timeouts, too-early and rate limits (as webhook senders do). */
const isRetryableStatus = (status: number) => status >= 500 || status === 408 || status === 425 || status === 429;

export function backoffDelay(attempt: number, retry: RetryOptions): number {
  const exp = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 1));
  // Full jitter keeps many workers from retrying in step after a control-plane restart.
  return Math.round(exp / 2 + Math.random() * (exp / 2));
}

type ReportKind = 'started' | 'transcript' | 'handoff' | 'ended' | 'failed';
type ReportBody<K extends ReportKind> = K extends 'started'
  ? StartedReport
  : K extends 'transcript'
    ? TranscriptReport
    : K extends 'handoff'
      ? HandoffReport
      : K extends 'failed'
        ? FailedReport
        : EndedReport;

export class InternalApiClient {
  readonly baseUrl: string;
  readonly #token: string;
  readonly #timeoutMs: number;
  readonly retry: RetryOptions;
  readonly #onReportFailed: InternalApiOptions['onReportFailed'];
  readonly #workerId: string | undefined;
  readonly #capabilities = new Map<string, string>();

  constructor(opts: InternalApiOptions) {
    if (!opts.token) throw new Error('internal API token (WORKER_TOKEN) is required');
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.#token = opts.token;
    this.#timeoutMs = opts.timeoutMs ?? 10_000;
    this.retry = { ...DEFAULT_RETRY, ...opts.retry };
    this.#onReportFailed = opts.onReportFailed;
    this.#workerId = opts.workerId;
  }

  /** The call's capability (from the dispatch metadata or the inbound open): sent with every request about it. */
  setCapability(callId: string, capability: string): void {
    this.#capabilities.set(callId, capability);
  }

  /** One HTTP request, no retries. Throws InternalApiError. */
  async request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal, timeoutMs = this.#timeoutMs, headers: Record<string, string> = {}): Promise<T> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const callId = /^\/calls\/([^/]+)\//.exec(path)?.[1];
    const capability = callId ? this.#capabilities.get(decodeURIComponent(callId)) : undefined;
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${INTERNAL_API_PREFIX}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.#token}`,
          ...(capability ? { [CAPABILITY_HEADER]: capability } : {}),
          ...(this.#workerId ? { 'vap-worker-id': this.#workerId } : {}),
          accept: 'application/json',
          ...traceCarrier(),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          ...headers,
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      throw new InternalApiError(`internal API ${method} ${path} failed: ${(err as Error).message}`, null, true);
    }
    const text = await res.text();
    let parsed: unknown = undefined;
    if (text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    if (!res.ok) {
      throw new InternalApiError(`internal API ${method} ${path} answered ${res.status}`, res.status, isRetryableStatus(res.status), parsed);
    }
    return parsed as T;
  }

  /** A request retried with backoff while the error is retryable. */
  async requestWithRetry<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.request<T>(method, path, body, signal);
      } catch (err) {
        const retryable = err instanceof InternalApiError && err.retryable;
        if (!retryable || attempt >= this.retry.maxAttempts || signal?.aborted) throw err;
        await sleep(backoffDelay(attempt, this.retry), undefined, signal ? { signal } : undefined);
      }
    }
  }

  /** The resolved session config of a call, validated against the contract. */
  async getConfig(callId: string, signal?: AbortSignal): Promise<CallConfig> {
    const body = await this.requestWithRetry<unknown>('GET', `/calls/${encodeURIComponent(callId)}/config`, undefined, signal);
    if (!checkConfig(body)) {
      const first = checkConfig.errors?.[0];
      throw new InternalApiError(`call config does not match the contract at ${first?.instancePath || '/'}: ${first?.message ?? 'invalid'}`, 200, false, body);
    }
    return body;
  }

  /**
   * A standby agent's job waits for the call the control plane gives its room (the request is held up to 25 s):
   * the call, with its capability kept and its config checked against the contract; `{release: true}` when the
   * room is no longer wanted; null when nothing came yet (ask again). Throws InternalApiError (404: not a standby
   * room).
   */
  async waitForStandbyCall(room: string, workerId: string, signal?: AbortSignal, secret?: string | null): Promise<StandbyWaitResult | null> {
    // The room's secret, from its dispatch: a wait without it is refused (a room's name alone is not enough).
    const headers: Record<string, string> = secret ? { 'x-standby-secret': secret } : {};
    const r = await this.request<StandbyWaitResult | undefined>('POST', `/standby/${encodeURIComponent(room)}/wait`, { worker_id: workerId }, signal, 40_000, headers);
    if (!r || typeof r !== 'object') return null;
    if (r.release) return { release: true };
    if (!r.call_id || !r.capability || !checkConfig(r.config)) {
      const first = checkConfig.errors?.[0];
      throw new InternalApiError(`standby call does not match the contract at ${first?.instancePath || '/'}: ${first?.message ?? 'invalid'}`, 200, false, r);
    }
    this.setCapability(r.call_id, r.capability);
    return r;
  }

  /** Inbound SIP: the control plane resolves the number's routing and creates the call; its capability is kept. */
  async openInbound(req: InboundOpenRequest, signal?: AbortSignal): Promise<InboundOpenResult> {
    const opened = await this.requestWithRetry<InboundOpenResult>('POST', '/calls/inbound', req, signal);
    if (opened.capability) this.setCapability(opened.call_id, opened.capability);
    return opened;
  }

  /**
   * Whether the control plane already gave a number's room's call to an agent of its own choosing (a standby
   * agent, or the fallback): the job its dispatch rule offers is then not needed. Not retried, short: the answer
   * decides whether the job is accepted, and a caller waits on it.
   */
  async inboundRoomStatus(room: string, timeoutMs = 1000): Promise<InboundRoomStatus> {
    return this.request<InboundRoomStatus>('GET', `/calls/inbound/rooms/${encodeURIComponent(room)}`, undefined, undefined, timeoutMs);
  }

  /**
   * A supervisor's actions for the agent (say, whisper, mute), in order; each is given once, so the request is
   * not retried (a retry after a lost answer would find nothing; the next nudge brings what came since).
   */
  takeSupervision(callId: string): Promise<WorkerSupervisionList> {
    return this.request<WorkerSupervisionList>('GET', `/calls/${encodeURIComponent(callId)}/supervision`, undefined, undefined, 5000);
  }

  /** Top chunks of the call's knowledge bases. Not retried: a turn can't wait for it. */
  searchKnowledge(callId: string, req: KnowledgeSearchRequest, opts: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<KnowledgeSearchResult> {
    return this.request<KnowledgeSearchResult>('POST', `/calls/${encodeURIComponent(callId)}/knowledge/search`, req, opts.signal, opts.timeoutMs ?? 1500);
  }

  /** The callee asked not to be called again: the control plane lists the call's other party. Retried: it must not be lost. */
  addToDoNotCall(callId: string, req: DoNotCallRequest, signal?: AbortSignal): Promise<DoNotCallResult> {
    return this.requestWithRetry<DoNotCallResult>('POST', `/calls/${encodeURIComponent(callId)}/do-not-call`, req, signal);
  }

  /**
   * Warm transfer: the control plane dials the second leg into the call's room and answers once it is answered
   * or failed (its ring timeout, at most 120 s, bounds the wait). Not retried: a retry would ring the person twice.
   */
  startTransfer(callId: string, req: TransferRequest, signal?: AbortSignal): Promise<TransferResult> {
    return this.request<TransferResult>('POST', `/calls/${encodeURIComponent(callId)}/transfers`, req, signal, 150_000);
  }

  /** The warm transfer's legs are joined, or its answered leg was let go. */
  updateTransfer(callId: string, transferId: string, req: TransferUpdate, signal?: AbortSignal): Promise<unknown> {
    return this.requestWithRetry('POST', `/calls/${encodeURIComponent(callId)}/transfers/${encodeURIComponent(transferId)}`, req, signal);
  }

  /** A reporter for one call. */
  reporter(callId: string): CallReporter {
    return new CallReporter(this, callId, this.#onReportFailed);
  }
}

interface QueuedReport {
  kind: ReportKind;
  body: { seq: number };
}

/**
 * Per-call report queue. Reports go out in seq order, one at a time; a transcript partial still waiting
 * is replaced by a newer one (each partial is the whole conversation so far). Methods never throw and
 * never wait for the network.
 */
export class CallReporter {
  readonly callId: string;
  #seq = 0;
  #queue: QueuedReport[] = [];
  #running: Promise<void> | null = null;
  #client: InternalApiClient;
  #onFailed: InternalApiOptions['onReportFailed'];
  #abort = new AbortController();
  /** The context the reporter was made in (the call's job span): reports stay in the call's trace even when an
   * event outside it (the room closing) queues them. */
  #otel: OtelContext = otelContext.active();
  /** Reports acknowledged by the control plane, in order (kind and seq). */
  readonly delivered: { kind: ReportKind; seq: number }[] = [];
  readonly failed: { kind: ReportKind; seq: number; error: unknown }[] = [];

  constructor(client: InternalApiClient, callId: string, onFailed?: InternalApiOptions['onReportFailed']) {
    this.#client = client;
    this.callId = callId;
    this.#onFailed = onFailed;
  }

  started(body: Omit<StartedReport, 'seq'>): number {
    return this.#enqueue('started', body);
  }

  transcript(messages: TranscriptReport['messages']): number {
    this.#queue = this.#queue.filter((r) => r.kind !== 'transcript');
    return this.#enqueue('transcript', { messages });
  }

  /** A squad's call passed from one agent to another (call.handoff). */
  handoff(body: Omit<HandoffReport, 'seq'>): number {
    return this.#enqueue('handoff', body);
  }

  ended(body: Omit<EndedReport, 'seq'>): number {
    // Partials still waiting are pointless once the final transcript goes out.
    this.#queue = this.#queue.filter((r) => r.kind !== 'transcript');
    return this.#enqueue('ended', body);
  }

  /** The call's agent could not be built: the call fails now, with its cause (end_reason configuration_error). */
  failedToStart(body: Omit<FailedReport, 'seq'>): number {
    return this.#enqueue('failed', body);
  }

  /** Resolves when the queue is empty, or after timeoutMs (then pending reports are abandoned). */
  async flush(timeoutMs = 15_000): Promise<boolean> {
    const done = (async () => {
      while (this.#running) await this.#running;
      return true;
    })();
    const timer = sleep(timeoutMs, false, { ref: false });
    const ok = await Promise.race([done, timer]);
    if (!ok) this.#abort.abort();
    return ok;
  }

  #enqueue<K extends ReportKind>(kind: K, body: Omit<ReportBody<K>, 'seq'>): number {
    const seq = ++this.#seq;
    this.#queue.push({ kind, body: { seq, ...body } });
    if (!this.#running) {
      this.#running = otelContext.with(this.#otel, () => this.#drain()).finally(() => {
        this.#running = null;
      });
    }
    return seq;
  }

  async #drain(): Promise<void> {
    let next: QueuedReport | undefined;
    while ((next = this.#queue.shift())) {
      const path = `/calls/${encodeURIComponent(this.callId)}/${next.kind}`;
      try {
        await this.#client.requestWithRetry('POST', path, next.body, this.#abort.signal);
        this.delivered.push({ kind: next.kind, seq: next.body.seq });
      } catch (error) {
        this.failed.push({ kind: next.kind, seq: next.body.seq, error });
        this.#onFailed?.({ callId: this.callId, kind: next.kind, seq: next.body.seq, error });
      }
    }
  }
}
