// A call whose agent the worker could not build (no key for a provider, a model host the egress rule refuses, no
// local model, a voice the worker lacks): the worker reports it at once (`POST /internal/v1/calls/{id}/failed`), and
// the call fails with end_reason `configuration_error` and its `error`, instead of waiting for the dispatch timeout.
// The same cause then reaches every place a person looks (docs/decisions/037-day-one.md, "A call that cannot start"):
//  - the call record (`error`) and `call.failed` (`reason: configuration_error`, `error`), in one transaction;
//  - a web call's page: the room's metadata gets `error`, which the browser SDK turns into its `error` event; the room
//    is left to close by itself (LiveKit's departure timeout), so a caller who joins a moment later still reads it;
//  - a phone call's caller or callee: the room is deleted, which hangs up the leg (or cancels the INVITE).
import { defineRoute } from '../../http/route.ts';
import { conflict, notFound } from '../../http/errors.ts';
import { CallParams } from '../../../../schemas/calls.ts';
import { FailedReport, ReportAck } from '../../../../schemas/internal.ts';
import type { Services } from '../../services.ts';
import { getCallById, noteReport, recordReport, type CallRow } from './queries.ts';
import { failCall, isFinal } from './lifecycle.ts';

/** What a web call's room metadata says of a call that failed (the SDK reads `error`; web/src/sdk/protocol.ts). */
export function failedRoomMetadata(call: Pick<CallRow, 'id'>, error: { code: string; message: string }): string {
  return JSON.stringify({ call_id: call.id, error: { code: 'configuration_error', reason: error.code, message: error.message } });
}

/** After the commit: tell the web page, or hang up the phone leg. Best effort: the call's record is already right. */
async function closeFailedRoom(services: Services, call: CallRow, error: { code: string; message: string }): Promise<void> {
  if (!call.room_name) return;
  try {
    if (call.type === 'web') await services.livekit.rooms.updateRoomMetadata(call.room_name, failedRoomMetadata(call, error));
    else await services.livekit.rooms.deleteRoom(call.room_name);
  } catch (err) {
    services.log.warn({ err, call_id: call.id, room: call.room_name }, 'room of a call that could not start not updated');
  }
}

export const setupFailureRoutes = [
  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/:call_id/failed',
    root: true,
    internal: true,
    auth: 'call',
    operationId: 'internalCallFailed',
    tag: 'calls',
    summary: "The worker could not build the call's agent: the call fails now, with its cause",
    params: CallParams,
    body: FailedReport,
    responses: { 200: { description: 'Acknowledged', schema: ReportAck } },
    handler: async ({ params, body, db, services, onCommit }) => {
      const call = await getCallById(db, params.call_id, { lock: true });
      if (!call) throw notFound('Call');
      if (!(await recordReport(db, call.id, body.seq, 'failed'))) return { ok: true, duplicate: true };
      await noteReport(db, call.id, body.seq);
      // Stopped, or failed otherwise, meanwhile: the record stands.
      if (isFinal(call.status)) return { ok: true, duplicate: false };
      // A call that connected ends with a report of its conversation, never as `failed` (docs/decisions.md).
      if (call.status === 'in_progress') throw conflict('The call has started: report its end instead');
      const error = { code: body.error.code, message: body.error.message };
      const row = await failCall(db, call, 'configuration_error', body.end_reason, error);
      services.log.warn({ call_id: call.id, org_id: call.org_id, code: error.code, field: body.error.field }, 'call could not start: the agent is misconfigured');
      if (row) onCommit(() => closeFailedRoom(services, row, error));
      return { ok: true, duplicate: false };
    },
  }),
];
