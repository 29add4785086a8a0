// Request id, access log, metrics and the one place where errors become response bodies.
import type { Context, Next } from 'koa';
import type { Logger } from '../../../shared/logger.ts';
import { newRequestId } from '../../../shared/ids.ts';
import type { Metrics } from '../metrics.ts';
import { HttpError, ValidationFailure } from './errors.ts';
import { SpanKind, SpanStatusCode, context, contextFrom, trace, tracer } from '../../../shared/tracing.ts';

const INCOMING_ID = /^[A-Za-z0-9._:-]{8,128}$/;

export function requestContext(log: Logger, metrics: Metrics) {
  return async function requestContext(ctx: Context, next: Next) {
    const incoming = ctx.get('x-request-id');
    const requestId = INCOMING_ID.test(incoming) ? incoming : newRequestId();
    ctx.state.requestId = requestId;
    ctx.set('X-Request-Id', requestId);
    ctx.state.log = log.child({ request_id: requestId });
    const start = performance.now();
    // A server span per request (a non-recording one when tracing is off), child of the caller's traceparent.
    const parent = contextFrom(ctx.headers);
    const span = tracer().startSpan(`${ctx.method} ${ctx.path.startsWith('/internal/') ? '/internal' : ctx.path}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method, 'vap.request_id': requestId } }, parent);
    try {
      await context.with(trace.setSpan(parent, span), next);
    } catch (err) {
      toErrorResponse(ctx, err);
    } finally {
      const seconds = (performance.now() - start) / 1000;
      const route = (ctx._matchedRoute as string | undefined) ?? 'unmatched';
      span.updateName(`${ctx.method} ${route}`);
      span.setAttributes({ 'http.route': route, 'http.response.status_code': ctx.status });
      if (ctx.state.auth?.orgId) span.setAttribute('vap.org_id', String(ctx.state.auth.orgId));
      if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      metrics.httpDuration.observe({ route, method: ctx.method, status: String(ctx.status) }, seconds);
      if (ctx.status === 429) {
        const reason = (ctx.body as { reason?: unknown } | undefined)?.reason;
        metrics.refusals.inc({ reason: typeof reason === 'string' ? reason : 'rate_limit' });
      }
      const fields = {
        method: ctx.method,
        route,
        path: ctx.path,
        status: ctx.status,
        duration_ms: Math.round(seconds * 10000) / 10,
        org_id: ctx.state.auth?.orgId,
      };
      if (ctx.status >= 500) ctx.state.log.error(fields, 'request failed');
      else ctx.state.log.info(fields, 'request');
    }
  };
}

function toErrorResponse(ctx: Context, err: unknown): void {
  const requestId = ctx.state.requestId as string;
  if (err instanceof ValidationFailure) {
    ctx.status = 422;
    ctx.body = { detail: err.detail };
    return;
  }
  if (err instanceof HttpError) {
    ctx.status = err.status;
    ctx.set(err.headers);
    ctx.body = { detail: err.message, type: err.type, request_id: requestId, ...err.extra };
    return;
  }
  ctx.state.log.error({ err }, 'unhandled error');
  ctx.status = 500;
  ctx.body = { detail: 'Internal server error', type: 'internal_error', request_id: requestId };
}

/** Unknown paths and methods get the same error body as everything else. */
export async function notFoundFallback(ctx: Context, next: Next) {
  await next();
  if (ctx.status === 404 && ctx.body === undefined) {
    ctx.status = 404;
    ctx.body = { detail: 'Route not found', type: 'not_found', request_id: ctx.state.requestId };
  } else if (ctx.status === 405 && (ctx.body === undefined || typeof ctx.body === 'string')) {
    ctx.body = { detail: 'Method not allowed', type: 'method_not_allowed', request_id: ctx.state.requestId };
  }
}
