// Uploads a finished recording with a streamed PUT to the session config's upload URL (with the call's
// capability as the Authorization header), retrying
// network errors, 429 and 5xx with backoff. A 4xx other than 429 (an expired or refused URL) is final.
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';

export interface UploadOptions {
  url: string;
  /** The Authorization header value (the call's capability). */
  authorization?: string;
  path: string;
  contentType: string;
  attempts?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** Per attempt. */
  timeoutMs?: number;
  onRetry?: (info: { attempt: number; status?: number; error?: string; delayMs: number }) => void;
}

export class UploadError extends Error {
  override name = 'UploadError';
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

export async function uploadRecording(opts: UploadOptions): Promise<{ attempts: number; bytes: number }> {
  const attempts = opts.attempts ?? 6;
  const { size } = await stat(opts.path);
  for (let attempt = 1; ; attempt++) {
    let status: number | undefined;
    let error: string | undefined;
    try {
      const res = await fetch(opts.url, {
        method: 'PUT',
        headers: { 'content-type': opts.contentType, 'content-length': String(size), ...(opts.authorization ? { authorization: opts.authorization } : {}) },
        // Streamed from disk: the recording is never held in memory whole.
        body: Readable.toWeb(createReadStream(opts.path)) as ReadableStream<Uint8Array>,
        duplex: 'half',
        signal: AbortSignal.timeout(opts.timeoutMs ?? 10 * 60_000),
      });
      await res.arrayBuffer().catch(() => {});
      if (res.ok) return { attempts: attempt, bytes: size };
      status = res.status;
      if (status < 500 && status !== 429) throw new UploadError(`recording upload refused with ${status}`, status);
      error = `HTTP ${status}`;
    } catch (err) {
      if (err instanceof UploadError) throw err;
      error = (err as Error).message;
    }
    if (attempt >= attempts) throw new UploadError(`recording upload failed after ${attempt} attempts: ${error}`, status);
    const cap = Math.min(opts.maxDelayMs ?? 30_000, (opts.baseDelayMs ?? 1000) * 2 ** (attempt - 1));
    const delayMs = Math.round(cap / 2 + Math.random() * (cap / 2));
    opts.onRetry?.({ attempt, ...(status ? { status } : {}), ...(error ? { error } : {}), delayMs });
    await new Promise((r) => setTimeout(r, delayMs));
  }
}
