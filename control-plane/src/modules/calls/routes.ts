// Public call routes: web call creation, get, list, outcome update, stop; signed recording downloads.
import { defineRoute, reply } from '../../http/route.ts';
import { forbidden, HttpError, notFound } from '../../http/errors.ts';
import { parseByteRange } from '../../http/byte-range.ts';
import { Type } from '../../../../schemas/common.ts';
import { CALL_COUNT_CAP, TOTAL_EXACT_HEADER, Call, CallList, CallListQuery, CallParams, CreateCall, CreateWebCall, UpdateCall, WebCallResult } from '../../../../schemas/calls.ts';
import { getCall, getRecordingKey, listCalls, setManualOutcome } from './queries.ts';
import { createOutboundCall, parseIdempotencyKey } from './outbound.ts';
import { callView, createWebCall, stopCall } from './service.ts';
import { transfersOf } from './transfers.ts';
import { openRecording, verifySignature } from './recordings.ts';
import { recordingUrl } from './storage/index.ts';
import { WebhookDeliveryList, WebhookDeliveryQuery } from '../../../../schemas/webhooks.ts';
import { listCallDeliveries } from '../webhooks/queries.ts';

const meta = (ctx: { state: { requestId: string }; ip: string }) => ({ requestId: ctx.state.requestId, ip: ctx.ip || null });

export const callRoutes = [
  defineRoute({
    method: 'post',
    path: '/calls/web',
    operationId: 'createWebCall',
    tag: 'calls',
    summary: 'Start a web call',
    description:
      'Creates the call, its LiveKit room and the agent dispatch, and returns a short-lived participant token for ' +
      '`server_url`. An `agent_id` or `squad_id` that names nothing in your organisation is a 422 ' +
      '`reference_not_found` at the field, as on `POST /v1/calls`. Accepts a secret API key, or a publishable key with scope `calls:web` from one of its allowed ' +
      'origins (and, when the key lists agents, for one of them; `overrides` fields and `variables` only as the key\'s ' +
      '`allowed_overrides` lists, else 403 naming them). Counts against `max_calls_per_day` and `max_concurrent_calls` ' +
      '(429 with `reason` when reached). A call started with a publishable key is first held to its own limits ' +
      '(PUBLISHABLE_WEB_CALLS_PER_MINUTE_PER_IP per client IP, PUBLISHABLE_WEB_CALL_CONCURRENCY live calls per ' +
      'organisation: 429 `web_calls_per_ip`, `publishable_concurrency`), and is never counted against phone calls\' ' +
      'limits.',
    publishableScope: 'calls:web',
    body: CreateWebCall,
    status: 201,
    transaction: false,
    responses: {
      201: { description: 'The call and how to join it', schema: WebCallResult },
      503: { description: 'LiveKit could not be reached; the call is recorded as failed' },
    },
    handler: async ({ body, auth, services, ctx }) => createWebCall(services, auth, body, meta(ctx)),
  }),
  defineRoute({
    method: 'post',
    path: '/calls',
    operationId: 'createCall',
    tag: 'calls',
    summary: 'Place an outbound phone call',
    description:
      'Records the call (`type` `outbound`, `status` `queued`) and answers at once; a background job dials it, now or at ' +
      '`scheduled_at`. The status then follows the phone leg: `initiated` while it rings, `in_progress` once answered, ' +
      '`completed` when it ends; a call that cannot connect is `failed` with `end_reason` (and `call.failed` `reason`) ' +
      '`busy`, `no_answer`, `rejected`, `invalid_number` or `carrier_error`. `from_number` must be one of your active ' +
      "numbers; without it the agent's number is used. Counts against `max_calls_per_day` and `max_concurrent_calls` " +
      '(429 with `reason` when reached). Send an `Idempotency-Key` header to retry safely: for 24 hours the same key ' +
      'with the same body answers the first response (with `Idempotent-Replayed: true`) and dials once; the same key ' +
      'with another body is a 422.',
    body: CreateCall,
    headers: Type.Object({
      'idempotency-key': Type.Optional(
        Type.String({ minLength: 1, maxLength: 255, description: 'Any unique string (a UUID v4 is a good choice); names this request for 24 hours' }),
      ),
    }),
    status: 201,
    transaction: false,
    responses: { 201: { description: 'The call, queued for dialling', schema: Call } },
    handler: async ({ body, auth, services, ctx }) => {
      const idempotencyKey = parseIdempotencyKey(ctx.get('idempotency-key') || undefined);
      const res = await createOutboundCall(services, auth, body, { ...meta(ctx), idempotencyKey });
      return reply(res.status, res.body, res.replayed ? { 'Idempotent-Replayed': 'true' } : undefined);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/calls',
    operationId: 'listCalls',
    tag: 'calls',
    summary: 'List calls',
    description:
      'Newest first (`id` breaks ties). Filters, all combinable: agent, type, status, phone number, outcome, a creation ' +
      'time range, a campaign, and `q`, text in the transcript. `total` is exact for the unfiltered list and for a ' +
      `filtered one of up to ${CALL_COUNT_CAP.toLocaleString('en')} calls (or up to \`offset + limit\`, if more); past that it is an estimate, never ` +
      'less than the calls counted, so `offset + limit < total` always means another page exists. The `Total-Exact` ' +
      'header says which (`true` or `false`).',
    query: CallListQuery,
    responses: {
      200: {
        description: 'Calls',
        schema: CallList,
        headers: { [TOTAL_EXACT_HEADER]: { description: '`true` when `total` is an exact count, `false` when it is an estimate', schema: { type: 'string', enum: ['true', 'false'] } } },
      },
    },
    handler: async ({ query, auth, db, services }) => {
      const { rows, total, exact } = await listCalls(
        db,
        {
          orgId: auth.orgId,
          agentId: query.agent_id,
          type: query.type,
          status: query.status,
          createdAfter: query.created_after,
          createdBefore: query.created_before,
          campaignId: query.campaign_id,
          phoneNumberId: query.phone_number_id,
          outcome: query.outcome,
          q: query.q,
          limit: query.limit,
          offset: query.offset,
        },
        CALL_COUNT_CAP,
      );
      const transfers = await transfersOf(db, rows.map((r) => r.id));
      const items = await Promise.all(rows.map((r) => callView(services, r, { transfers: transfers.get(r.id) ?? [] })));
      return reply(200, { items, total, limit: query.limit, offset: query.offset }, { [TOTAL_EXACT_HEADER]: String(exact) });
    },
  }),
  defineRoute({
    method: 'get',
    path: '/calls/:call_id',
    operationId: 'getCall',
    tag: 'calls',
    summary: 'Get a call',
    description: '`messages`, `latency` and the summary are populated after the call ends (wait 2-3 s after a stop).',
    params: CallParams,
    responses: { 200: { description: 'The call', schema: Call } },
    handler: async ({ params, auth, db, services }) => {
      const row = await getCall(db, auth.orgId, params.call_id);
      if (!row) throw notFound('Call');
      return await callView(services, row, { db });
    },
  }),
  defineRoute({
    method: 'get',
    path: '/calls/:call_id/deliveries',
    operationId: 'listCallDeliveries',
    tag: 'calls',
    summary: "List a call's webhook deliveries",
    description:
      "Every delivery attempt of the call's events, most recent first: to the call's own `webhook_url` (`webhook_id` " +
      'null) and to the account\'s webhooks. Same records, filters and envelope as a webhook\'s deliveries.',
    params: CallParams,
    query: WebhookDeliveryQuery,
    responses: { 200: { description: 'Delivery attempts', schema: WebhookDeliveryList } },
    handler: async ({ params, query, auth, db }) => {
      if (!(await getCall(db, auth.orgId, params.call_id))) throw notFound('Call');
      const { items, total } = await listCallDeliveries(db, auth.orgId, params.call_id, query);
      return { items, total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/calls/:call_id',
    operationId: 'updateCall',
    tag: 'calls',
    summary: "Set a call's outcome",
    description: 'The outcome is stored exactly as given and is never overwritten by the post-call analysis.',
    params: CallParams,
    body: UpdateCall,
    responses: { 200: { description: 'The call', schema: Call } },
    handler: async ({ params, body, auth, db, audit, services }) => {
      const row = await setManualOutcome(db, auth.orgId, params.call_id, body.outcome);
      if (!row) throw notFound('Call');
      await audit({ action: 'call.update', resourceType: 'call', resourceId: row.id, details: { outcome: body.outcome } });
      return await callView(services, row, { db });
    },
  }),
  defineRoute({
    method: 'post',
    path: '/calls/:call_id/stop',
    operationId: 'stopCall',
    tag: 'calls',
    summary: 'Stop a call',
    description:
      'Works in every state and ends the call at once: the answer is the ended call, `ended_at` is the moment of ' +
      'the stop, and the duration (so the billed minutes and cost) runs to it. A call in progress ends with ' +
      '`end_reason` `api_stop` and its phone leg or room is hung up; `messages`, `latency` and the summary arrive a few ' +
      'seconds later with the agent\'s report (then `transcript.final` fires). An outbound call that is queued, scheduled ' +
      'or ringing never connected: it ends `failed` with `end_reason` `canceled` and duration 0, sends `call.failed` ' +
      '(reason `canceled`) instead of `call.ended`, has no analysis, and is never dialled afterwards. Stopping a call that has already ' +
      'ended changes nothing and answers 200 with the call as it is.',
    params: CallParams,
    transaction: false,
    responses: { 200: { description: 'The call', schema: Call } },
    handler: async ({ params, auth, services, ctx }) => await callView(services, await stopCall(services, auth, params.call_id, meta(ctx))),
  }),
  defineRoute({
    method: 'get',
    path: '/recordings/:call_id',
    operationId: 'downloadRecording',
    tag: 'calls',
    summary: 'Download a call recording (signed URL)',
    description:
      'The URL comes from `recording_url` on the call or in a `call.recording.available` event; it is valid for 4 hours. No Authorization header.\n\n' +
      'Byte ranges (`Accept-Ranges: bytes`), so audio players can seek: one range per request (`Range: bytes=first-last`, ' +
      '`bytes=first-` or `bytes=-suffix_length`) is a **206** with `Content-Range`; a range starting past the end (or `bytes=-0`) ' +
      'is a **416** with `Content-Range: bytes */size`. Several ranges in one header, another unit, a malformed header or an ' +
      '`If-Range` (the answer carries no validators) get the whole file, 200. The signature is checked first either way.',
    auth: 'none',
    params: CallParams,
    query: Type.Object({ expires: Type.Integer(), signature: Type.String({ minLength: 1, maxLength: 200 }) }),
    responses: {
      200: { description: 'The audio (audio/wav or audio/ogg)', contentType: 'audio/wav', schema: Type.String({ format: 'binary' }) },
      206: { description: 'The requested byte range of the audio (`Content-Range: bytes first-last/size`)', contentType: 'audio/wav', schema: Type.String({ format: 'binary' }) },
      302: { description: 'The recording is kept in S3: a presigned URL to it' },
      403: { description: 'Expired or invalid signature' },
      416: { description: 'The range starts past the end of the recording (`Content-Range: bytes */size`)' },
    },
    handler: async ({ params, query, services, db, ctx }) => {
      if (!verifySignature(services, 'recording-read', params.call_id, query.expires, query.signature)) {
        throw forbidden('The recording link is invalid or has expired; fetch the call again for a fresh one');
      }
      const row = { recording_key: await getRecordingKey(db, params.call_id) };
      // A recording kept in S3 is served by S3: send the client to a fresh presigned URL.
      if (row?.recording_key?.startsWith('s3://')) {
        const url = await recordingUrl(services, params.call_id, row.recording_key);
        if (url) return reply(302, undefined, { location: url, 'cache-control': 'no-store' });
      }
      const rec = row?.recording_key && !row.recording_key.startsWith('s3://') ? await openRecording(services, row.recording_key) : null;
      if (!rec) throw notFound('Recording');
      const headers = { 'content-type': rec.contentType, 'accept-ranges': 'bytes', 'cache-control': 'private, max-age=300' };
      const range = parseByteRange(ctx.get('range') || undefined, rec.size, ctx.get('if-range') || undefined);
      if (range.kind === 'unsatisfiable') {
        throw new HttpError(416, 'range_not_satisfiable', `The requested range is outside the recording, which has ${rec.size} bytes`, {
          headers: { 'content-range': `bytes */${rec.size}`, 'accept-ranges': 'bytes' },
        });
      }
      if (range.kind === 'partial') {
        const { start, end } = range;
        return reply(206, rec.open({ start, end }), { ...headers, 'content-range': `bytes ${start}-${end}/${rec.size}`, 'content-length': String(end - start + 1) });
      }
      return reply(200, rec.open(), { ...headers, 'content-length': String(rec.size) });
    },
  }),
];
