// The internal API for media workers (docs/internal-api.md), the recording upload and the LiveKit webhook.
// Every report is idempotent: (call_id, seq) is recorded in the same transaction as its effects and events.
import { defineRoute, reply } from '../../http/route.ts';
import { conflict, forbidden, HttpError, notFound, unauthorized } from '../../http/errors.ts';
import { recordingRefusal } from './recording-policy.ts';
import { CallParams } from '../../../../schemas/calls.ts';
import { stableRecordingUrl } from './recording-routes.ts';
import {
  CallConfig,
  EndedReport,
  HandoffReport,
  KnowledgeSearchRequest,
  KnowledgeSearchResult,
  ReportAck,
  StartedReport,
  TranscriptReport,
} from '../../../../schemas/internal.ts';
import {
  getCallById,
  liveCallInRoom,
  noteReport,
  recordReport,
  retentionOfCall,
  setPartialMessages,
  setRecordingConsent,
  setRecordingKey,
  type CallRow,
} from './queries.ts';
import { retainMessages } from '../../../../shared/privacy.ts';
import { completeConversation, emitCallEvent, finishCall, isFinal, markStarted } from './lifecycle.ts';
import { configOnce } from './config-once.ts';
import { CAPABILITY_HEADER } from './capability.ts';
import { recordingStorage } from './storage/index.ts';
import { REAP_QUEUE } from './jobs.ts';
import type { Db } from '../../db/types.ts';
import { readText } from '../../http/body.ts';
import { searchForCall } from '../knowledge-bases/search.ts';
import { knowledgeBasesForCall } from '../agent-versions/call-version.ts';
import { watchInboundRoom } from '../phone-numbers/unanswered.ts';
import { answerFromStandby } from '../phone-numbers/inbound-standby.ts';
import { isSquadMember } from '../squads/call-config.ts';
import { recordHandoff, setAgentLatency } from '../squads/call-records.ts';
import { holdEndedReport, onTransferRoomEvent } from './transfers.ts';
import { removeIfHandedBack } from './supervision-takeover.ts';

const ack = (duplicate: boolean) => ({ ok: true, duplicate });
const MAX_RECORDING_BYTES = 512 * 1024 * 1024;

/** Locks the call row and records the report's seq; null when this seq was applied before. */
async function claim(db: Db, callId: string, seq: number, kind: string): Promise<CallRow | null> {
  const call = await getCallById(db, callId, { lock: true });
  if (!call) throw notFound('Call');
  if (!(await recordReport(db, callId, seq, kind))) return null;
  await noteReport(db, callId, seq);
  return call;
}

export const internalCallRoutes = [
  defineRoute({
    method: 'get',
    path: '/internal/v1/calls/:call_id/config',
    root: true,
    internal: true,
    auth: 'ticket',
    operationId: 'internalCallConfig',
    tag: 'calls',
    summary: 'Session config for a worker',
    description:
      "With the call's dispatch ticket in X-Call-Capability: handed out once per call, to a live call, with the call's capability " +
      'for the rest of the internal API; 409 once handed out (the inbound open and a standby claim hand it out too) or after the call ' +
      "ended. With the call's capability: as often as asked.",
    params: CallParams,
    responses: { 200: { description: 'Resolved config', schema: CallConfig } },
    handler: async ({ params, services, db, ctx }) => configOnce(services, db, params.call_id, ctx.get(CAPABILITY_HEADER)),
  }),
  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/:call_id/started',
    root: true,
    internal: true,
    auth: 'call',
    operationId: 'internalCallStarted',
    tag: 'calls',
    summary: 'The agent session is running',
    params: CallParams,
    body: StartedReport,
    responses: { 200: { description: 'Acknowledged', schema: ReportAck } },
    handler: async ({ params, body, db }) => {
      const call = await claim(db, params.call_id, body.seq, 'started');
      if (!call) return ack(true);
      if (isFinal(call.status)) throw conflict('The call has already ended');
      await markStarted(db, call, body.started_at, body.room_name);
      return ack(false);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/:call_id/transcript',
    root: true,
    internal: true,
    auth: 'call',
    operationId: 'internalCallTranscript',
    tag: 'calls',
    summary: 'The conversation so far',
    params: CallParams,
    body: TranscriptReport,
    responses: { 200: { description: 'Acknowledged', schema: ReportAck } },
    handler: async ({ params, body, db }) => {
      const call = await claim(db, params.call_id, body.seq, 'transcript');
      if (!call) return ack(true);
      // A partial older than one already applied, or one after the end, is superseded: drop it quietly.
      if (isFinal(call.status) || body.seq < call.last_seq) return ack(false);
      // The call's data retention applies here too, whatever the worker did (shared/privacy.ts): a worker that
      // does not know it must not get raw text stored or sent. A partial of a `no_content` call has nothing to say.
      const mode = await retentionOfCall(db, call.id);
      if (mode === 'no_content') return ack(false);
      const messages = retainMessages(mode, body.messages);
      await setPartialMessages(db, call.id, messages);
      await emitCallEvent(db, call, {
        orgId: call.org_id,
        type: 'transcript.partial',
        callId: call.id,
        agentId: call.agent_id,
        webhookUrl: call.webhook_url,
        payload: { call_id: call.id, messages },
      });
      return ack(false);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/:call_id/handoff',
    root: true,
    internal: true,
    auth: 'call',
    operationId: 'internalCallHandoff',
    tag: 'calls',
    summary: "A squad's call passed from one agent to another (call.handoff)",
    params: CallParams,
    body: HandoffReport,
    responses: { 200: { description: 'Acknowledged', schema: ReportAck } },
    handler: async ({ params, body, db }) => {
      const call = await claim(db, params.call_id, body.seq, 'handoff');
      if (!call) return ack(true);
      await recordHandoff(db, call, body);
      return ack(false);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/:call_id/ended',
    root: true,
    internal: true,
    auth: 'call',
    operationId: 'internalCallEnded',
    tag: 'calls',
    summary: 'The call ended: conversation, usage and latency',
    params: CallParams,
    body: EndedReport,
    responses: { 200: { description: 'Acknowledged', schema: ReportAck } },
    handler: async ({ params, body, db, services }) => {
      const call = await claim(db, params.call_id, body.seq, 'ended');
      if (!call) return ack(true);
      // Warm transfer joined: the agent left, the legs talk on; the report waits for the call's end (transfers.ts).
      if (await holdEndedReport(db, call, body)) return ack(false);
      const messages = retainMessages(await retentionOfCall(db, call.id), body.messages);
      if (body.recording_consent) await setRecordingConsent(db, call.id, body.recording_consent);
      if (body.agent_latency && isFinal(call.status)) await setAgentLatency(db, call, body.agent_latency);
      if (isFinal(call.status)) {
        // Stopped: the stop fixed the end; the report only brings the conversation.
        if (call.awaiting_report) await completeConversation(db, services, call.id, { messages, latency: body.latency, usage: body.usage });
        return ack(false);
      }
      if (body.agent_latency) await setAgentLatency(db, call, body.agent_latency);
      await finishCall(db, services, call, {
        endReason: body.end_reason,
        endedAt: body.ended_at,
        durationSeconds: body.duration_seconds,
        messages,
        latency: body.latency,
        usage: body.usage,
      });
      return ack(false);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/:call_id/knowledge/search',
    root: true,
    internal: true,
    auth: 'call',
    operationId: 'internalKnowledgeSearch',
    tag: 'knowledge-bases',
    summary: 'Best knowledge chunks for a query',
    params: CallParams,
    body: KnowledgeSearchRequest,
    transaction: false,
    responses: { 200: { description: 'Chunks, best first', schema: KnowledgeSearchResult } },
    handler: async ({ params, body, db, services }) => {
      const call = await getCallById(db, params.call_id);
      if (!call) throw notFound('Call');
      // A squad's call searches the knowledge of the agent speaking now, if it is one of the squad's.
      const agentId = body.agent_id && (await isSquadMember(db, call, body.agent_id)) ? body.agent_id : call.agent_id;
      return searchForCall(services, db, { ...call, agent_id: agentId }, body, await knowledgeBasesForCall(db, call, agentId));
    },
  }),
  defineRoute({
    method: 'put',
    // Under /v1, which the ingress routes (PUBLIC_BASE_URL), while /internal stays unexposed; the call's
    // capability (Authorization: Bearer) is the only credential, so no worker token crosses the ingress.
    path: '/v1/recordings/:call_id/upload',
    root: true,
    internal: true,
    auth: 'capability',
    operationId: 'internalRecordingUpload',
    tag: 'calls',
    summary: "Upload a call recording (the worker, with the call's capability)",
    params: CallParams,
    transaction: false,
    responses: { 204: { description: 'Stored' } },
    handler: async ({ params, services, ctx }) => {
      const call = await getCallById(services.sql, params.call_id);
      if (!call) throw notFound('Call');
      // One bucket per organisation, shared with its API keys: a leaked capability cannot upload without bound.
      services.limits.org.take(`org:${call.org_id}`);
      // A worker that records anyway (an older version, a stale config, a leaked capability) stores nothing for a
      // call that does not record, has no fitting consent, or already has its recording (recording-policy.ts).
      const refusal = await recordingRefusal(services, services.sql, call);
      if (refusal) throw refusal.status === 409 ? conflict(refusal.message) : forbidden(refusal.message);
      const format = ctx.is('audio/ogg', 'audio/opus') ? 'ogg' : 'wav';
      const storage = recordingStorage(services);
      let key: string;
      try {
        key = await storage.put({ orgId: call.org_id, callId: call.id, format, body: ctx.req, maxBytes: MAX_RECORDING_BYTES });
      } catch (err) {
        if (err instanceof HttpError) throw err;
        // The worker retries: say so rather than answer a bare 500.
        services.log.error({ err, call_id: call.id, storage: storage.kind }, 'recording upload to storage failed');
        throw new HttpError(503, 'service_unavailable', 'Recording storage is unavailable; retry later', { headers: { 'Retry-After': '5' } });
      }
      // The event stores the stable, authenticated URL; each delivery attempt adds `recording_url`, a link signed
      // when it is sent (webhooks/render.ts): retries go on for about 27 hours, a signed link lasts 4.
      const url = stableRecordingUrl(services, call.id);
      await services.sql.begin(async (tx) => {
        if (!(await setRecordingKey(tx, call.id, key))) throw conflict('The call already has its recording; it is never replaced');
        await emitCallEvent(tx, call, {
          orgId: call.org_id,
          type: 'call.recording.available',
          callId: call.id,
          agentId: call.agent_id,
          webhookUrl: call.webhook_url,
          payload: { call_id: call.id, recording_api_url: url },
        });
      });
      return reply(204);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/internal/livekit/webhook',
    root: true,
    internal: true,
    auth: 'none',
    operationId: 'livekitWebhook',
    tag: 'calls',
    summary: 'LiveKit server webhooks (signed by the LiveKit API secret)',
    transaction: false,
    responses: { 200: { description: 'Accepted' } },
    handler: async ({ services, ctx }) => {
      const raw = await readText(ctx, '1mb');
      let event;
      try {
        event = await services.livekit.webhooks.receive(raw, ctx.get('authorization'));
      } catch {
        throw unauthorized('Invalid LiveKit webhook signature');
      }
      const room = event.room?.name;
      // A room that closed, or an agent that left, may mean a worker died: check the call shortly, once the
      // worker has had time to report `ended` itself.
      const agentLeft = event.event === 'participant_left' && event.participant?.kind === 4; // ParticipantInfo_Kind.AGENT
      if (room && event.event === 'participant_joined' && (await removeIfHandedBack(services, room, event.participant?.identity))) return { ok: true };
      if (room && event.event === 'participant_joined') {
        // A caller in a number's room: a standby agent takes the call when one is ready (inbound-standby.ts); a
        // failure there leaves the call to the number's rule, as without one.
        await answerFromStandby(services, room, event.participant).catch((err: unknown) =>
          services.log.error({ err, room }, 'standby agent could not take the inbound call'),
        );
        // Either way, check shortly that an agent took it (unanswered.ts).
        await watchInboundRoom(services, room, event.participant);
      }
      // A warm transfer's joined legs: a leg hanging up ends the call; the agent's departure is expected.
      if (room && (event.event === 'participant_left' || event.event === 'room_finished')) {
        if (await onTransferRoomEvent(services, room, event.event, event.participant)) return { ok: true };
      }
      if (room && (event.event === 'room_finished' || agentLeft)) {
        const call = await liveCallInRoom(services.sql, room);
        if (call) await services.boss.send(REAP_QUEUE, { call_id: call.id }, { startAfter: services.config.REAP_DELAY_SECONDS, singletonKey: call.id });
      }
      return { ok: true };
    },
  }),
];
