// JSON request bodies, read only by routes that declare one. Malformed JSON and a wrong content type
// are validation failures (422) in the spec's shape; an oversized body is 413.
import type { Context } from 'koa';
import coBody from 'co-body';
import { HttpError, ValidationFailure } from './errors.ts';

function hasBody(ctx: Context): boolean {
  const len = ctx.get('content-length');
  return (len !== '' && len !== '0') || ctx.get('transfer-encoding') !== '';
}

/** The raw body as UTF-8 text, bounded by `limit` (413 above it). */
export async function readText(ctx: Context, limit: string | number): Promise<string> {
  try {
    return (await coBody.text(ctx.req, { limit, encoding: 'utf8' })) as string;
  } catch (err) {
    const e = err as { status?: number; type?: string };
    if (e.status === 413 || e.type === 'entity.too.large') throw new HttpError(413, 'payload_too_large', `Request body exceeds the limit of ${limit}`);
    throw new HttpError(400, 'bad_request', 'Could not read the request body');
  }
}

export async function readBody(ctx: Context, limit: string | number): Promise<unknown> {
  // An absent body is an empty object, so POST /x/stop or a PATCH with no fields needs no "{}".
  if (!hasBody(ctx)) return {};
  if (!ctx.is('application/json', '+json')) {
    throw new ValidationFailure([
      {
        type: 'content_type',
        loc: ['header', 'content-type'],
        msg: 'Content-Type must be application/json',
        input: ctx.get('content-type') || null,
      },
    ]);
  }
  const raw = await readText(ctx, limit);
  if (raw.trim() === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (err) {
    const message = (err as Error).message;
    const pos = /position (\d+)/.exec(message);
    throw new ValidationFailure([
      {
        type: 'json_invalid',
        loc: ['body', pos ? Number(pos[1]) : 0],
        msg: 'JSON decode error',
        input: {},
        ctx: { error: message },
      },
    ]);
  }
  const depth = maxDepth(parsed, MAX_DEPTH + 1);
  if (depth > MAX_DEPTH) {
    throw new ValidationFailure([
      { type: 'json_too_deep', loc: ['body'], msg: `JSON nests deeper than ${MAX_DEPTH} levels`, ctx: { max_depth: MAX_DEPTH } },
    ]);
  }
  return parsed;
}

/** Deep enough for any real payload; deeper input only exercises stacks (ours and PostgreSQL's). */
export const MAX_DEPTH = 32;

/** Nesting depth of a JSON value, counting stops once `cap` is reached (iterative: no recursion on input). */
function maxDepth(value: unknown, cap: number): number {
  let deepest = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    if (d > deepest) deepest = d;
    if (deepest >= cap) return deepest;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return deepest;
}
