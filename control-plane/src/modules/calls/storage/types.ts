// The contract of a recording backend, which local.ts and s3.ts implement and index.ts chooses between
// (one file both backends import, so the arrows point one way: index -> backends -> types).
import type { Readable } from 'node:stream';
import { HttpError } from '../../../http/errors.ts';

export type RecordingFormat = 'wav' | 'ogg';

export const contentTypeOf = (format: RecordingFormat) => (format === 'ogg' ? 'audio/ogg' : 'audio/wav');

export interface RecordingStorage {
  readonly kind: 'local' | 's3';
  /** Streams an upload into place and returns the key to keep on the call. Rejects with 413 past maxBytes. */
  put(input: { orgId: string; callId: string; format: RecordingFormat; body: Readable; maxBytes: number }): Promise<string>;
  /** Whether this backend holds keys of this form. */
  owns(key: string): boolean;
  /** A download URL valid ttlSeconds: an HMAC-signed route of ours, or a presigned S3 URL. */
  readUrl(callId: string, key: string, ttlSeconds: number): Promise<string>;
  /** Deletes a stored recording; one already gone is no error (the retention job retries after a crash). */
  delete(key: string): Promise<void>;
}

export const tooLarge = (maxBytes: number) =>
  new HttpError(413, 'payload_too_large', `A recording may not exceed ${Math.floor(maxBytes / (1024 * 1024))} MiB`);

/** Counts bytes as they pass and fails the stream past the limit (a 413 for the uploader). */
export function limitBytes(body: Readable, maxBytes: number): void {
  let bytes = 0;
  body.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > maxBytes) body.destroy(tooLarge(maxBytes));
  });
}
