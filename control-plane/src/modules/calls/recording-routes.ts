// GET /v1/calls/{call_id}/recording: the recording behind a stable, authenticated URL, which
// `call.recording.available` carries as `recording_api_url` (next to `recording_url`, a link signed at each
// delivery attempt). It answers with a redirect to a freshly signed link, so the bytes are served the same way
// as `recording_url`.
import { defineRoute, reply } from '../../http/route.ts';
import { notFound } from '../../http/errors.ts';
import { CallParams, RecordingLink, RecordingLinkQuery } from '../../../../schemas/calls.ts';
import type { Services } from '../../services.ts';
import { getCall } from './queries.ts';
import { recordingUrl } from './storage/index.ts';

/** `recording_api_url` of `call.recording.available`: it never expires, and needs the organisation's API key. */
export const stableRecordingUrl = (services: Services, callId: string) => `${services.publicBaseUrl().replace(/\/$/, '')}/v1/calls/${callId}/recording`;

export const callRecordingRoutes = [
  defineRoute({
    method: 'get',
    path: '/calls/:call_id/recording',
    operationId: 'getCallRecording',
    tag: 'calls',
    summary: "Download a call's recording",
    description:
      'A stable URL for the recording, authenticated with the API key like any other endpoint (the ' +
      '`recording_api_url` of the `call.recording.available` event, which stays valid however late it is used). ' +
      'Answers 302 to a freshly signed download link (valid 4 hours; no Authorization header needed there). 404 while ' +
      'the call has no recording. With `redirect=false` it answers 200 with the link and its expiry instead, for ' +
      'clients that do not follow redirects or want to hand the link on.',
    params: CallParams,
    query: RecordingLinkQuery,
    responses: {
      200: { description: 'With `redirect=false`: the signed download link', schema: RecordingLink },
      302: { description: 'Redirect to a signed download link (Location header)' },
    },
    handler: async ({ params, query, auth, db, services }) => {
      const call = await getCall(db, auth.orgId, params.call_id);
      if (!call) throw notFound('Call');
      const url = call.recording_key ? await recordingUrl(services, call.id, call.recording_key) : null;
      if (!url) throw notFound('Recording');
      if (!query.redirect) {
        const expiresAt = new Date(Date.now() + services.config.RECORDING_URL_TTL_SECONDS * 1000).toISOString();
        return reply(200, { url, expires_at: expiresAt }, { 'cache-control': 'no-store' });
      }
      return reply(302, undefined, { location: url, 'cache-control': 'no-store' });
    },
  }),
];
