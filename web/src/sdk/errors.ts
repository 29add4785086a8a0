// The SDK's one error type and how API answers and media failures become it. Codes are stable (pages
// branch on them); messages are sentences a caller can be shown as they are.

export type VapErrorCode =
  | 'no_microphone'
  | 'permission_denied'
  | 'key_rejected'
  | 'origin_not_allowed'
  | 'daily_cap_reached'
  | 'concurrency_limit'
  | 'network_lost'
  | 'agent_unavailable'
  | 'configuration_error'
  | 'unknown';

export class VapError extends Error {
  readonly code: VapErrorCode;
  /** HTTP status of the API answer behind the error, when there was one. */
  readonly status: number | null;
  /** The call it is about, when the call was created (its record says more: GET /v1/calls/{id}). */
  readonly callId: string | null;
  /** `configuration_error`: the platform's cause code (`provider_key_missing`, `model_host_refused`...). */
  readonly reason: string | null;
  constructor(code: VapErrorCode, message: string, opts: { status?: number; cause?: unknown; callId?: string; reason?: string } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'VapError';
    this.code = code;
    this.status = opts.status ?? null;
    this.callId = opts.callId ?? null;
    this.reason = opts.reason ?? null;
  }
}

/** The API's error body (docs: "Errors"); every field is optional here because proxies answer too. */
interface ApiErrorBody {
  detail?: unknown;
  type?: unknown;
  reason?: unknown;
  retry_after_seconds?: unknown;
}

/** Maps a non-2xx answer of POST /v1/calls/web to a VapError. */
export function errorFromResponse(status: number, body: unknown): VapError {
  const b: ApiErrorBody = body !== null && typeof body === 'object' ? body : {};
  const detail = typeof b.detail === 'string' ? b.detail : '';
  const opts = { status };
  if (status === 401) return new VapError('key_rejected', `The key was rejected${detail ? `: ${detail}` : ''}.`, opts);
  if (status === 403) {
    if (/origin/i.test(detail)) return new VapError('origin_not_allowed', `This site is not allowed to start calls with this key (${origin()}).`, opts);
    return new VapError('key_rejected', detail || 'This key may not start this call.', opts);
  }
  if (status === 429) {
    if (b.reason === 'daily_cap') return new VapError('daily_cap_reached', detail || 'The daily call limit has been reached.', opts);
    // A page's own pool (publishable keys' web calls) or the organisation's limit: the same for the caller.
    if (b.reason === 'concurrency' || b.reason === 'publishable_concurrency') return new VapError('concurrency_limit', detail || 'Too many calls are in progress; try again when one ends.', opts);
    const wait = typeof b.retry_after_seconds === 'number' ? ` Try again in ${b.retry_after_seconds} s.` : '';
    return new VapError('unknown', `Too many requests.${wait}`, opts);
  }
  if (status === 404 || status === 422) return new VapError('agent_unavailable', 'This agent does not exist or cannot take calls.', opts);
  if (status === 503) return new VapError('agent_unavailable', 'The voice service is unavailable right now; try again shortly.', opts);
  return new VapError('unknown', detail || `The call could not be started (HTTP ${status}).`, opts);
}

/** Maps a getUserMedia failure (a DOMException by name) to a VapError. */
export function errorFromMedia(err: unknown): VapError {
  const name = err !== null && typeof err === 'object' && 'name' in err ? String(err.name) : '';
  if (name === 'NotAllowedError' || name === 'SecurityError') {
    return new VapError('permission_denied', 'Microphone access was denied. Allow the microphone for this site and try again.', { cause: err });
  }
  if (name === 'NotFoundError' || name === 'OverconstrainedError' || name === 'NotReadableError' || name === 'AbortError') {
    return new VapError('no_microphone', 'No usable microphone was found.', { cause: err });
  }
  return new VapError('unknown', `The microphone could not be opened${name ? ` (${name})` : ''}.`, { cause: err });
}

const origin = () => (typeof location === 'undefined' ? 'unknown origin' : location.origin);
