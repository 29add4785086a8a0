// One error type for every non-2xx answer. The top-level handler turns it into the documented body.
import type { ErrorType, ValidationErrorItem } from '../../../schemas/errors.ts';

export class HttpError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly extra: Record<string, unknown>;
  readonly headers: Record<string, string>;
  constructor(status: number, type: ErrorType, detail: string, opts: { extra?: Record<string, unknown>; headers?: Record<string, string> } = {}) {
    super(detail);
    this.status = status;
    this.type = type;
    this.extra = opts.extra ?? {};
    this.headers = opts.headers ?? {};
  }
}

/** 422 with the spec's `detail` array. */
export class ValidationFailure extends Error {
  readonly status = 422;
  readonly detail: ValidationErrorItem[];
  constructor(detail: ValidationErrorItem[]) {
    super('validation failed');
    this.detail = detail;
  }
}

export const unauthorized = (detail = 'Missing or invalid credentials') =>
  new HttpError(401, 'unauthorized', detail, { headers: { 'WWW-Authenticate': 'Bearer' } });
export const forbidden = (detail = 'This credential may not perform this request') => new HttpError(403, 'forbidden', detail);
export const notFound = (what: string) => new HttpError(404, 'not_found', `${what} not found`);
export const conflict = (detail: string, extra?: Record<string, unknown>) => new HttpError(409, 'conflict', detail, extra ? { extra } : {});
export const tooManyRequests = (detail: string, retryAfterSeconds: number, extra?: Record<string, unknown>) =>
  new HttpError(429, 'rate_limited', detail, {
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))) },
    extra: { retry_after_seconds: Math.max(1, Math.ceil(retryAfterSeconds)), ...extra },
  });

/** A single-field 422, for checks that need the database (a reference to another org's resource, say). */
export const invalidField = (loc: (string | number)[], msg: string, type: string, input?: unknown) =>
  new ValidationFailure([{ loc, msg, type, ...(input !== undefined ? { input } : {}) }]);
