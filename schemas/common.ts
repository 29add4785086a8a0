// Shared JSON Schema primitives. Every schema in this folder is plain JSON Schema 2020-12 at run time
// (TypeBox builds the objects), so the same values drive ajv validation, OpenAPI 3.1 and the TS types.
import { Type, type TSchema, type Static } from '@sinclair/typebox';

export { Type, type Static, type TSchema };

export const Uuid = (opts: { description?: string } = {}) =>
  Type.String({ format: 'uuid', ...opts });

export const DateTime = (opts: { description?: string } = {}) =>
  Type.String({ format: 'date-time', ...opts });

/** A value that may be null: emitted as a type array, not anyOf, so ajv strict mode stays quiet. */
export const Nullable = <T extends TSchema>(schema: T) =>
  Type.Unsafe<Static<T> | null>({
    ...schema,
    type: [schema.type as string, 'null'],
    ...(Array.isArray(schema.enum) ? { enum: [...schema.enum, null] } : {}),
  });

/** A string enum as `{type: 'string', enum: [...]}`: one ajv error and a readable OpenAPI entry. */
export const StringEnum = <const T extends readonly string[]>(values: T, opts: { description?: string; default?: T[number] } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...opts });

export const E164 = (opts: { description?: string } = {}) =>
  Type.String({ format: 'e164', description: 'E.164 number: "+", a first digit 1-9, then 1 to 14 digits', ...opts });

export const Metadata = (opts: { description?: string } = {}) =>
  Type.Record(Type.String(), Type.Unknown(), { description: 'Free-form key/value pairs', ...opts });

/** `limit`/`offset` query parameters with per-list defaults and ranges. */
export const Pagination = (limit: { default: number; maximum: number }) =>
  Type.Object({
    limit: Type.Integer({ minimum: 1, maximum: limit.maximum, default: limit.default }),
    offset: Type.Integer({ minimum: 0, maximum: 2147483647, default: 0 }),
  });

/** The spec's paginated list envelope. */
export const ListEnvelope = <T extends TSchema>(item: T, name: string) =>
  Type.Object(
    {
      items: Type.Array(item),
      total: Type.Integer({ minimum: 0 }),
      limit: Type.Integer({ minimum: 1 }),
      offset: Type.Integer({ minimum: 0 }),
    },
    { title: `${name}List`, additionalProperties: false },
  );

/** Strict request objects: unknown fields are rejected with 422 `extra_forbidden` (see docs/decisions.md). */
export const Strict = <T extends Parameters<typeof Type.Object>[0]>(props: T, opts: { title?: string; description?: string; examples?: unknown[] } = {}) =>
  Type.Object(props, { additionalProperties: false, ...opts });
