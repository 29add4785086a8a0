// Requests to this control plane's own /v1 API with the credential the user typed. The credential lives in this
// module's variable only (never in storage, cookies or the DOM) and is attached only to same-origin URLs.

let credential: string | null = null;

export function setCredential(value: string | null): void {
  credential = value;
}

export const signedIn = (): boolean => credential !== null;

/** The `Authorization` value the SDK sends to this origin. */
export function authorization(): string {
  if (!credential) throw new Error('not signed in');
  return `Bearer ${credential}`;
}

export class ApiError extends Error {
  readonly status: number;
  /** The parsed error body (a 422's `detail` is a list of field errors). */
  readonly body: unknown;
  constructor(status: number, message: string, body: unknown = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
  }
}

/** Called on every 401, before the error is thrown (the console returns to sign-in). */
let onUnauthorized: ((err: ApiError) => void) | null = null;
export function setUnauthorizedHandler(fn: ((err: ApiError) => void) | null): void {
  onUnauthorized = fn;
}

/** A URL on this page's origin under /v1; anything else is refused before a request is made. */
export function apiUrl(path: string): URL {
  const url = new URL(path, window.location.origin);
  if (url.origin !== window.location.origin || !url.pathname.startsWith('/v1/')) throw new Error(`refusing to send the credential to ${url.href}`);
  return url;
}

export async function api<T>(path: string, init: { method?: string; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
  const headers: Record<string, string> = { authorization: authorization(), accept: 'application/json' };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(apiUrl(path), {
    method: init.method ?? 'GET',
    headers,
    credentials: 'omit',
    cache: 'no-store',
    referrerPolicy: 'no-referrer',
    ...(init.signal ? { signal: init.signal } : {}),
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!res.ok) {
    const detail = body && typeof body === 'object' && 'detail' in body && typeof body.detail === 'string' ? body.detail : `HTTP ${res.status}`;
    const err = new ApiError(res.status, detail, body);
    if (res.status === 401) onUnauthorized?.(err);
    throw err;
  }
  return body as T;
}

export interface Agent {
  id: string;
  name: string;
}

export interface CallMessage {
  role: 'agent' | 'user';
  content: string;
}

export interface CallRecord {
  id: string;
  status: string;
  end_reason: string | null;
  /** Why the call failed, when it did and the platform knows. */
  error: { code: string; message: string } | null;
  duration_seconds: number | null;
  outcome: string | null;
  recording_url: string | null;
  messages: CallMessage[] | null;
  ai_summary: string | null;
  analysis: { status: string; summary: string | null; outcome: string | null; error: string | null; method: string | null };
}
