// Credentials (integrations): provider keys an organisation brings for its calls. The spec names the
// resource under two prefixes (PATCH /v1/integrations/{id}, DELETE /v1/credentials/{id}), so every
// operation is served under both from this one definition; only the operationIds differ.
import { randomUUID } from 'node:crypto';
import { defineRoute, reply, type RouteDef } from '../../http/route.ts';
import { notFound } from '../../http/errors.ts';
import {
  CreateCredential,
  Credential,
  CredentialDeleteParams,
  CredentialList,
  CredentialListQuery,
  CredentialParams,
  UpdateCredential,
} from '../../../../schemas/credentials.ts';
import { deleteCredential, getCredential, insertCredential, listCredentials, updateCredential } from './queries.ts';
import { keyHints, sealKey } from './service.ts';

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The two names of the resource: `/integrations` is primary, `/credentials` an alias with identical behaviour. */
const PREFIXES = [
  { path: '/integrations', one: 'Integration', many: 'Integrations', alias: false },
  { path: '/credentials', one: 'Credential', many: 'Credentials', alias: true },
] as const;

function credentialRoutesUnder(p: (typeof PREFIXES)[number]): RouteDef[] {
  const aliasNote = '\n\nServed identically under `/v1/integrations` and `/v1/credentials` (the spec names both prefixes).';
  return [
    defineRoute({
      method: 'post',
      path: p.path,
      operationId: `create${p.one}`,
      tag: 'integrations',
      summary: `Create a credential${p.alias ? ' (alias)' : ''}`,
      description:
        'Stores a provider key for this organisation\'s calls ("bring your own key"). The key is encrypted at rest ' +
        '(AES-256-GCM) and never returned: answers carry `masked_key`. Calls use the newest credential of each ' +
        "provider and fall back to the platform's own key for providers without one." +
        aliasNote,
      body: CreateCredential,
      status: 201,
      responses: { 201: { description: 'The stored credential, masked', schema: Credential } },
      handler: async ({ body, auth, db, audit, services }) => {
        const id = randomUUID();
        const row = await insertCredential(db, {
          id,
          orgId: auth.orgId,
          name: body.name,
          provider: body.provider,
          sealed: sealKey(services.secrets, id, body.api_key),
          hints: keyHints(body.api_key),
          metadata: body.metadata ?? {},
        });
        await audit({ action: 'credential.create', resourceType: 'credential', resourceId: id, details: { name: body.name, provider: body.provider } });
        return row;
      },
    }),
    defineRoute({
      method: 'get',
      path: p.path,
      operationId: `list${p.many}`,
      tag: 'integrations',
      summary: `List credentials${p.alias ? ' (alias)' : ''}`,
      description: 'Newest first, keys masked. Filter with `provider`.' + aliasNote,
      query: CredentialListQuery,
      responses: { 200: { description: 'Credentials of the organisation', schema: CredentialList } },
      handler: async ({ query, auth, db }) => {
        const { items, total } = await listCredentials(db, auth.orgId, query);
        return { items, total, limit: query.limit, offset: query.offset };
      },
    }),
    defineRoute({
      method: 'get',
      path: `${p.path}/:credential_id`,
      operationId: `get${p.one}`,
      tag: 'integrations',
      summary: `Get a credential${p.alias ? ' (alias)' : ''}`,
      description: 'The key is shown masked.' + aliasNote,
      params: CredentialParams,
      responses: { 200: { description: 'The credential', schema: Credential } },
      handler: async ({ params, auth, db }) => {
        const row = await getCredential(db, auth.orgId, params.credential_id);
        if (!row) throw notFound('Credential');
        return row;
      },
    }),
    defineRoute({
      method: 'patch',
      path: `${p.path}/:credential_id`,
      operationId: `update${p.one}`,
      tag: 'integrations',
      summary: `Update a credential${p.alias ? ' (alias)' : ''}`,
      description:
        'Renames, replaces the key, or replaces `metadata`. Absent or null fields keep their value; the provider ' +
        'cannot change (create a new credential instead). A new key is sealed under the current master key version.' +
        aliasNote,
      params: CredentialParams,
      body: UpdateCredential,
      responses: { 200: { description: 'The updated credential, masked', schema: Credential } },
      handler: async ({ params, body, auth, db, audit, services }) => {
        const id = params.credential_id;
        const apiKey = body.api_key ?? undefined;
        const row = await updateCredential(db, auth.orgId, id, {
          name: body.name ?? undefined,
          metadata: body.metadata,
          ...(apiKey !== undefined ? { sealed: sealKey(services.secrets, id, apiKey), hints: keyHints(apiKey) } : {}),
        });
        if (!row) throw notFound('Credential');
        const changed = Object.entries(body)
          .filter(([, v]) => v !== null && v !== undefined)
          .map(([k]) => k);
        await audit({ action: 'credential.update', resourceType: 'credential', resourceId: id, details: { fields: changed } });
        return row;
      },
    }),
    defineRoute({
      method: 'delete',
      path: `${p.path}/:credential_id`,
      operationId: `delete${p.one}`,
      tag: 'integrations',
      summary: `Delete a credential${p.alias ? ' (alias)' : ''}`,
      description:
        'Deletes the credential and its encrypted key for good. Calls that start afterwards use another credential of ' +
        "the same provider if there is one, else the platform's key." +
        aliasNote,
      params: CredentialDeleteParams,
      status: 204,
      responses: { 204: { description: 'Deleted' } },
      handler: async ({ params, auth, db, audit }) => {
        const id = params.credential_id;
        const gone = UUID_RE.test(id) ? await deleteCredential(db, auth.orgId, id) : null;
        if (!gone) throw notFound('Credential');
        await audit({ action: 'credential.delete', resourceType: 'credential', resourceId: id, details: gone });
        return reply(204);
      },
    }),
  ];
}

export const credentialRoutes: RouteDef[] = PREFIXES.flatMap(credentialRoutesUnder);
