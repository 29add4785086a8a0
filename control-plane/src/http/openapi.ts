// Builds the OpenAPI 3.1 document from the route list. OpenAPI 3.1 schemas are JSON Schema 2020-12, so the
// validation schemas go in unchanged; objects with a `title` are hoisted into components.
import type { TSchema } from '@sinclair/typebox';
import { ApiError, ValidationError } from '../../../schemas/errors.ts';
import { RequiredHere } from '../../../schemas/common.ts';
import { CALL_EVENT_SCHEMAS } from '../../../schemas/events.ts';
import { TAGS } from './tags.ts';
import type { RouteDef } from './route.ts';

type Json = Record<string, unknown>;

const TAG_DESCRIPTIONS: Record<(typeof TAGS)[number], string> = {
  health: 'Liveness and readiness',
  integrations: 'Third-party provider keys (credentials), stored encrypted and shown masked',
  'llm-models': 'Language model records: model, prompt, settings, linked tools and knowledge bases',
  tools: 'Function tools and built-in call actions available to agents',
  'knowledge-bases': 'Ingested sources that agents draw on at call time',
  voices: 'Catalogue of text-to-speech voices',
  webhooks: 'Endpoints that receive call events, and their delivery records',
  agents: 'Voice agents: model, transcriber, voice and call behaviour',
  'phone-numbers': 'Numbers bought through the platform and routed to agents',
  calls: 'Web, outbound and inbound calls',
  workspace: 'The organisation, its settings and its API keys',
  usage: 'Consumption against the organisation limits',
  'audit-events': 'Who changed what, and when',
  activity: 'Organisation-level activity summary',
  'agent-tests': 'Simulated callers (scenarios), suites and test runs of an agent, with expectations judged per scenario',
  squads: 'Agents that hand a call to one another within the call',
};

const ERROR_RESPONSES: Record<string, { status: number; description: string }> = {
  Unauthorized: { status: 401, description: 'Missing, malformed, unknown, expired or revoked credentials' },
  Forbidden: { status: 403, description: 'The credential is valid but may not perform this request (publishable key scope or origin)' },
  NotFound: { status: 404, description: 'No such resource in your organisation' },
  Conflict: { status: 409, description: 'The request conflicts with the current state' },
  PayloadTooLarge: { status: 413, description: 'Request body too large' },
  RateLimited: { status: 429, description: 'Too many requests; retry after the number of seconds in Retry-After' },
  InternalError: { status: 500, description: 'Unexpected error; the body carries the request id' },
};

class Components {
  readonly schemas: Record<string, Json> = {};

  /** Deep-copies a schema, replacing titled sub-objects by $refs into components. */
  ref(schema: TSchema | Json): Json {
    const plain = JSON.parse(JSON.stringify(schema)) as Json;
    return this.hoist(plain, true);
  }

  private hoist(node: unknown, _isRoot: boolean): Json {
    if (Array.isArray(node)) return node.map((n) => this.hoist(n, false)) as unknown as Json;
    if (node === null || typeof node !== 'object') return node as Json;
    const obj = node as Json;
    const out: Json = {};
    for (const [k, v] of Object.entries(obj)) {
      if (k === 'examples' || k === 'default' || k === 'enum' || k === 'const') out[k] = v;
      else out[k] = this.hoist(v, false);
    }
    const alternatives = obj['x-exactly-one-of'];
    if (Array.isArray(alternatives)) {
      delete out['x-exactly-one-of'];
      // Each branch repeats its field's schema, so generated types read `{agent_id: string} | {squad_id: string}`.
      const props = (out.properties ?? {}) as Record<string, Json>;
      out.oneOf = (alternatives as string[]).map((n) => ({ ...RequiredHere([n]), properties: { [n]: props[n] ?? {} } }));
    }
    const title = obj.title;
    if (typeof title === 'string' && /^[A-Za-z0-9_]+$/.test(title)) {
      if (!this.schemas[title]) this.schemas[title] = out;
      return { $ref: `#/components/schemas/${title}` };
    }
    return out;
  }
}

const toOpenApiPath = (p: string) => p.replace(/:([A-Za-z0-9_]+)/g, '{$1}');

export function buildOpenApi(routes: RouteDef[], opts: { serverUrl?: string } = {}): Json {
  const components = new Components();
  const paths: Record<string, Json> = {};
  for (const r of routes) {
    if (r.internal) continue;
    const path = r.root ? toOpenApiPath(r.path) : `/v1${toOpenApiPath(r.path)}`;
    const parameters: Json[] = [];
    for (const [source, schema] of [['path', r.params], ['query', r.query], ['header', r.headers]] as const) {
      if (!schema) continue;
      const required = new Set((schema as Json).required as string[] | undefined);
      for (const [name, prop] of Object.entries((schema as Json).properties as Record<string, Json>)) {
        const p = JSON.parse(JSON.stringify(prop)) as Json;
        const description = p.description;
        delete p.description;
        parameters.push({
          name,
          in: source,
          // A parameter with a default is optional to the caller, whatever the schema lists as required for
          // the handler's sake (validation fills the default in before the handler runs).
          required: source === 'path' || (required.has(name) && p.default === undefined),
          ...(description ? { description } : {}),
          schema: components.ref(p),
        });
      }
    }
    const responses: Json = {};
    for (const [status, doc] of Object.entries(r.responses)) {
      responses[status] = {
        description: doc.description,
        ...(doc.headers ? { headers: doc.headers } : {}),
        ...(doc.schema ? { content: { [doc.contentType ?? 'application/json']: { schema: components.ref(doc.schema) } } } : {}),
      };
    }
    const auth = r.auth ?? 'secret';
    const errorRefs: string[] = [];
    if (auth !== 'none') errorRefs.push('Unauthorized');
    // Open routes too: a client IP out of failed-authentication tokens is refused everywhere (http/mount.ts).
    errorRefs.push('RateLimited');
    if (auth === 'secret') errorRefs.push('Forbidden');
    if (r.params) errorRefs.push('NotFound');
    // A change to an existing resource can conflict with its state (in use, revoked, ended...).
    if (r.params && r.method !== 'get' && auth !== 'none') errorRefs.push('Conflict');
    if (r.body) errorRefs.push('PayloadTooLarge');
    errorRefs.push('InternalError');
    for (const name of errorRefs) {
      const status = String(ERROR_RESPONSES[name]!.status);
      if (!responses[status]) responses[status] = { $ref: `#/components/responses/${name}` };
    }
    if ((r.params || r.query || r.body) && !responses['422']) responses['422'] = { $ref: '#/components/responses/ValidationError' };

    const op: Json = {
      operationId: r.operationId,
      tags: [r.tag],
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      ...(parameters.length ? { parameters } : {}),
      responses,
      ...(auth === 'none' ? { security: [] } : {}),
      ...(r.publishableScope ? { 'x-publishable-key-scope': r.publishableScope } : {}),
    };
    if (r.body) {
      const content: Json =
        r.bodyType === 'json-or-multipart'
          ? { 'application/json': { schema: components.ref(r.body) }, ...(r.formBody ? { 'multipart/form-data': { schema: components.ref(r.formBody) } } : {}) }
          : { [r.bodyType === 'multipart' ? 'multipart/form-data' : 'application/json']: { schema: components.ref(r.body) } };
      op.requestBody = { required: r.method === 'post', content };
    }
    paths[path] ??= {};
    paths[path][r.method] = op;
  }

  // The events POSTed to webhooks (OpenAPI 3.1 `webhooks`), so generated clients type what they receive.
  const webhooks: Record<string, Json> = {};
  for (const [name, schema] of Object.entries(CALL_EVENT_SCHEMAS)) {
    webhooks[name] = {
      post: {
        operationId: `event_${name.replaceAll('.', '_')}`,
        tags: ['webhooks'],
        summary: `\`${name}\``,
        description: `${(schema as Json).description as string}. Signed with Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature).`,
        requestBody: { required: true, content: { 'application/json': { schema: components.ref(schema) } } },
        responses: {
          '200': { description: 'Any 2xx within WEBHOOK_TIMEOUT_MS acknowledges the delivery; any other answer, or none in time, is retried' },
          '410': { description: 'Gone: the endpoint is set inactive and its deliveries are held (a call\'s own `webhook_url` stops getting retries)' },
        },
        security: [],
      },
    };
  }

  const errorSchema = components.ref(ApiError);
  const responses: Json = {
    ValidationError: {
      description: 'The request failed validation',
      content: { 'application/json': { schema: components.ref(ValidationError) } },
    },
  };
  for (const [name, { description, status }] of Object.entries(ERROR_RESPONSES)) {
    responses[name] = {
      description,
      ...(status === 429 ? { headers: { 'Retry-After': { description: 'Seconds to wait', schema: { type: 'integer' } } } } : {}),
      content: { 'application/json': { schema: errorSchema } },
    };
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'vap API',
      version: '1.0.0',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
      description:
        'REST interface of the vap voice agent platform. Authenticate with `Authorization: Bearer <API key>` ' +
        '(`vap_sk_...`), a dashboard JWT, or, on the routes that allow it, a publishable key (`vap_pk_...`).',
    },
    // Relative by default: the host that serves this document, whatever the deployment is named.
    servers: [{ url: opts.serverUrl ?? '/', description: 'This deployment' }],
    // A tag is listed once it carries operations: an empty group in the reference is a promise not kept.
    tags: TAGS.filter((name) => routes.some((r) => !r.internal && r.tag === name)).map((name) => ({ name, description: TAG_DESCRIPTIONS[name] })),
    security: [{ bearerAuth: [] }],
    paths,
    webhooks,
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'API key (vap_sk_...), dashboard JWT, or publishable key (vap_pk_...)' },
      },
      schemas: components.schemas,
      responses,
    },
  };
}
