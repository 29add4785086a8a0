// Publishable keys (`vap_pk_...`): keys meant to sit in web pages, limited to their scopes and origins.
// The checks themselves happen on every request (http/mount.ts, auth/origins.ts); this is their management.
import { defineRoute, reply } from '../../http/route.ts';
import { conflict, notFound, ValidationFailure } from '../../http/errors.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import {
  CreatePublishableKey,
  PublishableKey,
  PublishableKeyList,
  PublishableKeyListQuery,
  PublishableKeyParams,
  UpdatePublishableKey,
} from '../../../../schemas/publishable-keys.ts';
import { generateKey, PUBLISHABLE_PREFIX } from '../../auth/keys.ts';
import { AuthService } from '../../auth/service.ts';
import { normalizeOriginPattern } from '../../auth/origins.ts';
import type { Db } from '../../db/types.ts';
import {
  getPublishableKey,
  insertPublishableKey,
  listPublishableKeys,
  lockPublishableKey,
  revokePublishableKey,
  updatePublishableKey,
} from './queries.ts';
import { checkReferences } from '../../http/references.ts';

/** Canonical origins, or a 422 naming every entry that is not an origin. */
function checkOrigins(origins: string[]): string[] {
  const errors: ValidationErrorItem[] = [];
  const out = origins.map((o, i) => {
    const n = normalizeOriginPattern(o);
    if (n === null) {
      errors.push({
        type: 'origin_format',
        loc: ['body', 'allowed_origins', i],
        msg: 'Input should be an origin: http or https, a host (optionally starting with "*."), an optional port, and no path',
        input: o,
      });
    }
    return n ?? o;
  });
  if (errors.length) throw new ValidationFailure(errors);
  return [...new Set(out)];
}

/** `agent_ids` must name live agents of the organisation (422 `reference_not_found` at each bad index). */
async function checkAgents(db: Db, orgId: string, agentIds: string[] | null | undefined): Promise<void> {
  if (agentIds?.length) await checkReferences(db, orgId, [{ loc: ['body', 'agent_ids'], table: 'agents', what: 'agent', ids: agentIds }]);
}

export const publishableKeyRoutes = [
  defineRoute({
    method: 'post',
    path: '/publishable-keys',
    operationId: 'createPublishableKey',
    tag: 'workspace',
    summary: 'Create a publishable key',
    description:
      'A `vap_pk_...` key for browsers. It works only on routes its scopes allow (`calls:web`: start web calls, limited to ' +
      '`agent_ids` when set; `voices:read`: the voice catalogue), and only from `allowed_origins` (the request\'s `Origin` ' +
      'header). Anyone can copy a key from a page and send any `Origin`, so: name the agents in `agent_ids` (without ' +
      'it every agent of the organisation can be called), and a web call may send `overrides` fields or `variables` ' +
      'only as `allowed_overrides` lists (none by default). Web calls started with publishable keys have their own ' +
      'limits (concurrent calls per organisation, calls per minute per client IP) and never take phone capacity. ' +
      'The whole key is in `key`, here and in later answers (get, list): a publishable key is public by design, ' +
      'so, unlike secret keys, it is kept and shown whole, ready to embed.',
    body: CreatePublishableKey,
    status: 201,
    responses: { 201: { description: 'The new key, with its full value in `key`', schema: PublishableKey } },
    handler: async ({ body, auth, db, audit }) => {
      const allowedOrigins = checkOrigins(body.allowed_origins);
      await checkAgents(db, auth.orgId, body.agent_ids);
      const key = generateKey(PUBLISHABLE_PREFIX);
      const row = await insertPublishableKey(db, auth.orgId, key, {
        name: body.name,
        allowedOrigins,
        scopes: body.scopes,
        agentIds: body.agent_ids ?? null,
        allowedOverrides: body.allowed_overrides ?? [],
      });
      await audit({
        action: 'publishable_key.create',
        resourceType: 'publishable_key',
        resourceId: row.id as string,
        details: {
          name: body.name,
          scopes: body.scopes,
          allowed_origins: allowedOrigins,
          agent_ids: body.agent_ids ?? null,
          allowed_overrides: body.allowed_overrides ?? [],
        },
      });
      return { ...row, key: key.key };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/publishable-keys',
    operationId: 'listPublishableKeys',
    tag: 'workspace',
    summary: 'List publishable keys',
    description: 'Newest first, keys masked. Revoked keys are hidden unless `include_revoked` is true; paused keys are listed.',
    query: PublishableKeyListQuery,
    responses: { 200: { description: 'Publishable keys', schema: PublishableKeyList } },
    handler: async ({ query, auth, db }) => {
      const { items, total } = await listPublishableKeys(db, auth.orgId, { limit: query.limit, offset: query.offset, includeRevoked: query.include_revoked });
      return { items, total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/publishable-keys/:publishable_key_id',
    operationId: 'getPublishableKey',
    tag: 'workspace',
    summary: 'Get a publishable key',
    description: 'Revoked keys stay readable here. The key is shown masked.',
    params: PublishableKeyParams,
    responses: { 200: { description: 'The publishable key', schema: PublishableKey } },
    handler: async ({ params, auth, db }) => {
      const row = await getPublishableKey(db, auth.orgId, params.publishable_key_id);
      if (!row) throw notFound('Publishable key');
      return row;
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/publishable-keys/:publishable_key_id',
    operationId: 'updatePublishableKey',
    tag: 'workspace',
    summary: 'Update a publishable key',
    description:
      'Changes the name, origins, scopes or agents (lists are replaced whole), or pauses (`is_active: false`) and resumes ' +
      'the key. Changes apply to the next request in every process. A revoked key cannot be changed (409).',
    params: PublishableKeyParams,
    body: UpdatePublishableKey,
    responses: { 200: { description: 'The updated key, masked', schema: PublishableKey } },
    handler: async ({ params, body, auth, db, audit, services, onCommit }) => {
      const id = params.publishable_key_id;
      const allowedOrigins = body.allowed_origins ? checkOrigins(body.allowed_origins) : undefined;
      const state = await lockPublishableKey(db, auth.orgId, id);
      if (!state) throw notFound('Publishable key');
      if (state.revoked) throw conflict('This publishable key is revoked; create a new one', { publishable_key_id: id });
      await checkAgents(db, auth.orgId, body.agent_ids);
      const row = await updatePublishableKey(db, auth.orgId, id, {
        name: body.name,
        allowedOrigins,
        scopes: body.scopes,
        agentIds: body.agent_ids,
        allowedOverrides: body.allowed_overrides,
        isActive: body.is_active,
      });
      await AuthService.notifyChanged(db, id);
      await audit({
        action: 'publishable_key.update',
        resourceType: 'publishable_key',
        resourceId: id,
        details: { ...body, ...(allowedOrigins ? { allowed_origins: allowedOrigins } : {}) },
      });
      onCommit(() => services.auth.forget(id));
      return row;
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/publishable-keys/:publishable_key_id',
    operationId: 'revokePublishableKey',
    tag: 'workspace',
    summary: 'Revoke a publishable key',
    description:
      'The key stops working at once, in every process. The record is kept (`is_active` false, `revoked_at` set) and ' +
      'listed with `include_revoked=true`. Revoking an already revoked key is a 404.',
    params: PublishableKeyParams,
    status: 204,
    responses: { 204: { description: 'Revoked' } },
    handler: async ({ params, auth, db, audit, services, onCommit }) => {
      const id = params.publishable_key_id;
      if (!(await revokePublishableKey(db, auth.orgId, id))) throw notFound('Publishable key');
      await AuthService.notifyChanged(db, id);
      await audit({ action: 'publishable_key.revoke', resourceType: 'publishable_key', resourceId: id });
      onCommit(() => services.auth.forget(id));
      return reply(204);
    },
  }),
];
