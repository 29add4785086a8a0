// Error bodies. 422 is exactly the spec's validation error body; every other error shares one shape.
import { Type, type Static } from './common.ts';

export const ValidationErrorItem = Type.Object(
  {
    loc: Type.Array(Type.Union([Type.String(), Type.Integer()]), { description: 'Where the error is, e.g. ["body","name"]' }),
    msg: Type.String(),
    type: Type.String({ description: 'Machine-readable error type, e.g. missing, extra_forbidden, uuid_parsing' }),
    input: Type.Optional(Type.Unknown()),
    ctx: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { title: 'ValidationErrorItem' },
);

export const ValidationError = Type.Object(
  { detail: Type.Array(ValidationErrorItem) },
  {
    title: 'ValidationError',
    examples: [{ detail: [{ loc: ['body', 'name'], msg: 'Field required', type: 'missing', input: {} }] }],
  },
);
export type ValidationError = Static<typeof ValidationError>;
export type ValidationErrorItem = Static<typeof ValidationErrorItem>;

export const ErrorTypes = [
  'unauthorized',
  'forbidden',
  'not_found',
  'conflict',
  'payload_too_large',
  'range_not_satisfiable',
  'method_not_allowed',
  'rate_limited',
  'bad_request',
  'internal_error',
  'service_unavailable',
] as const;
export type ErrorType = (typeof ErrorTypes)[number];

export const ApiError = Type.Object(
  {
    detail: Type.String({ description: 'Human-readable explanation' }),
    type: Type.Union(ErrorTypes.map((t) => Type.Literal(t)), { description: 'Stable machine-readable error type' }),
    request_id: Type.String({ description: 'Same value as the X-Request-Id response header' }),
  },
  {
    title: 'Error',
    additionalProperties: true,
    examples: [{ detail: 'Agent not found', type: 'not_found', request_id: 'req_3kTq9...' }],
  },
);
export type ApiError = Static<typeof ApiError>;
