// Mounts route definitions on @koa/router: auth -> rate limit -> validate -> transaction -> handler.
import type { Context } from 'koa';
import Router from '@koa/router';
import type { Auth } from '../auth/service.ts';
import type { Services } from '../services.ts';
import { forbidden, HttpError, notFound, ValidationFailure } from './errors.ts';
import { compile, isUuid, opaqueIds, problems, type Source } from './validation.ts';
import { writeAudit } from '../modules/audit-events/queries.ts';
import { isReply, type AuditInput, type RouteDef } from './route.ts';
import type { Db } from '../db/types.ts';
import { originAllowed } from '../auth/origins.ts';
import { readBody } from './body.ts';
import { allowOrigin, preflight } from './cors.ts';
import type { ValidateFunction } from 'ajv';
import { CAPABILITY_HEADER, verifyCapability, verifyTicket } from '../modules/calls/capability.ts';

const MUTATING = new Set(['post', 'put', 'patch', 'delete']);

export function mountRoutes(router: Router, routes: RouteDef[], services: Services): void {
  for (const def of routes) {
    const validators: Partial<Record<Source, ValidateFunction>> = {};
    if (def.params) validators.path = compile(def.params, 'path');
    if (def.query) validators.query = compile(def.query, 'query');
    if (def.body) validators.body = compile(def.body, 'body');
    const opaque = opaqueIds(def.params);
    const useTx = def.transaction ?? MUTATING.has(def.method);
    const mode = def.auth ?? 'secret';

    // Routes open to publishable keys are called by customers' pages, across origins (see cors.ts).
    if (def.publishableScope) router.options(def.path, (ctx: Context) => preflight(ctx, def.method));
    router[def.method](def.operationId, def.path, async (ctx: Context) => {
      ctx.state.operationId = def.operationId;
      if (def.publishableScope) allowOrigin(ctx);
      const auth = await authenticate(ctx, def, mode, services);
      if (auth) {
        ctx.state.auth = auth;
        // Workers have buckets of their own, one per worker id, apart from customers' keys.
        if (auth.actorType === 'worker') services.workerRateLimiter.take(auth.actorId);
        else {
          services.rateLimiter.take(auth.actorId);
          // All of an organisation's credentials together.
          if (auth.orgId) services.limits.org.take(`org:${auth.orgId}`);
        }
      }

      // Path, query and body are all checked before answering, so one 422 lists every problem.
      const params = { ...(ctx.params as Record<string, string>) };
      const query = { ...(ctx.query as Record<string, unknown>) };
      const found = [
        ...(validators.path ? problems(validators.path, params, 'path') : []),
        // Routes without query parameters ignore stray ones (cache-busters added by browsers and proxies).
        ...(validators.query ? problems(validators.query, query, 'query') : []),
      ];
      let body: unknown = {};
      const multipartHere = def.bodyType === 'multipart' || (def.bodyType === 'json-or-multipart' && typeof ctx.is('multipart/form-data') === 'string');
      if (def.body && !multipartHere) {
        try {
          body = await readBody(ctx, def.bodyLimit?.(services) ?? services.config.BODY_LIMIT);
          found.push(...problems(validators.body!, body, 'body'));
        } catch (err) {
          if (!(err instanceof ValidationFailure)) throw err;
          found.push(...err.detail);
        }
      }
      if (found.length) throw new ValidationFailure(found);
      // A string-typed id that is not one the platform issues names nothing (see PathId).
      for (const [name, resource] of opaque) if (!isUuid(params[name]!)) throw notFound(resource);

      const run = async (db: Db) => {
        const audit = async (ev: AuditInput) => {
          if (!auth) throw new Error('audit needs an authenticated caller');
          await writeAudit(db, {
            orgId: auth.orgId,
            actorType: auth.actorType,
            actorId: auth.actorId,
            requestId: ctx.state.requestId as string,
            ip: ctx.ip || null,
            ...ev,
          });
        };
        const onCommit = (fn: () => void | Promise<void>) => void afterCommit.push(fn);
        return def.handler({ params, query, body, auth: auth as Auth, db, audit, onCommit, services, ctx });
      };
      const afterCommit: (() => void | Promise<void>)[] = [];
      const result = useTx ? await services.sql.begin((tx) => run(tx)) : await run(services.sql);
      for (const fn of afterCommit) {
        try {
          await fn();
        } catch (err) {
          ctx.state.log?.warn({ err }, 'after-commit hook failed');
        }
      }

      if (isReply(result)) {
        ctx.status = result.status;
        if (result.headers) ctx.set(result.headers);
        if (result.body !== undefined) ctx.body = result.body;
      } else {
        ctx.status = def.status ?? 200;
        if (result !== undefined) ctx.body = result;
      }
    });
  }
}

/**
 * Failed authentication is throttled per client IP (`ctx.ip`: the TCP peer, or X-Forwarded-For only as far as
 * TRUST_PROXY says): each 401 spends a token, and an IP with none left is answered 429 before its credential
 * is even looked at, so guessing keys or tokens costs the guesser time, not the database.
 */
async function authenticate(ctx: Context, def: RouteDef, mode: RouteDef['auth'], services: Services): Promise<Auth | null> {
  const ipKey = `ip:${ctx.ip}`;
  // An IP out of tokens is refused on the open routes too (health, the reference, signed downloads): a guesser
  // gets nothing from this deployment until its bucket refills.
  services.limits.authFailures.check(ipKey);
  if (mode === 'none') return null;
  try {
    return await authenticateAs(ctx, def, mode, services);
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) services.limits.authFailures.charge(ipKey);
    throw err;
  }
}

async function authenticateAs(ctx: Context, def: RouteDef, mode: RouteDef['auth'], services: Services): Promise<Auth | null> {
  if (mode === 'worker' || mode === 'call' || mode === 'ticket') {
    const worker = await services.workerAuth(ctx.get('authorization'));
    if (mode === 'call') requireCapability(services, ctx, ctx.get(CAPABILITY_HEADER));
    if (mode === 'ticket') requireCapability(services, ctx, ctx.get(CAPABILITY_HEADER), { ticket: true });
    return { ...worker, actorId: workerBucket(ctx, mode === 'worker' ? 'worker' : 'call') };
  }
  if (mode === 'capability') {
    requireCapability(services, ctx, /^Bearer\s+(\S+)$/i.exec(ctx.get('authorization'))?.[1]);
    // Not a worker's bucket: the upload comes through the public ingress, one per call.
    return null;
  }
  const auth = await services.auth.authenticate(ctx.get('authorization') || undefined);
  if (auth.publishable) {
    if (!def.publishableScope || !auth.publishable.scopes.includes(def.publishableScope)) {
      throw forbidden(
        def.publishableScope
          ? `This publishable key lacks the "${def.publishableScope}" scope`
          : 'Publishable keys may not call this endpoint; use a secret API key',
      );
    }
    const origin = ctx.get('origin');
    if (!origin || !originAllowed(origin, auth.publishable.allowedOrigins)) {
      throw forbidden('Origin is not allowed for this publishable key');
    }
  }
  return auth;
}

/** The capability must be the one of the call in the path: another call's, an expired or a forged one is refused. */
function requireCapability(services: Services, ctx: Context, token: string | undefined, opts: { ticket?: boolean } = {}): void {
  const callId = (ctx.params as Record<string, string | undefined>).call_id;
  if (!token) throw forbidden('This request needs the capability of its call');
  const ok = !!callId && (verifyCapability(services, callId, token) || (!!opts.ticket && verifyTicket(services, callId, token)));
  if (!ok) throw forbidden('Invalid or expired capability for this call');
}

/**
 * A worker's rate-limit bucket, keyed by what its caller cannot choose: a call's own requests by the call (its
 * capability was verified above, so the id is one the control plane gave out), everything else by the client
 * address (`ctx.ip`, as far as TRUST_PROXY trusts X-Forwarded-For). A declared worker id (the Vap-Worker-Id header,
 * the heartbeat's path) would let one holder of the shared token take a fresh bucket per request.
 */
function workerBucket(ctx: Context, mode: 'worker' | 'call'): string {
  const callId = (ctx.params as Record<string, string | undefined>).call_id;
  return mode === 'call' && callId ? `worker-call:${callId}` : `worker-ip:${ctx.ip || 'unknown'}`;
}
