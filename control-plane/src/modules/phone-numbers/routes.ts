// The phone-numbers resource (tag `phone-numbers`) and the worker's inbound-call route.
import { defineRoute, reply, type RouteDef } from '../../http/route.ts';
import { notFound } from '../../http/errors.ts';
import { checkReferences } from '../../http/references.ts';
import {
  InboundRoutingInput,
  PhoneNumber,
  PhoneNumberList,
  PhoneNumberListQuery,
  PhoneNumberParams,
  PhoneNumberSearchQuery,
  PhoneNumberSearchResult,
  PurchasePhoneNumber,
  UpdatePhoneNumber,
} from '../../../../schemas/phone-numbers.ts';
import { InboundOpenRequest, InboundOpenResult, InboundRoomParams, InboundRoomStatus } from '../../../../schemas/internal.ts';
import { CarrierError, carrierFor } from './carriers/index.ts';
import { getNumber, listNumbers, updateNumber } from './queries.ts';
import {
  carrierHttpError,
  normaliseRouting,
  numberPin,
  numberTarget,
  phoneNumberView,
  purchaseNumber,
  releaseNumber,
  routingProblems,
  routingReferences,
  targetReferences,
} from './service.ts';
import { targetProblems } from '../squads/target.ts';
import { inboundRoomAnsweredElsewhere, openInboundCall } from './inbound.ts';
import { configOnce } from '../calls/config-once.ts';
import { ValidationFailure } from '../../http/errors.ts';

const meta = (ctx: { state: { requestId: string }; ip: string }) => ({ requestId: ctx.state.requestId, ip: ctx.ip || null });

const searchRoute = (root: boolean): RouteDef =>
  defineRoute({
    method: 'get',
    path: root ? '/phone-numbers/search' : '/phone-numbers/search',
    root,
    operationId: root ? 'searchPhoneNumbers' : 'searchPhoneNumbersV1',
    tag: 'phone-numbers',
    summary: root ? 'Search available phone numbers' : 'Search available phone numbers (/v1 alias)',
    description:
      'Numbers the platform can buy for you now. `country` defaults to `US`; `area_code` applies to US and CA only; ' +
      '`contains` matches digits, or letters by their keypad digit. Results are not reserved: buy one with ' +
      '`POST /v1/phone-numbers`. Answers the list envelope; `offset` pages through the first 100 matches.',
    query: PhoneNumberSearchQuery,
    transaction: false,
    responses: { 200: { description: 'Available numbers', schema: PhoneNumberSearchResult } },
    handler: async ({ query, services }) => {
      const country = (query.country ?? 'US').toUpperCase();
      if (query.area_code && country !== 'US' && country !== 'CA') {
        throw new ValidationFailure([
          { loc: ['query', 'area_code'], msg: 'area_code applies to US and CA numbers only', type: 'value_error', input: query.area_code },
        ]);
      }
      try {
        // Carriers have no offset of their own: ask for the window's end, answer its last `limit`.
        const found = await carrierFor(services).search({
          country,
          area_code: query.area_code ?? null,
          contains: query.contains ?? null,
          limit: query.offset + query.limit,
        });
        return { items: found.slice(query.offset, query.offset + query.limit), total: found.length, limit: query.limit, offset: query.offset };
      } catch (err) {
        if (err instanceof CarrierError) throw carrierHttpError(err);
        throw err;
      }
    },
  });

export const phoneNumberRoutes = [
  searchRoute(true),
  searchRoute(false),
  defineRoute({
    method: 'post',
    path: '/phone-numbers',
    operationId: 'purchasePhoneNumber',
    tag: 'phone-numbers',
    summary: 'Buy a phone number',
    description:
      'Buys `phone_number` (from the search), or the first available match of `country`, `area_code` and `contains`, ' +
      "for `agent_id`, or for `squad_id` (a squad: its entry agent answers, and the number's `agent_id` is that agent; exactly one of the two), " +
      'and wires it: the platform points the number at its SIP ingress, creates its inbound trunk, its dispatch rule ' +
      'and its outbound trunk. All of it happens, or none of it: on any failure the purchase is undone. A number that ' +
      'is taken is a 409; a carrier or telephony outage is a 503 with `Retry-After` (nothing was bought).',
    body: PurchasePhoneNumber,
    transaction: false,
    responses: { 200: { description: 'The number, wired and active', schema: PhoneNumber } },
    handler: async ({ body, auth, services, ctx }) => phoneNumberView(await purchaseNumber(services, auth, body, meta(ctx))),
  }),
  defineRoute({
    method: 'get',
    path: '/phone-numbers',
    operationId: 'listPhoneNumbers',
    tag: 'phone-numbers',
    summary: 'List phone numbers',
    description: 'Newest first. Filter with `status`, `agent_id` or `squad_id`. Released numbers are not listed.',
    query: PhoneNumberListQuery,
    responses: { 200: { description: 'Phone numbers of the organisation', schema: PhoneNumberList } },
    handler: async ({ query, auth, db }) => {
      const { items, total } = await listNumbers(db, auth.orgId, query);
      return { items: items.map(phoneNumberView), total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/phone-numbers/:phone_number_id',
    operationId: 'getPhoneNumber',
    tag: 'phone-numbers',
    summary: 'Get a phone number',
    params: PhoneNumberParams,
    responses: { 200: { description: 'The phone number', schema: PhoneNumber } },
    handler: async ({ params, auth, db }) => {
      const row = await getNumber(db, auth.orgId, params.phone_number_id);
      if (!row) throw notFound('Phone number');
      return phoneNumberView(row);
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/phone-numbers/:phone_number_id',
    operationId: 'updatePhoneNumber',
    tag: 'phone-numbers',
    summary: 'Update a phone number',
    description:
      '`status` `inactive` keeps the number (and its wiring) but refuses its calls: the caller gets a SIP 486 and no ' +
      'call is created. `active` takes calls again. `agent_id` or `squad_id` (not both) routes the number to an agent or ' +
      "to a squad; a squad's number shows the squad's entry agent as its `agent_id`.",
    params: PhoneNumberParams,
    body: UpdatePhoneNumber,
    responses: { 200: { description: 'The updated phone number', schema: PhoneNumber } },
    handler: async ({ params, body, auth, db, audit }) => {
      const cur = await getNumber(db, auth.orgId, params.phone_number_id, { forUpdate: true });
      if (!cur) throw notFound('Phone number');
      const problems = targetProblems(body, ['body'], false);
      if (problems.length) throw new ValidationFailure(problems);
      await checkReferences(db, auth.orgId, targetReferences(body, ['body']));
      // A new target replaces the number's agent and squad together (a squad's number keeps its entry agent).
      const target = body.agent_id || body.squad_id ? await numberTarget(db, auth.orgId, body) : {};
      const pin = await numberPin(db, auth.orgId, cur, target, body.agent_version);
      const row = await updateNumber(db, cur.id, {
        ...(body.friendly_name !== undefined ? { friendly_name: body.friendly_name } : {}),
        ...(body.status ? { status: body.status } : {}),
        ...target,
        ...pin,
      });
      await audit({
        action: 'phone_number.update',
        resourceType: 'phone_number',
        resourceId: cur.id,
        details: { fields: Object.keys(body), ...(body.status ? { status: body.status } : {}), ...(pin.agent_version !== undefined ? { agent_version: pin.agent_version } : {}) },
      });
      return phoneNumberView(row);
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/phone-numbers/:phone_number_id/inbound-routing',
    operationId: 'updatePhoneNumberInboundRouting',
    tag: 'phone-numbers',
    summary: "Set a number's inbound routing",
    description:
      'Fields given replace the stored ones; `null` clears one. Calls go to `agent_id` or `squad_id` (one of them; ' +
      "setting one clears the other; a squad's entry agent answers), else to the number's own agent or squad; " +
      '`fallback` (`agent_id` or `squad_id`) answers when that target has been deleted or the organisation is at its daily ' +
      'call cap or concurrent-call limit (fallback calls are the overflow line and are admitted past those limits), and ' +
      'when no agent takes the call: if no media worker accepts it within INBOUND_ANSWER_WAIT_SECONDS (none running, or ' +
      'all full), the control plane opens the call for the fallback itself (metadata `routed_via: "fallback"`, ' +
      '`unanswered_by` naming the agents that did not take it). Without a live target and fallback, the workspace\'s ' +
      '`default_agent_id` answers. A call nobody takes plays `voicemail_message` (when set) and fails with `call.failed` ' +
      'reason `agent_unavailable`. `voicemail_message` is also left when voicemail is detected.',
    params: PhoneNumberParams,
    body: InboundRoutingInput,
    responses: { 200: { description: 'The phone number', schema: PhoneNumber } },
    handler: async ({ params, body, auth, db, audit }) => {
      const cur = await getNumber(db, auth.orgId, params.phone_number_id, { forUpdate: true });
      if (!cur) throw notFound('Phone number');
      const problems = routingProblems(body, ['body']);
      if (problems.length) throw new ValidationFailure(problems);
      await checkReferences(db, auth.orgId, routingReferences(body, ['body']));
      const row = await updateNumber(db, cur.id, { inbound_routing: normaliseRouting(body, cur.inbound_routing) });
      await audit({ action: 'phone_number.update_inbound_routing', resourceType: 'phone_number', resourceId: cur.id, details: { fields: Object.keys(body) } });
      return phoneNumberView(row);
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/phone-numbers/:phone_number_id',
    operationId: 'releasePhoneNumber',
    tag: 'phone-numbers',
    summary: 'Release a phone number',
    description:
      'The number stops taking calls and leaves the list at once; its dispatch rule and trunks are removed and it is ' +
      'released at the carrier (retried in the background if the carrier is unavailable). Its calls stay readable.',
    params: PhoneNumberParams,
    status: 204,
    responses: { 204: { description: 'Released' } },
    handler: async ({ params, auth, db, audit, onCommit, services }) => {
      const cur = await getNumber(db, auth.orgId, params.phone_number_id, { forUpdate: true });
      if (!cur) throw notFound('Phone number');
      await db`update phone_numbers set wiring_state = 'releasing', status = 'inactive', deleted_at = now(), updated_at = now() where id = ${cur.id}`;
      await audit({ action: 'phone_number.release', resourceType: 'phone_number', resourceId: cur.id, details: { phone_number: cur.phone_number } });
      onCommit(() => releaseNumber(services, cur));
      return reply(204);
    },
  }),
];

export const internalInboundRoutes = [
  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/inbound',
    root: true,
    internal: true,
    auth: 'worker',
    operationId: 'internalInboundCall',
    tag: 'calls',
    summary: 'Open an inbound call from the dialled number',
    description:
      "200 `{call_id, capability, config}` (the call's capability for the rest of the internal API, and its config as GET .../config gives it); 404 `{reason: number_not_found | number_inactive | route_mismatch}` (no call; route_mismatch: the " +
      "trunk, dispatch rule or room is not the number's own); 409 `{reason, call_id}` when no " +
      'agent can take it (a failed call and `call.failed`), or `already_opened`: the room\'s call was opened before (the config and ' +
      'capability are handed out once per room: a replay gets neither) or `answered_elsewhere`. On 404 or 409 (but those two) the worker deletes the room, which makes ' +
      'the SIP bridge answer the INVITE with 486.',
    body: InboundOpenRequest,
    transaction: false,
    responses: { 200: { description: 'The call', schema: InboundOpenResult } },
    // The platform worker token opens the call; everything after needs the capability returned with it.
    handler: async ({ body, services }) => {
      const opened = await openInboundCall(services, body);
      // The config comes with the open (the caller is on the line, waiting for the greeting), and only with the open
      // that made the call: a replay of the request (its inputs are in logs) is refused above (already_opened).
      const { capability, ...config } = await configOnce(services, services.sql, opened.call_id);
      return { ...opened, capability, config: { ...config, capability } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/internal/v1/calls/inbound/rooms/:room_name',
    root: true,
    internal: true,
    auth: 'worker',
    operationId: 'internalInboundRoomStatus',
    tag: 'calls',
    summary: "Whether a number's room still needs the job its dispatch rule offers",
    description:
      "Asked by a worker before it accepts a job for a number's room: `answered_elsewhere` is true when the control plane already gave the " +
      'call to a standby agent or to the fallback agent, and the worker then rejects the job (no process is spent on it).',
    params: InboundRoomParams,
    transaction: false,
    responses: { 200: { description: 'The room', schema: InboundRoomStatus } },
    handler: async ({ params, services }) => ({ answered_elsewhere: await inboundRoomAnsweredElsewhere(services, params.room_name) }),
  }),
];
