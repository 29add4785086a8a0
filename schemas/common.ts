// Shared JSON Schema primitives. Every schema in this folder is plain JSON Schema 2020-12 at run time
// (TypeBox builds the objects), so the same values drive ajv validation, OpenAPI 3.1 and the TS types.
import { Type, type TSchema, type Static } from '@sinclair/typebox';

export { Type, type Static, type TSchema };

export const Uuid = (opts: { description?: string } = {}) =>
  Type.String({ format: 'uuid', ...opts });

/**
 * A path id the spec types as a plain string (`call_id`, `phone_number_id`, the credential DELETE): any
 * string up to 100 characters is well-formed, and one that is not an id the platform issued (a uuid) names
 * nothing, so it is a 404, never a 422. `x-not-found` names the resource for that 404 (http/mount.ts).
 * Path ids the spec types as uuid, or does not show, use Uuid(): a malformed one is a 422 `uuid_parsing`.
 */
export const PathId = (resource: string, opts: { description?: string } = {}) =>
  Type.String({ minLength: 1, maxLength: 100, 'x-not-found': resource, description: `${resource} id (a uuid; any other string is a 404)`, ...opts });

export const DateTime = (opts: { description?: string } = {}) =>
  Type.String({ format: 'date-time', ...opts });

/** A value that may be null: emitted as a type array, not anyOf, so ajv strict mode stays quiet. */
export const Nullable = <T extends TSchema>(schema: T) =>
  Type.Unsafe<Static<T> | null>({
    ...schema,
    type: [schema.type as string, 'null'],
    ...(Array.isArray(schema.enum) ? { enum: [...(schema.enum as unknown[]), null] } : {}),
  });

/** A string enum as `{type: 'string', enum: [...]}`: one ajv error and a readable OpenAPI entry. */
export const StringEnum = <const T extends readonly string[]>(values: T, opts: { description?: string; default?: T[number] } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...opts });

export const E164 = (opts: { description?: string } = {}) =>
  Type.String({ format: 'e164', description: 'E.164 number: "+", a first digit 1-9, then 1 to 14 digits', ...opts });

export const Metadata = (opts: { description?: string } = {}) =>
  Type.Record(Type.String(), Type.Unknown(), { description: 'Free-form key/value pairs', ...opts });

/**
 * `limit`/`offset` query parameters with per-list defaults and ranges. Both are filled in by validation, so
 * handlers see numbers; the OpenAPI document marks them optional (a parameter with a default is). Unknown query
 * parameters are a 422 `extra_forbidden` on every list (docs/decisions/spec-unknown-query-parameters.md).
 */
export const Pagination = (limit: { default: number; maximum: number }) =>
  Type.Object(
    {
      limit: Type.Integer({ minimum: 1, maximum: limit.maximum, default: limit.default }),
      offset: Type.Integer({ minimum: 0, maximum: 2147483647, default: 0 }),
    },
    { additionalProperties: false },
  );

/**
 * `required` for a subschema (an if/then branch, a oneOf branch) over properties its parent declares. The names
 * are repeated under `properties` (as `{}`: no further constraint) so that linters and generators that read the
 * branch alone see each required name defined.
 */
export const RequiredHere = (names: string[]) => ({ required: names, properties: Object.fromEntries(names.map((n) => [n, {}])) });

/**
 * Marks a request object whose named fields are alternatives, exactly one to be given. The OpenAPI document
 * states it as `oneOf` of one `required` per field (http/openapi.ts), so generators see it; the handler checks it
 * and answers a 422 naming the fields (validation leaves it to the handler for that message).
 */
export const exactlyOneOf = (names: string[]) => ({ 'x-exactly-one-of': names });

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

/**
 * Why a saved resource cannot work as it is (Stripe-style: it still saves; the answer says what will fail and how
 * to fix it). `code` is stable, `message` a sentence for people, `field` the field at fault. The codes are
 * shared/agent-problems.ts's: the same ones a call that cannot start reports in its `error`.
 */
export const Warnings = Type.Array(
  Type.Object(
    {
      code: Type.String({
        description:
          'Stable code: `provider_key_missing` (no key for the provider in the organisation\'s credentials or the platform\'s environment), ' +
          '`model_host_refused` (the base_url is a private host the model egress rule refuses; LLM_PRIVATE_HOSTS allows it), ' +
          '`local_model_missing` (provider `local` on a platform with neither LOCAL_LLM_BASE_URL nor LLM_MODEL_PATH)',
        examples: ['provider_key_missing'],
      }),
      message: Type.String({ description: 'What will fail and how to fix it' }),
      field: Nullable(Type.String({ description: 'The field at fault (`provider`, `base_url`, `llm_id`, `transcriber.provider`, `tts.provider`); null when none' })),
    },
    { title: 'Warning', additionalProperties: false },
  ),
  {
    description:
      'Why calls with this configuration would fail now, as the platform is set up: answered by create, update and get by id (absent in lists), ' +
      'recomputed on every read, empty when nothing is wrong. The resource is saved either way.',
  },
);
