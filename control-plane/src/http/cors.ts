// CORS for the routes a customer's page calls from the browser (those with a publishable-key scope, such as
// POST /v1/calls/web). Any origin may send the request and read the answer: the credential is the page's own
// Authorization header (no cookies, so no ambient authority), and the publishable key's allowed origins are
// checked at authentication, where a refusal is a 403 the page can read and show.
import type { Context } from 'koa';

const ALLOW_HEADERS = 'authorization, content-type, idempotency-key';
const EXPOSE_HEADERS = 'retry-after, x-request-id, total-exact';
/** How long a browser may cache a preflight answer (Chromium caps it at 2 hours). */
const MAX_AGE_SECONDS = 7200;

/** Adds the CORS headers to the answer of a request from a page (one that carries an Origin header). */
export function allowOrigin(ctx: Context): void {
  const origin = ctx.get('origin');
  if (!origin) return;
  ctx.set('Access-Control-Allow-Origin', origin);
  ctx.set('Access-Control-Expose-Headers', EXPOSE_HEADERS);
  ctx.vary('Origin');
}

/** Answers a preflight (OPTIONS) for a route that pages may call with `method`. */
export function preflight(ctx: Context, method: string): void {
  allowOrigin(ctx);
  ctx.set('Access-Control-Allow-Methods', method.toUpperCase());
  ctx.set('Access-Control-Allow-Headers', ALLOW_HEADERS);
  ctx.set('Access-Control-Max-Age', String(MAX_AGE_SECONDS));
  ctx.status = 204;
}
