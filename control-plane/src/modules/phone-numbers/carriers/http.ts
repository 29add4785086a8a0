// The one HTTP path of the carrier adapters: a deadline on every request, JSON answers, and every failure
// (transport, timeout, carrier error body) turned into a CarrierError, so nothing raw reaches the API.
// No retries here: the caller decides (retry in one layer only), helped by `retryAfterSeconds` on a 429.
import client from 'prom-client';
import { Agent, request, type Dispatcher } from 'undici';
import type { Logger } from '../../../../../shared/logger.ts';
import { CarrierError, type CarrierErrorCode } from './types.ts';

export interface CarrierResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON body, or null when the body is empty or not JSON. */
  body: unknown;
}

export interface CarrierHttpOptions {
  carrier: 'twilio' | 'telnyx';
  /** Deadline of one request, connection included (ms). */
  timeoutMs: number;
  logger?: Logger;
  /** Registers `vap_carrier_request_duration_seconds` on this registry when given. */
  registry?: client.Registry;
}

export interface CarrierRequest {
  /** What the request does, for logs and metrics (e.g. "purchase"). Static, low cardinality. */
  operation: string;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Statuses the caller handles itself (e.g. 404 on a release); others above 399 become CarrierErrors. */
  accept?: readonly number[];
}

/** How a carrier's error body becomes a code and a message; null keeps the status-based mapping. */
export type ErrorBodyMapper = (status: number, body: unknown) => { code?: CarrierErrorCode; message: string } | null;

function durationHistogram(registry: client.Registry): client.Histogram<'carrier' | 'operation' | 'outcome'> {
  const name = 'vap_carrier_request_duration_seconds';
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as client.Histogram<'carrier' | 'operation' | 'outcome'>;
  return new client.Histogram({
    name,
    help: 'Carrier API requests by carrier, operation and outcome (ok or a CarrierError code)',
    labelNames: ['carrier', 'operation', 'outcome'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [registry],
  });
}

/** Status-based mapping shared by both carriers (the error body may refine it). */
export function codeForStatus(status: number): CarrierErrorCode {
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'unavailable';
  return 'invalid_request';
}

/** Retry-After in seconds (delta or HTTP date), or null. */
export function parseRetryAfter(value: string | string[] | undefined, now = Date.now()): number | null {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

export interface CarrierHttp {
  send(req: CarrierRequest, mapError: ErrorBodyMapper): Promise<CarrierResponse>;
  close(): Promise<void>;
}

export function createCarrierHttp(opts: CarrierHttpOptions): CarrierHttp {
  // One pooled agent per adapter; the connect timeout is bounded by the request deadline as well.
  const agent: Dispatcher = new Agent({ connect: { timeout: opts.timeoutMs }, keepAliveTimeout: 10_000 });
  const histogram = opts.registry ? durationHistogram(opts.registry) : null;

  async function send(req: CarrierRequest, mapError: ErrorBodyMapper): Promise<CarrierResponse> {
    const started = performance.now();
    let outcome = 'ok';
    try {
      let res: Dispatcher.ResponseData;
      try {
        res = await request(req.url, {
          method: req.method,
          headers: { accept: 'application/json', 'user-agent': 'vap-control-plane', ...req.headers },
          body: req.body,
          dispatcher: agent,
          signal: AbortSignal.timeout(opts.timeoutMs),
          headersTimeout: opts.timeoutMs,
          bodyTimeout: opts.timeoutMs,
        });
      } catch (err) {
        throw transportError(opts.carrier, req.operation, err);
      }
      let text: string;
      try {
        text = await res.body.text();
      } catch (err) {
        throw transportError(opts.carrier, req.operation, err);
      }
      let body: unknown = null;
      if (text) {
        try {
          body = JSON.parse(text);
        } catch {
          body = null;
        }
      }
      const response: CarrierResponse = { status: res.statusCode, headers: res.headers, body };
      if (res.statusCode < 400 || req.accept?.includes(res.statusCode)) return response;
      const mapped = mapError(res.statusCode, body);
      // 401/403/429/5xx keep their meaning whatever the body says; the body refines 4xx only.
      const byStatus = codeForStatus(res.statusCode);
      const code = byStatus === 'invalid_request' ? (mapped?.code ?? byStatus) : byStatus;
      const message = mapped?.message ?? `carrier answered ${res.statusCode}`;
      throw new CarrierError(code, `${opts.carrier} ${req.operation}: ${message}`, {
        carrierStatus: res.statusCode,
        retryAfterSeconds: res.statusCode === 429 ? (parseRetryAfter(res.headers['retry-after']) ?? 1) : null,
      });
    } catch (err) {
      outcome = err instanceof CarrierError ? err.code : 'unavailable';
      opts.logger?.warn({ carrier: opts.carrier, operation: req.operation, code: outcome, status: err instanceof CarrierError ? err.carrierStatus : null, err: err instanceof Error ? err.message : String(err) }, 'carrier request failed');
      throw err instanceof CarrierError ? err : transportError(opts.carrier, req.operation, err);
    } finally {
      histogram?.observe({ carrier: opts.carrier, operation: req.operation, outcome }, (performance.now() - started) / 1000);
    }
  }

  return { send, close: () => agent.close() };
}

/** Timeouts, refused or reset connections and DNS failures: the carrier is unreachable for now. */
function transportError(carrier: string, operation: string, err: unknown): CarrierError {
  const e = err as { name?: string; code?: string; message?: string } | null;
  const timedOut = e?.name === 'TimeoutError' || e?.name === 'AbortError' || /TIMEOUT/.test(e?.code ?? '');
  const what = timedOut ? 'timed out' : `unreachable (${e?.code ?? e?.name ?? 'error'})`;
  return new CarrierError('unavailable', `${carrier} ${operation}: ${what}`, { cause: err });
}

/** True for failures after which a write may or may not have happened at the carrier (timeout, reset, 5xx). */
export function isAmbiguous(err: unknown): boolean {
  return err instanceof CarrierError && err.code === 'unavailable';
}

/** A comma-separated list of addresses from configuration; unset gives undefined (the carrier's defaults). */
export function parseAddressList(value: string | undefined): string[] | undefined {
  if (!value) return undefined;
  const list = value.split(',').map((s) => s.trim()).filter(Boolean);
  return list.length ? list : undefined;
}
