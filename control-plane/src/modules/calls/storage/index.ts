// Where call recordings live: the local filesystem (default) or an S3-compatible bucket (S3_BUCKET set).
// A stored key says which backend holds it (`s3://bucket/key` for S3, a relative path for local files), so a
// deployment that moves to S3 keeps serving the recordings it stored before.
import type { Readable } from 'node:stream';
import type { Services } from '../../../services.ts';
import { HttpError } from '../../../http/errors.ts';
import { localStorage } from './local.ts';
import { s3Storage } from './s3.ts';

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
}

export const tooLarge = (maxBytes: number) =>
  new HttpError(413, 'payload_too_large', `A recording may not exceed ${Math.floor(maxBytes / (1024 * 1024))} MiB`);

interface Backends {
  write: RecordingStorage;
  all: RecordingStorage[];
}

// One S3 client per running platform; Services is built once, so it is the natural cache key.
const cache = new WeakMap<Services, Backends>();

function backends(services: Services): Backends {
  let b = cache.get(services);
  if (!b) {
    const local = localStorage(services);
    const s3 = services.config.S3_BUCKET ? s3Storage(services.config) : null;
    b = { write: s3 ?? local, all: s3 ? [s3, local] : [local] };
    cache.set(services, b);
  }
  return b;
}

/** The backend new recordings go to, chosen by configuration. */
export const recordingStorage = (services: Services): RecordingStorage => backends(services).write;

/** A fresh download URL for a stored key; null when the key belongs to a backend that is not configured. */
export async function recordingUrl(services: Services, callId: string, key: string): Promise<string | null> {
  const owner = backends(services).all.find((s) => s.owns(key));
  if (!owner) {
    services.log.warn({ call_id: callId }, 'recording stored in a backend that is not configured');
    return null;
  }
  return owner.readUrl(callId, key, services.config.RECORDING_URL_TTL_SECONDS);
}

/** Counts bytes as they pass and fails the stream past the limit (a 413 for the uploader). */
export function limitBytes(body: Readable, maxBytes: number): void {
  let bytes = 0;
  body.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > maxBytes) body.destroy(tooLarge(maxBytes));
  });
}
