import { randomUUID } from 'node:crypto';
import { defineRoute, reply } from '../../http/route.ts';
import { propagateChange } from '../agent-versions/service.ts';
import { actorOf } from '../agents/service.ts';
import { conflict, invalidField, notFound, ValidationFailure } from '../../http/errors.ts';
import { CreateTool, Tool, ToolList, ToolListQuery, ToolParams, ToolWithSecret, UpdateTool } from '../../../../schemas/tools.ts';
import { modelsUsingTool, modelsWithToolNameClash } from '../models/queries.ts';
import type { Services } from '../../services.ts';
import { checkUrl, ssrfOptions, SsrfBlockedError } from '../../net/ssrf.ts';

/**
 * A function tool's URL is fetched by the workers through the SSRF guard; refuse at once what can never be
 * called (wrong scheme, http in production, private literal addresses, local names), as webhooks do.
 */
function checkToolUrl(services: Services, url: string | undefined): void {
  if (url === undefined) return;
  try {
    checkUrl(url, ssrfOptions(services.config));
  } catch (err) {
    if (err instanceof SsrfBlockedError) throw invalidField(['body', 'url'], `URL is not allowed: ${err.message}`, 'url_not_allowed', url);
    throw err;
  }
}
import { getTool, insertTool, listTools, rotateSigningSecret, softDeleteTool, updateTool, type ToolWrite } from './queries.ts';
import {
  assertTool,
  warmProblems,
  DEFAULT_PARAMETERS,
  DEFAULT_TIMEOUT_MS,
  defaultDescription,
  defaultName,
  mergeHeaders,
  newSealedSigningSecret,
  openHeaders,
  PREVIOUS_SECRET_GRACE_HOURS,
  sealedHeadersOf,
  sealHeaders,
  toolView,
} from './service.ts';

const SIGNING_NOTE =
  'Requests to a function tool\'s server are signed like webhook deliveries, with the Standard Webhooks headers ' +
  '`webhook-id`, `webhook-timestamp` and `webhook-signature` (`v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed by ' +
  'the tool\'s `signing_secret`); verify them with any Standard Webhooks library.';

export const toolRoutes = [
  defineRoute({
    method: 'post',
    path: '/tools',
    operationId: 'createTool',
    tag: 'tools',
    summary: 'Create a tool',
    description:
      'A `function` tool calls your server with the arguments the LLM chose (JSON body, or query parameters for GET ' +
      'and DELETE) and gives the LLM your answer. Built-in tools are performed by the platform: `end_call` hangs up, ' +
      '`transfer_call` transfers the caller to `destination`, `send_dtmf` sends keypad tones, `do_not_call` adds the ' +
      'callee (the caller, on an inbound call) to the do-not-call list when they ask not to be called again. Header values are ' +
      'encrypted at rest and masked on read.\n\n' +
      SIGNING_NOTE +
      ' The secret is returned once, in `signing_secret`, when a function tool is created.',
    body: CreateTool,
    status: 201,
    responses: { 201: { description: 'The tool; function tools carry their signing secret, shown only now', schema: ToolWithSecret } },
    handler: async ({ body, auth, db, audit, services }) => {
      const { type, ...fields } = body;
      assertTool(type, fields);
      checkToolUrl(services, body.url);
      const id = randomUUID();
      const isFunction = type === 'function';
      const t: ToolWrite = {
        name: defaultName(type, body.name),
        description: defaultDescription(type, body.description),
        parameters: isFunction ? (body.parameters ?? DEFAULT_PARAMETERS) : null,
        url: isFunction ? body.url! : null,
        method: isFunction ? (body.method ?? 'POST') : null,
        headers: isFunction ? sealHeaders(services.secrets, id, body.headers ?? {}) : null,
        timeout_ms: isFunction ? (body.timeout_ms ?? DEFAULT_TIMEOUT_MS) : null,
        destination: type === 'transfer_call' ? body.destination! : null,
        transfer_mode: type === 'transfer_call' ? (body.mode ?? 'blind') : null,
      };
      const signing = isFunction ? newSealedSigningSecret(services.secrets, id) : null;
      const row = await insertTool(db, auth.orgId, id, type, t, signing?.sealed ?? null);
      await audit({ action: 'tool.create', resourceType: 'tool', resourceId: id, details: { type, name: t.name } });
      const view = toolView(services.secrets, row);
      return signing ? { ...view, signing_secret: signing.secret } : view;
    },
  }),
  defineRoute({
    method: 'get',
    path: '/tools',
    operationId: 'listTools',
    tag: 'tools',
    summary: 'List tools',
    description: 'Newest first. Filter with `type`.',
    query: ToolListQuery,
    responses: { 200: { description: 'Tools of the organisation', schema: ToolList } },
    handler: async ({ query, auth, db, services }) => {
      const { items, total } = await listTools(db, auth.orgId, query);
      return { items: items.map((r) => toolView(services.secrets, r)), total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/tools/:tool_id',
    operationId: 'getTool',
    tag: 'tools',
    summary: 'Get a tool',
    description: 'Header values are masked; the signing secret is never shown again (rotate it if lost).',
    params: ToolParams,
    responses: { 200: { description: 'The tool', schema: Tool } },
    handler: async ({ params, auth, db, services }) => {
      const row = await getTool(db, auth.orgId, params.tool_id);
      if (!row) throw notFound('Tool');
      return toolView(services.secrets, row);
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/tools/:tool_id',
    operationId: 'updateTool',
    tag: 'tools',
    summary: 'Update a tool',
    description:
      'Partial update with the fields of the tool\'s type; the type cannot change. `headers` replaces the whole map; ' +
      'a value equal to its masked form (as read) keeps the stored value.',
    params: ToolParams,
    body: UpdateTool,
    responses: { 200: { description: 'The updated tool', schema: Tool } },
    handler: async ({ params, body, auth, db, audit, services }) => {
      const cur = await getTool(db, auth.orgId, params.tool_id, { forUpdate: true });
      if (!cur) throw notFound('Tool');
      assertTool(cur.type, body);
      const warm = warmProblems(body, { destination: cur.destination, mode: cur.transfer_mode });
      if (warm.length) throw new ValidationFailure(warm);
      checkToolUrl(services, body.url);
      if (body.name !== undefined && body.name !== cur.name) {
        const clash = await modelsWithToolNameClash(db, auth.orgId, cur.id, body.name);
        if (clash.length) {
          throw invalidField(['body', 'name'], `LLM model '${clash[0]!.name}' links another tool with this name; tools of one model need distinct names`, 'value_error', body.name);
        }
      }
      const headers =
        body.headers !== undefined ? sealHeaders(services.secrets, cur.id, mergeHeaders(openHeaders(services.secrets, cur.id, sealedHeadersOf(cur)), body.headers)) : sealedHeadersOf(cur);
      const t: ToolWrite = {
        name: body.name ?? cur.name,
        description: body.description !== undefined ? body.description : cur.description,
        parameters: body.parameters ?? cur.parameters,
        url: body.url ?? cur.url,
        method: body.method ?? cur.method,
        headers,
        timeout_ms: body.timeout_ms ?? cur.timeout_ms,
        destination: body.destination ?? cur.destination,
        transfer_mode: body.mode ?? cur.transfer_mode,
      };
      const row = await updateTool(db, auth.orgId, cur.id, t);
      // Agents whose model links the tool get a version with it resolved again; its headers are not versioned.
      await propagateChange(db, actorOf(auth), auth.orgId, { toolId: cur.id }, { resource_type: 'tool', resource_id: cur.id, action: 'tool.update' });
      await audit({ action: 'tool.update', resourceType: 'tool', resourceId: cur.id, details: { fields: Object.keys(body) } });
      return toolView(services.secrets, row);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/tools/:tool_id/rotate-signing-secret',
    operationId: 'rotateToolSigningSecret',
    tag: 'tools',
    summary: 'Rotate a function tool\'s signing secret',
    description:
      `Returns the new secret once. For ${PREVIOUS_SECRET_GRACE_HOURS} hours requests carry two signatures (new and ` +
      'previous secret, space-separated in `webhook-signature`), so your server can switch secrets without failing ' +
      'calls. Built-in tools have no secret (409).',
    params: ToolParams,
    responses: { 200: { description: 'The tool with its new signing secret', schema: ToolWithSecret } },
    handler: async ({ params, auth, db, audit, services }) => {
      const cur = await getTool(db, auth.orgId, params.tool_id, { forUpdate: true });
      if (!cur) throw notFound('Tool');
      if (cur.type !== 'function') throw conflict(`Tools of type '${cur.type}' make no requests and have no signing secret`);
      const signing = newSealedSigningSecret(services.secrets, cur.id);
      const row = await rotateSigningSecret(db, auth.orgId, cur.id, signing.sealed, PREVIOUS_SECRET_GRACE_HOURS);
      await audit({ action: 'tool.rotate_signing_secret', resourceType: 'tool', resourceId: cur.id });
      return { ...toolView(services.secrets, row), signing_secret: signing.secret };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/tools/:tool_id',
    operationId: 'deleteTool',
    tag: 'tools',
    summary: 'Delete a tool',
    description:
      'A tool linked to live LLM models cannot be deleted: the answer is a 409 whose `models` field lists them ' +
      '(`[{id, name}]`); remove it from their `tool_ids` first.',
    params: ToolParams,
    status: 204,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ params, auth, db, audit }) => {
      const cur = await getTool(db, auth.orgId, params.tool_id, { forUpdate: true });
      if (!cur) throw notFound('Tool');
      const models = await modelsUsingTool(db, auth.orgId, cur.id);
      if (models.length) throw conflict(`Tool is linked to ${models.length} LLM model${models.length === 1 ? '' : 's'}; remove it from their tool_ids first`, { models });
      await softDeleteTool(db, auth.orgId, cur.id);
      await audit({ action: 'tool.delete', resourceType: 'tool', resourceId: cur.id, details: { type: cur.type, name: cur.name } });
      return reply(204);
    },
  }),
];
