import { defineRoute, reply } from '../../http/route.ts';
import { invalidField, notFound } from '../../http/errors.ts';
import { ApiKeyList, ApiKeyListQuery, ApiKeyParams, CreateApiKey, CreatedApiKey } from '../../../../schemas/api-keys.ts';
import { generateKey, SECRET_PREFIX } from '../../auth/keys.ts';
import { AuthService } from '../../auth/service.ts';
import { insertApiKey, listApiKeys, revokeApiKey } from './queries.ts';

export const apiKeyRoutes = [
  defineRoute({
    method: 'post',
    path: '/api-keys',
    operationId: 'createApiKey',
    tag: 'workspace',
    summary: 'Create an API key',
    description: 'Returns the full secret key once, in `key`. Only a SHA-256 of it is stored.',
    body: CreateApiKey,
    status: 201,
    responses: { 201: { description: 'The new key, with its secret', schema: CreatedApiKey } },
    handler: async ({ body, auth, db, audit }) => {
      if (body.expires_at && Date.parse(body.expires_at) <= Date.now()) {
        throw invalidField(['body', 'expires_at'], 'Input should be in the future', 'datetime_future', body.expires_at);
      }
      const key = generateKey(SECRET_PREFIX);
      const row = await insertApiKey(db, auth.orgId, body.name, key, body.expires_at ?? null, auth.actorId);
      await audit({ action: 'api_key.create', resourceType: 'api_key', resourceId: row.id as string, details: { name: body.name } });
      return { ...row, key: key.key };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api-keys',
    operationId: 'listApiKeys',
    tag: 'workspace',
    summary: 'List API keys',
    description: 'Keys are shown masked. Revoked keys are hidden unless `include_revoked` is true.',
    query: ApiKeyListQuery,
    responses: { 200: { description: 'API keys, newest first', schema: ApiKeyList } },
    handler: async ({ query, auth, db }) => {
      const { items, total } = await listApiKeys(db, auth.orgId, { limit: query.limit, offset: query.offset, includeRevoked: query.include_revoked });
      return { items, total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/api-keys/:api_key_id',
    operationId: 'revokeApiKey',
    tag: 'workspace',
    summary: 'Revoke an API key',
    description: 'The key stops working at once, in every process of the platform.',
    params: ApiKeyParams,
    status: 204,
    responses: { 204: { description: 'Revoked' } },
    handler: async ({ params, auth, db, audit, services, onCommit }) => {
      if (!(await revokeApiKey(db, auth.orgId, params.api_key_id))) throw notFound('API key');
      await AuthService.notifyChanged(db, params.api_key_id);
      await audit({ action: 'api_key.revoke', resourceType: 'api_key', resourceId: params.api_key_id });
      onCommit(() => services.auth.forget(params.api_key_id));
      return reply(204);
    },
  }),
];
