// What one delivery attempt sends: the stored event, plus the fields that expire and are therefore made at
// send time (shared/events.ts, RenderedAtDelivery). Today that is the `recording_url` of
// `call.recording.available`: a download link signed now, valid RECORDING_URL_TTL_SECONDS, so a retry a day
// after the event still carries a link that works, and the stored event holds no link that silently expires.
import type { Services } from '../../services.ts';
import { getRecordingKey } from '../calls/queries.ts';
import { recordingUrl } from '../calls/storage/index.ts';

export async function renderBody(services: Services, eventType: string, stored: string): Promise<string> {
  if (eventType !== 'call.recording.available') return stored;
  // Events stored before the split carried the stable URL as `recording_url`.
  const { recording_url: legacy, recording_api_url: current, ...rest } = JSON.parse(stored) as Record<string, unknown> & { call_id: string };
  const apiUrl = (current ?? legacy) as string;
  const key = await getRecordingKey(services.sql, rest.call_id);
  // A recording that is gone, or kept by a backend no longer configured, still gets a string: the API URL,
  // which then answers 404 like the call resource's missing recording.
  const url = (key && (await recordingUrl(services, rest.call_id, key))) || apiUrl;
  return JSON.stringify({ ...rest, recording_url: url, recording_api_url: apiUrl });
}
