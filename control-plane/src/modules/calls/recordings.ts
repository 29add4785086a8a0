// Call recordings on the local filesystem, reached through URLs signed with an HMAC and an expiry
// (`recording_url`, valid RECORDING_URL_TTL_SECONDS, 4 hours by default; a fresh one on each fetch of the call
// and each delivery attempt of `call.recording.available`).
// The worker uploads to PUT /v1/recordings/{id}/upload with the call's capability (calls/capability.ts).
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import { limitBytes } from './storage/types.ts';
import type { Services } from '../../services.ts';

export type RecordingPurpose = 'recording-read';

export function recordingsDir(services: Services): string {
  return path.resolve(services.config.RECORDINGS_DIR ?? path.join(services.config.DATA_DIR, 'recordings'));
}

function signature(services: Services, purpose: RecordingPurpose, callId: string, expires: number): string {
  return createHmac('sha256', services.secrets.derive(purpose)).update(`${callId}.${expires}`).digest('base64url');
}

export function signedUrl(services: Services, purpose: RecordingPurpose, callId: string, ttlSeconds: number, now = Date.now()): string {
  const expires = Math.floor(now / 1000) + ttlSeconds;
  return `${services.publicBaseUrl()}/v1/recordings/${callId}?expires=${expires}&signature=${signature(services, purpose, callId, expires)}`;
}

/** Checks a signature and its expiry; false for a tampered, foreign or expired one. */
export function verifySignature(services: Services, purpose: RecordingPurpose, callId: string, expires: number, sig: string, now = Date.now()): boolean {
  if (!Number.isInteger(expires) || expires * 1000 < now) return false;
  const expected = Buffer.from(signature(services, purpose, callId, expires));
  const given = Buffer.from(sig);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Where the worker uploads a call's recording: a route the ingress serves, authenticated by the call's capability. */
export const recordingUploadUrl = (services: Services, callId: string) => `${services.publicBaseUrl()}/v1/recordings/${callId}/upload`;

export const recordingFile = (services: Services, key: string) => path.join(recordingsDir(services), key);

/** Streams an upload into place (write to a temporary name, then rename, so readers never see half a file). */
export async function storeRecording(services: Services, orgId: string, callId: string, ext: 'wav' | 'ogg', body: Readable, maxBytes: number): Promise<string> {
  const key = `${orgId}/${callId}.${ext}`;
  const file = recordingFile(services, key);
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.part`;
  // Fails the stream with the typed 413 past the limit (no message text to match later).
  limitBytes(body, maxBytes);
  await pipeline(body, createWriteStream(tmp));
  await rename(tmp, file);
  return key;
}

/** Removes a stored file (and a half-written upload beside it); a file already gone is no error. */
export async function deleteRecordingFile(services: Services, key: string): Promise<void> {
  const file = recordingFile(services, key);
  // Keys are ours (`<org>/<call>.<ext>`), but a key must never reach outside the recordings directory.
  if (!file.startsWith(recordingsDir(services) + path.sep)) throw new Error('recording key outside the recordings directory');
  await rm(file, { force: true });
  await rm(`${file}.part`, { force: true });
}

/** A stored recording's size and type; `open` streams it whole or bytes start..end (inclusive). */
export async function openRecording(services: Services, key: string) {
  const file = recordingFile(services, key);
  const info = await stat(file).catch(() => null);
  if (!info) return null;
  return {
    size: info.size,
    contentType: key.endsWith('.ogg') ? 'audio/ogg' : 'audio/wav',
    open: (range?: { start: number; end: number }) => createReadStream(file, range ?? {}),
  };
}
