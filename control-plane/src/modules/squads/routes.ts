import { defineRoute, reply } from '../../http/route.ts';
import { conflict, notFound } from '../../http/errors.ts';
import { followSquadEntry } from '../phone-numbers/queries.ts';
import { CreateSquad, Squad, SquadList, SquadListQuery, SquadParams, UpdateSquad } from '../../../../schemas/squads.ts';
import { getSquad, insertSquad, listSquads, numbersRoutingToSquad, softDeleteSquad, updateSquad } from './queries.ts';
import { checkSquad, SQUAD_DEFAULTS, storedHandoffs } from './service.ts';

export const squadRoutes = [
  defineRoute({
    method: 'post',
    path: '/squads',
    operationId: 'createSquad',
    tag: 'squads',
    summary: 'Create a squad',
    description:
      'Agents that hand a call to one another within the call. Each hand-off gives its `from` agent a ' +
      "`handoff_to_<name>` tool (the `to` agent's name, lowercased, other characters as `_`) whose description is " +
      "the hand-off's. Start a call on the squad with `squad_id` instead of `agent_id`: `entry_agent_id` answers. " +
      '422 for a member that is not an agent of your organisation, an entry agent or hand-off outside `agent_ids`, ' +
      'a hand-off of an agent to itself, or a (from, to) pair listed twice. Cycles are allowed; `max_handoffs` bounds them per call.',
    body: CreateSquad,
    status: 201,
    responses: { 201: { description: 'The squad', schema: Squad } },
    handler: async ({ body, auth, db, audit }) => {
      const handoffs = storedHandoffs(body.handoffs);
      await checkSquad(db, auth.orgId, { agent_ids: body.agent_ids, entry_agent_id: body.entry_agent_id, handoffs });
      const row = await insertSquad(db, auth.orgId, {
        name: body.name,
        agent_ids: body.agent_ids,
        entry_agent_id: body.entry_agent_id,
        handoffs,
        max_handoffs: body.max_handoffs ?? SQUAD_DEFAULTS.max_handoffs,
        metadata: body.metadata ?? {},
      });
      await audit({
        action: 'squad.create',
        resourceType: 'squad',
        resourceId: row.id,
        details: { name: row.name, agents: row.agent_ids.length, handoffs: row.handoffs.length },
      });
      return row;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/squads',
    operationId: 'listSquads',
    tag: 'squads',
    summary: 'List squads',
    description: 'Newest first.',
    query: SquadListQuery,
    responses: { 200: { description: 'Squads of the organisation', schema: SquadList } },
    handler: async ({ query, auth, db }) => {
      const { items, total } = await listSquads(db, auth.orgId, query);
      return { items, total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/squads/:squad_id',
    operationId: 'getSquad',
    tag: 'squads',
    summary: 'Get a squad',
    params: SquadParams,
    responses: { 200: { description: 'The squad', schema: Squad } },
    handler: async ({ params, auth, db }) => {
      const row = await getSquad(db, auth.orgId, params.squad_id);
      if (!row) throw notFound('Squad');
      return row;
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/squads/:squad_id',
    operationId: 'updateSquad',
    tag: 'squads',
    summary: 'Update a squad',
    description:
      'Partial update: absent fields keep their value, lists are replaced whole, and the result is checked as a ' +
      'whole (removing a member that a hand-off names is a 422 at that hand-off). Calls in progress keep the squad they started with. ' +
      "Phone numbers routed to the squad show its new entry agent as their `agent_id`.",
    params: SquadParams,
    body: UpdateSquad,
    responses: { 200: { description: 'The updated squad', schema: Squad } },
    handler: async ({ params, body, auth, db, audit }) => {
      const cur = await getSquad(db, auth.orgId, params.squad_id, { forUpdate: true });
      if (!cur) throw notFound('Squad');
      const next = {
        name: body.name ?? cur.name,
        agent_ids: body.agent_ids ?? cur.agent_ids,
        entry_agent_id: body.entry_agent_id ?? cur.entry_agent_id,
        handoffs: body.handoffs ? storedHandoffs(body.handoffs) : cur.handoffs,
        max_handoffs: body.max_handoffs ?? cur.max_handoffs,
        metadata: body.metadata ?? cur.metadata,
      };
      await checkSquad(db, auth.orgId, next);
      const row = await updateSquad(db, auth.orgId, cur.id, next);
      if (row.entry_agent_id !== cur.entry_agent_id) await followSquadEntry(db, cur.id, row.entry_agent_id);
      await audit({ action: 'squad.update', resourceType: 'squad', resourceId: cur.id, details: { fields: Object.keys(body) } });
      return row;
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/squads/:squad_id',
    operationId: 'deleteSquad',
    tag: 'squads',
    summary: 'Delete a squad',
    description:
      'A deleted squad disappears from the API and starts no more calls; its past calls stay readable. Its agents are not deleted. ' +
      'A squad that phone numbers route to (as their squad, or in their inbound routing or its fallback) cannot be deleted: ' +
      'the answer is a 409 whose `phone_numbers` field lists them (`[{id, phone_number}]`); route them elsewhere first.',
    params: SquadParams,
    status: 204,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ params, auth, db, audit }) => {
      const cur = await getSquad(db, auth.orgId, params.squad_id, { forUpdate: true });
      if (!cur) throw notFound('Squad');
      const numbers = await numbersRoutingToSquad(db, auth.orgId, cur.id);
      if (numbers.length) {
        throw conflict(
          `Squad receives calls from ${numbers.length} phone number${numbers.length === 1 ? '' : 's'} (${numbers.map((n) => n.phone_number).join(', ')}); route them elsewhere first`,
          { phone_numbers: numbers },
        );
      }
      await softDeleteSquad(db, auth.orgId, cur.id);
      await audit({ action: 'squad.delete', resourceType: 'squad', resourceId: cur.id, details: { name: cur.name } });
      return reply(204);
    },
  }),
];
