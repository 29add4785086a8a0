// Routes are data: method, path, schemas, auth and a handler. One function mounts them on @koa/router
// (compiling validators at start-up) and another walks the same list to write the OpenAPI document,
// so validation, documentation and handler types cannot drift apart.
import type { Context } from 'koa';
import type { Static, TSchema } from '@sinclair/typebox';
import type { Db } from '../db/types.ts';
import type { Auth } from '../auth/service.ts';
import type { Services } from '../services.ts';
import type { Tag } from './tags.ts';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

export type AuthMode =
  /** No credential (health, docs, signed recording links). */
  | 'none'
  /** A secret API key or a dashboard JWT. */
  | 'secret'
  /** The media workers' own credential (internal API): routes not about one call (heartbeat, inbound open). */
  | 'worker'
  /** The workers' credential plus the capability of the call in the path (`:call_id`), see calls/capability.ts. */
  | 'call'
  /** As `call`, or the call's dispatch ticket instead of its capability: the call's config alone (handed out once). */
  | 'ticket'
  /** The capability of the call in the path alone (the recording upload, reached through the public ingress). */
  | 'capability';

export interface AuditInput {
  action: string;
  resourceType: string;
  resourceId: string | null;
  details?: Record<string, unknown>;
}

export interface HandlerArgs<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /** The caller; for `auth: 'none'` routes it is null. */
  auth: Auth;
  /** The request transaction for mutating routes (see `transaction`), else the pool. */
  db: Db;
  /** Writes an audit event in the same transaction as the change. */
  audit: (event: AuditInput) => Promise<void>;
  /** Runs after the request transaction commits (at once for routes without one). */
  onCommit: (fn: () => void | Promise<void>) => void;
  services: Services;
  ctx: Context;
}

export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

export interface ResponseDoc {
  description: string;
  schema?: TSchema;
  contentType?: string;
  /** Response headers, for the OpenAPI document. */
  headers?: Record<string, { description: string; schema: Record<string, unknown> }>;
}

export interface RouteDef<PS extends TSchema | undefined = TSchema | undefined, QS extends TSchema | undefined = TSchema | undefined, BS extends TSchema | undefined = TSchema | undefined> {
  method: Method;
  /** Koa path with `:param` segments, relative to the router's prefix. */
  path: string;
  /** Mount without the `/v1` prefix (health, OpenAPI). */
  root?: boolean;
  operationId: string;
  tag: Tag;
  summary: string;
  description?: string;
  auth?: AuthMode;
  /** Scope a publishable key needs to use this route; without it publishable keys get 403. */
  publishableScope?: string;
  params?: PS;
  query?: QS;
  body?: BS;
  /** Request headers the route reads, for the OpenAPI document (the handler checks them). */
  headers?: TSchema;
  /**
   * `json` (default), `multipart` (the handler parses it), or `json-or-multipart`: a JSON body is read and checked
   * against `body`, a multipart one is left to the handler (documented by `formBody`).
   */
  bodyType?: 'json' | 'multipart' | 'json-or-multipart';
  /** The multipart form of a `json-or-multipart` route, for the OpenAPI document. */
  formBody?: TSchema;
  /** The largest JSON body this route reads, instead of BODY_LIMIT. */
  bodyLimit?: (services: Services) => string | number;
  /** Defaults to true for POST, PUT, PATCH and DELETE. Turn off for handlers that call out to other services. */
  transaction?: boolean;
  status?: number;
  responses: Record<number, ResponseDoc>;
  /** Hidden from the OpenAPI document (internal worker API). */
  internal?: boolean;
  handler: (args: HandlerArgs<Infer<PS>, Infer<QS>, Infer<BS>>) => Promise<unknown>; // a Reply, or the body itself
}

type Infer<S> = S extends TSchema ? Static<S> : Record<string, never>;

/** Identity function that gives the handler its inferred parameter, query and body types. */
export function defineRoute<PS extends TSchema | undefined = undefined, QS extends TSchema | undefined = undefined, BS extends TSchema | undefined = undefined>(
  def: RouteDef<PS, QS, BS>,
): RouteDef {
  return def;
}

const REPLY = Symbol('reply');

/** A response with an explicit status (or headers); plain return values use the route's `status`. */
export const reply = (status: number, body?: unknown, headers?: Record<string, string>): Reply =>
  Object.assign({ status, body, ...(headers ? { headers } : {}) }, { [REPLY]: true });

export const isReply = (v: unknown): v is Reply => typeof v === 'object' && v !== null && REPLY in v;
