// Local filesystem backend: files under RECORDINGS_DIR, read through the HMAC-signed /v1/recordings route.
import type { Services } from '../../../services.ts';
import { deleteRecordingFile, signedUrl, storeRecording } from '../recordings.ts';
import type { RecordingStorage } from './types.ts';

export function localStorage(services: Services): RecordingStorage {
  return {
    kind: 'local',
    // storeRecording fails with the typed 413 (limitBytes) past maxBytes.
    put: ({ orgId, callId, format, body, maxBytes }) => storeRecording(services, orgId, callId, format, body, maxBytes),
    owns: (key) => !key.startsWith('s3://'),
    readUrl: async (callId, _key, ttlSeconds) => signedUrl(services, 'recording-read', callId, ttlSeconds),
    delete: (key) => deleteRecordingFile(services, key),
  };
}
