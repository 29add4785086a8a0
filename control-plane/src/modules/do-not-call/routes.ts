// /v1/do-not-call: the organisation's list of numbers never to call. Campaigns check it before every attempt,
// and POST /v1/calls refuses a listed number; the agent's built-in do_not_call tool adds the callee.
import { defineRoute, reply } from '../../http/route.ts';
import { conflict, notFound } from '../../http/errors.ts';
import { CreateDoNotCall, DoNotCallEntry, DoNotCallList, DoNotCallParams, DoNotCallQuery } from '../../../../schemas/do-not-call.ts';
import { CallParams } from '../../../../schemas/calls.ts';
import { DoNotCallRequest, DoNotCallResult } from '../../../../schemas/internal.ts';
import { getCallById, retentionOfCall } from '../calls/queries.ts';
import { retainFreeText } from '../../../../shared/privacy.ts';
import { writeAudit } from '../audit-events/queries.ts';
import { addNumber, deleteEntry, listNumbers, unverifiedToday, type DncRow } from './queries.ts';

export const dncView = (r: DncRow) => ({
  id: r.id,
  phone_number: r.phone_number,
  reason: r.reason,
  source: r.source,
  call_id: r.call_id,
  created_at: r.created_at.toISOString(),
});

export const doNotCallRoutes = [
  defineRoute({
    method: 'post',
    path: '/do-not-call',
    operationId: 'addDoNotCall',
    tag: 'calls',
    summary: 'Add a number to the do-not-call list',
    description:
      'From now on no campaign attempt dials the number (a campaign contact with it is `skipped`, `do_not_call`) and ' +
      'POST /v1/calls refuses it (422 `do_not_call`). A number already listed answers 200 with its entry as it is.',
    body: CreateDoNotCall,
    status: 201,
    responses: { 201: { description: 'Listed', schema: DoNotCallEntry }, 200: { description: 'Already listed', schema: DoNotCallEntry } },
    handler: async ({ body, auth, db, audit }) => {
      const { row, created } = await addNumber(db, { orgId: auth.orgId, phoneNumber: body.phone_number, reason: body.reason ?? null, source: 'api', callId: null });
      if (!created) return reply(200, dncView(row));
      await audit({ action: 'do_not_call.add', resourceType: 'do_not_call', resourceId: row.id, details: { phone_number: row.phone_number } });
      return dncView(row);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/do-not-call',
    operationId: 'listDoNotCall',
    tag: 'calls',
    summary: 'List the do-not-call list',
    description: 'Newest first; `phone_number` looks one number up.',
    query: DoNotCallQuery,
    responses: { 200: { description: 'Entries', schema: DoNotCallList } },
    handler: async ({ query, auth, db }) => {
      const { rows, total } = await listNumbers(db, auth.orgId, { phoneNumber: query.phone_number, limit: query.limit, offset: query.offset });
      return { items: rows.map(dncView), total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/do-not-call/:entry_id',
    operationId: 'deleteDoNotCall',
    tag: 'calls',
    summary: 'Remove a number from the do-not-call list',
    description: 'The number may be called again; contacts already skipped for it stay skipped.',
    params: DoNotCallParams,
    status: 204,
    responses: { 204: { description: 'Removed' } },
    handler: async ({ params, auth, db, audit }) => {
      const row = await deleteEntry(db, auth.orgId, params.entry_id);
      if (!row) throw notFound('Do-not-call entry');
      await audit({ action: 'do_not_call.delete', resourceType: 'do_not_call', resourceId: row.id, details: { phone_number: row.phone_number } });
      return reply(204);
    },
  }),
];

/**
 * The agent's built-in do_not_call tool (media worker): lists the other party of the call, the callee of an
 * outbound call or the caller of an inbound one. A web call has no number (409).
 */
export const internalDoNotCallRoutes = [
  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/:call_id/do-not-call',
    root: true,
    internal: true,
    auth: 'call',
    operationId: 'internalDoNotCall',
    tag: 'calls',
    summary: 'The callee asked not to be called again',
    params: CallParams,
    body: DoNotCallRequest,
    responses: { 200: { description: 'Listed', schema: DoNotCallResult } },
    handler: async ({ params, body, db, services }) => {
      const call = await getCallById(db, params.call_id);
      if (!call) throw notFound('Call');
      const number = call.type === 'inbound' ? call.from_number : call.type === 'outbound' ? call.to_number : null;
      if (!number || !/^\+[1-9]\d{1,14}$/.test(number)) throw conflict('This call has no phone number to list');
      // The reason is the model's free text: the call's data retention applies to it (retainFreeText below).
      // An inbound caller's number is its caller ID, which anyone can set: such entries are told apart and
      // bounded per day, so spoofed calls cannot fill the list with numbers the org means to call (issue 50).
      const inbound = call.type === 'inbound';
      if (inbound && (await unverifiedToday(db, call.org_id)) >= services.config.DNC_UNVERIFIED_PER_DAY) {
        // A 409, not a 429: the worker does not retry it (the limit holds until midnight UTC).
        throw conflict("Too many do-not-call requests from inbound callers today; the organisation can add numbers with POST /v1/do-not-call", {
          reason: 'dnc_unverified_per_day',
          limit_value: services.config.DNC_UNVERIFIED_PER_DAY,
        });
      }
      const source = inbound ? 'agent_unverified' : 'agent';
      const { row, created } = await addNumber(db, { orgId: call.org_id, phoneNumber: number, reason: retainFreeText(await retentionOfCall(db, call.id), body.reason), source, callId: call.id });
      if (created) {
        await writeAudit(db, {
          orgId: call.org_id,
          actorType: 'worker',
          actorId: null,
          action: 'do_not_call.add',
          resourceType: 'do_not_call',
          resourceId: row.id,
          details: { phone_number: number, call_id: call.id, source },
        });
      }
      return { phone_number: number, already_listed: !created };
    },
  }),
];
