// ajv validators compiled once per route, and the mapping from ajv errors to the spec's 422 `detail` items
// (Pydantic-style `type` and `msg`, so clients that know FastAPI-shaped errors need nothing new).
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { TSchema } from '@sinclair/typebox';
import type { ValidationErrorItem } from '../../../schemas/errors.ts';
import { ValidationFailure } from './errors.ts';

export type Source = 'body' | 'query' | 'path';

// ajv-formats is CommonJS; its default export arrives wrapped under Node's ESM loader.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

const E164_RE = /^\+[1-9]\d{1,14}$/;

function makeAjv(coerce: boolean): Ajv2020 {
  const ajv = new Ajv2020({
    // All errors at once, as Pydantic reports them; the body size limit bounds the cost.
    allErrors: true,
    useDefaults: true,
    coerceTypes: coerce ? 'array' : false,
    strict: true,
    strictRequired: false,
    allowUnionTypes: true,
    // Errors carry their schema: a nested object's example names the shape a wrong type should have had.
    verbose: true,
  });
  addFormats(ajv);
  ajv.addFormat('e164', E164_RE);
  ajv.addFormat('http-url', (v: string) => {
    if (!URL.canParse(v)) return false;
    const u = new URL(v);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '';
  });
  ajv.addKeyword({ keyword: 'x-secret' });
  ajv.addKeyword({ keyword: 'x-not-found' });
  // Form annotations (grouping and human labels of a schema's fields, schemas/agents.ts): documentation only.
  ajv.addKeyword({ keyword: 'x-groups' });
  ajv.addKeyword({ keyword: 'x-labels' });
  // Alternatives of which exactly one is given (schemas/common.ts exactlyOneOf): the handler checks them, with
  // a 422 that names both fields; the OpenAPI document states them as oneOf.
  ajv.addKeyword({ keyword: 'x-exactly-one-of' });
  return ajv;
}

export const bodyAjv = makeAjv(false);
export const queryAjv = makeAjv(true);

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * Path parameters declared with PathId (schemas/common.ts): their names and the resource a non-uuid value
 * is reported as missing. Checked after validation, so a request with a bad body is still a 422.
 */
export function opaqueIds(schema: TSchema | undefined): [string, string][] {
  const props = (schema as { properties?: Record<string, { 'x-not-found'?: string }> } | undefined)?.properties ?? {};
  return Object.entries(props).flatMap(([name, p]) => (p['x-not-found'] ? [[name, p['x-not-found']] as [string, string]] : []));
}

export const isUuid = (v: string) => UUID_RE.test(v);

export function compile(schema: TSchema, source: Source): ValidateFunction {
  return (source === 'body' ? bodyAjv : queryAjv).compile(schema);
}

/** Validates in place (defaults are applied to `value`); returns the 422 items (empty when valid). */
export function problems(validate: ValidateFunction, value: unknown, source: Source): ValidationErrorItem[] {
  const unsafe = unsafeStrings(value, source);
  if (unsafe.length) return unsafe;
  if (validate(value)) return [];
  return toDetail(validate.errors ?? [], source, value);
}

/** Validates in place, or throws a ValidationFailure. */
export function check(validate: ValidateFunction, value: unknown, source: Source): void {
  const found = problems(validate, value, source);
  if (found.length) throw new ValidationFailure(found);
}

/**
 * Strings PostgreSQL cannot store: NUL characters (text and jsonb refuse them) and unpaired UTF-16
 * surrogates (not valid UTF-8). Rejected up front as 422, in keys as well as values.
 */
function unsafeStrings(value: unknown, source: Source): ValidationErrorItem[] {
  const out: ValidationErrorItem[] = [];
  const bad = (s: string) => s.includes('\u0000') || !s.isWellFormed();
  const stack: [unknown, (string | number)[]][] = [[value, []]];
  while (stack.length && out.length < 20) {
    const [v, loc] = stack.pop()!;
    if (typeof v === 'string') {
      if (bad(v)) out.push({ type: 'string_invalid_characters', loc: [source, ...loc], msg: 'String must not contain NUL characters or unpaired surrogates' });
    } else if (v !== null && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        const key: string | number = Array.isArray(v) ? Number(k) : k;
        if (typeof key === 'string' && bad(key)) {
          out.push({ type: 'string_invalid_characters', loc: [source, ...loc], msg: 'Keys must not contain NUL characters or unpaired surrogates' });
          continue;
        }
        stack.push([child, [...loc, key]]);
      }
    }
  }
  return out;
}

/** Echoing a huge value back would make the error larger than the request; drop `input` past 2 KB. */
function capped(input: unknown): unknown {
  if (input === null || typeof input !== 'object') return typeof input === 'string' && input.length > 2048 ? input.slice(0, 2048) : input;
  const text = JSON.stringify(input);
  return text.length > 2048 ? undefined : input;
}

const TYPE_NAMES: Record<string, [string, string]> = {
  string: ['string_type', 'Input should be a valid string'],
  integer: ['int_type', 'Input should be a valid integer'],
  number: ['float_type', 'Input should be a valid number'],
  boolean: ['bool_type', 'Input should be a valid boolean'],
  object: ['dict_type', 'Input should be a valid dictionary'],
  array: ['list_type', 'Input should be a valid list'],
  null: ['none_required', 'Input should be None'],
};

const FORMATS: Record<string, [string, string]> = {
  uuid: ['uuid_parsing', 'Input should be a valid UUID'],
  'date-time': ['datetime_parsing', 'Input should be a valid datetime in RFC 3339 format'],
  date: ['date_parsing', 'Input should be a valid date in the format YYYY-MM-DD'],
  uri: ['url_parsing', 'Input should be a valid URL'],
  'http-url': ['url_parsing', 'Input should be a valid http or https URL'],
  email: ['value_error', 'value is not a valid email address'],
  e164: ['phone_number_format', 'Input should be an E.164 phone number: "+", a first digit 1-9, then 1 to 14 more digits'],
};

function pointerToLoc(pointer: string): (string | number)[] {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((seg) => (/^(0|[1-9]\d*)$/.test(seg) ? Number(seg) : seg));
}

function valueAt(root: unknown, loc: (string | number)[]): unknown {
  let cur: unknown = root;
  for (const k of loc) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string | number, unknown>)[k];
  }
  return cur;
}

/**
 * The expected shape of a nested object, from its schema's title and first example (`ScriptLine`: `{"say": ...}`), so
 * that a plain string where an object belongs says what to send instead. Empty without both.
 */
function shapeOf(schema: unknown): string {
  const s = schema as { title?: unknown; examples?: unknown[] } | undefined;
  if (typeof s?.title !== 'string' || !Array.isArray(s.examples) || s.examples[0] === undefined) return '';
  return `: a ${s.title} object, such as ${JSON.stringify(s.examples[0])}`;
}

const quote = (v: unknown) => (typeof v === 'string' ? `'${v}'` : JSON.stringify(v));
const orList = (vals: unknown[]) =>
  vals.length <= 1 ? vals.map(quote).join('') : `${vals.slice(0, -1).map(quote).join(', ')} or ${quote(vals[vals.length - 1])}`;

export function toDetail(errors: ErrorObject[], source: Source, root: unknown): ValidationErrorItem[] {
  // An error on a path makes errors on its ancestors' `anyOf`/`if` bookkeeping noise; keep the specific ones.
  const specific = errors.filter((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf' && e.keyword !== 'if');
  const picked = specific.length ? specific : errors;
  const out: ValidationErrorItem[] = [];
  const seen = new Set<string>();
  for (const e of picked) {
    const base = pointerToLoc(e.instancePath);
    const input = valueAt(root, base);
    let item: ValidationErrorItem;
    const p = e.params as Record<string, unknown>;
    switch (e.keyword) {
      case 'required': {
        const field = String(p.missingProperty);
        item = { type: 'missing', loc: [source, ...base, field], msg: 'Field required', input: input ?? null };
        break;
      }
      case 'additionalProperties': {
        const field = String(p.additionalProperty);
        item = { type: 'extra_forbidden', loc: [source, ...base, field], msg: 'Extra inputs are not permitted', input: valueAt(input, [field]) };
        break;
      }
      case 'type': {
        const wanted = String(p.type).split(',');
        const first = wanted.find((t) => t !== 'null') ?? wanted[0]!;
        const [type, msg] = TYPE_NAMES[first] ?? ['type_error', `Input should be of type ${String(p.type)}`];
        item = { type, loc: [source, ...base], msg: `${msg}${first === 'object' && base.length ? shapeOf(e.parentSchema) : ''}`, input };
        break;
      }
      case 'minimum':
      case 'maximum':
      case 'exclusiveMinimum':
      case 'exclusiveMaximum': {
        const map = {
          minimum: ['greater_than_equal', 'greater than or equal to', 'ge'],
          maximum: ['less_than_equal', 'less than or equal to', 'le'],
          exclusiveMinimum: ['greater_than', 'greater than', 'gt'],
          exclusiveMaximum: ['less_than', 'less than', 'lt'],
        } as const;
        const [type, words, key] = map[e.keyword];
        item = { type, loc: [source, ...base], msg: `Input should be ${words} ${String(p.limit)}`, input, ctx: { [key]: p.limit } };
        break;
      }
      case 'multipleOf':
        item = { type: 'multiple_of', loc: [source, ...base], msg: `Input should be a multiple of ${String(p.multipleOf)}`, input, ctx: { multiple_of: p.multipleOf } };
        break;
      case 'minLength':
        item = { type: 'string_too_short', loc: [source, ...base], msg: `String should have at least ${String(p.limit)} character${p.limit === 1 ? '' : 's'}`, input, ctx: { min_length: p.limit } };
        break;
      case 'maxLength':
        item = { type: 'string_too_long', loc: [source, ...base], msg: `String should have at most ${String(p.limit)} character${p.limit === 1 ? '' : 's'}`, input, ctx: { max_length: p.limit } };
        break;
      case 'minItems':
        item = { type: 'too_short', loc: [source, ...base], msg: `List should have at least ${String(p.limit)} item${p.limit === 1 ? '' : 's'}`, input, ctx: { min_length: p.limit } };
        break;
      case 'maxItems':
        item = { type: 'too_long', loc: [source, ...base], msg: `List should have at most ${String(p.limit)} item${p.limit === 1 ? '' : 's'}`, input, ctx: { max_length: p.limit } };
        break;
      case 'minProperties':
        item = { type: 'too_short', loc: [source, ...base], msg: `Object should have at least ${String(p.limit)} field${p.limit === 1 ? '' : 's'}`, input, ctx: { min_length: p.limit } };
        break;
      case 'maxProperties':
        item = { type: 'too_long', loc: [source, ...base], msg: `Object should have at most ${String(p.limit)} fields`, input, ctx: { max_length: p.limit } };
        break;
      case 'uniqueItems':
        item = { type: 'list_unique', loc: [source, ...base], msg: 'List items should be unique', input };
        break;
      case 'enum': {
        const allowed = (p.allowedValues as unknown[]).filter((v) => v !== null);
        item = { type: 'enum', loc: [source, ...base], msg: `Input should be ${orList(allowed)}`, input, ctx: { expected: orList(allowed) } };
        break;
      }
      case 'const':
        item = { type: 'literal_error', loc: [source, ...base], msg: `Input should be ${quote(p.allowedValue)}`, input, ctx: { expected: quote(p.allowedValue) } };
        break;
      case 'pattern':
        item = { type: 'string_pattern_mismatch', loc: [source, ...base], msg: `String should match pattern '${String(p.pattern)}'`, input, ctx: { pattern: p.pattern } };
        break;
      case 'format': {
        const [type, msg] = FORMATS[String(p.format)] ?? ['value_error', `Input should match format ${String(p.format)}`];
        item = { type, loc: [source, ...base], msg, input };
        break;
      }
      default:
        item = { type: 'value_error', loc: [source, ...base], msg: e.message ?? 'Invalid value', input };
    }
    item.input = capped(item.input);
    if (item.input === undefined) delete item.input;
    const key = JSON.stringify([item.loc, item.type]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(item);
  }
  return out;
}
