// Helpers the end-to-end tests share: a polling wait and a client for the control plane's API.

type Maybe<T> = T | null | undefined | false;

/** Polls `fn` until it returns a truthy value, or throws once `timeoutMs` has passed. */
export async function until<T>(what: string, fn: () => Promise<Maybe<T>> | Maybe<T>, timeoutMs = 60_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** `until` with a different poll interval (and default timeout), for files that wait on slower state. */
export function untilEvery(intervalMs: number, defaultTimeoutMs = 60_000) {
  return <T>(what: string, fn: () => Promise<Maybe<T>> | Maybe<T>, timeoutMs = defaultTimeoutMs): Promise<T> => until(what, fn, timeoutMs, intervalMs);
}

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  body: T;
}

/**
 * A bearer-key client for the control plane. The base URL and key are getters because the test files
 * assign them in beforeAll, after this is created at module load. The body is parsed as JSON only when
 * the response says it is JSON and is not empty; otherwise it is the text.
 */
export function apiClient(baseUrl: () => string | undefined, key: () => string) {
  return async function api<T = any>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<ApiResponse<T>> {
    const base = baseUrl();
    // A stack started without a control plane has no URL; say so rather than fetch "undefined/...".
    if (!base) throw new Error('no control plane URL: the stack was started without one');
    const res = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${key()}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: (text && res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) as T };
  };
}
