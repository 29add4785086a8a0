// Where call recordings live: the local filesystem (default) or an S3-compatible bucket (S3_BUCKET set).
// A stored key says which backend holds it (`s3://bucket/key` for S3, a relative path for local files), so a
// deployment that moves to S3 keeps serving the recordings it stored before.
import type { Services } from '../../../services.ts';
import { localStorage } from './local.ts';
import { s3Storage } from './s3.ts';

import type { RecordingStorage } from './types.ts';

export { contentTypeOf, limitBytes, tooLarge, type RecordingFormat, type RecordingStorage } from './types.ts';

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

/**
 * Deletes a stored recording from the backend that holds it. False when no configured backend holds the key
 * (a deployment that moved away from it): the key is kept, so the recording is not forgotten.
 */
export async function deleteRecording(services: Services, key: string): Promise<boolean> {
  const owner = backends(services).all.find((s) => s.owns(key));
  if (!owner) return false;
  await owner.delete(key);
  return true;
}
