// Tool rules that JSON Schema alone can't express (fields per type, JSON Schema `parameters`, header names,
// transfer destinations), sealing of header values and signing secrets, and the shape of a tool on read.
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { Secrets } from '../../crypto/secrets.ts';
import { ValidationFailure } from '../../http/errors.ts';
import type { Db } from '../../db/types.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import type { Tool, ToolType } from '../../../../schemas/tools.ts';
import { newSigningSecret } from '../../../../shared/signing.ts';
import { liveToolsByIds, type SealedColumn, type ToolRow } from './queries.ts';

export type { SealedColumn, ToolRow } from './queries.ts';

export const DEFAULT_TIMEOUT_MS = 5000;
export const DEFAULT_PARAMETERS = { type: 'object', properties: {} };
/** How long the previous signing secret keeps signing after a rotation. */
export const PREVIOUS_SECRET_GRACE_HOURS = 24;

const BUILTIN_DESCRIPTIONS: Record<Exclude<ToolType, 'function'>, string> = {
  end_call: 'End the call once the conversation is complete or the caller asks to hang up.',
  transfer_call: 'Transfer the caller to a human when they ask for one or the request is out of scope.',
  send_dtmf: 'Send DTMF tones (keypad digits) to navigate a phone menu.',
  do_not_call: 'Add the person to the do-not-call list when they ask not to be called again.',
};

const FIELDS_BY_TYPE: Record<ToolType, Set<string>> = {
  function: new Set(['type', 'name', 'description', 'parameters', 'url', 'method', 'headers', 'timeout_ms']),
  end_call: new Set(['type', 'name', 'description']),
  transfer_call: new Set(['type', 'name', 'description', 'destination', 'mode']),
  send_dtmf: new Set(['type', 'name', 'description']),
  do_not_call: new Set(['type', 'name', 'description']),
};

// Headers the platform sets itself on requests to tool servers.
const RESERVED_HEADERS = new Set(['host', 'content-length', 'content-type', 'transfer-encoding', 'connection', 'webhook-id', 'webhook-timestamp', 'webhook-signature']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const E164 = /^\+[1-9]\d{1,14}$/;
const SIP_URI = /^sips?:([^@\s]+@)?[A-Za-z0-9.-]+(:\d{1,5})?(;[^\s]*)?$/;

export interface ToolInput {
  name?: string | undefined;
  description?: string | null | undefined;
  parameters?: Record<string, unknown> | undefined;
  url?: string | undefined;
  method?: string | undefined;
  headers?: Record<string, string> | undefined;
  timeout_ms?: number | undefined;
  destination?: string | undefined;
  mode?: string | undefined;
}

/** Every problem with the body of a tool of type `type`, with locs under `body`. */
export function toolProblems(type: ToolType, body: ToolInput): ValidationErrorItem[] {
  const problems: ValidationErrorItem[] = [];
  for (const [field, value] of Object.entries(body)) {
    if (!FIELDS_BY_TYPE[type].has(field)) {
      problems.push({ loc: ['body', field], msg: `Extra inputs are not permitted for tools of type '${type}'`, type: 'extra_forbidden', input: value });
    }
  }
  if (body.parameters !== undefined) problems.push(...parametersProblems(body.parameters));
  problems.push(...warmProblems(body));
  if (body.headers !== undefined) {
    const seen = new Set<string>();
    for (const name of Object.keys(body.headers)) {
      const lower = name.toLowerCase();
      let msg: string | null = null;
      if (!HEADER_NAME.test(name)) msg = 'Header names are HTTP tokens: letters, digits and !#$%&\'*+.^_`|~-';
      else if (RESERVED_HEADERS.has(lower)) msg = `Header '${name}' is set by the platform`;
      else if (seen.has(lower)) msg = `Header '${name}' is given twice (names are case-insensitive)`;
      if (msg) problems.push({ loc: ['body', 'headers', name], msg, type: 'value_error', input: name });
      seen.add(lower);
    }
  }
  if (body.destination !== undefined && !E164.test(body.destination) && !SIP_URI.test(body.destination)) {
    problems.push({
      loc: ['body', 'destination'],
      msg: 'Input should be an E.164 phone number (+14155550123) or a SIP URI (sip:user@host)',
      type: 'value_error',
      input: body.destination,
    });
  }
  return problems;
}

/**
 * A warm transfer dials a phone number on the number's outbound trunk (like an outbound call): a sip: URI
 * cannot be dialled that way. Checked with the destination the tool will have (`current`, on update).
 */
export function warmProblems(body: ToolInput, current: { destination: string | null; mode: string | null } = { destination: null, mode: null }): ValidationErrorItem[] {
  const mode = body.mode ?? current.mode;
  const destination = body.destination ?? current.destination;
  if (mode !== 'warm' || !destination || E164.test(destination)) return [];
  const loc = body.destination !== undefined ? 'destination' : 'mode';
  return [{ loc: ['body', loc], msg: 'A warm transfer dials an E.164 phone number (+14155550123), not a SIP URI', type: 'value_error', input: body[loc] ?? null }];
}

/** `parameters` must be a valid JSON Schema 2020-12 of type object: what LLM function calling accepts. */
function parametersProblems(schema: Record<string, unknown>): ValidationErrorItem[] {
  // A fresh instance per check: ajv caches compiled schemas, and these come from users.
  const ajv = new Ajv2020({ strict: false, validateFormats: false });
  if (!ajv.validateSchema(schema)) {
    const err = (ajv.errors ?? []).find((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf') ?? ajv.errors?.[0];
    const path = (err?.instancePath ?? '').split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
    return [{ loc: ['body', 'parameters', ...path], msg: `Invalid JSON Schema: ${err?.message ?? 'not a schema'}`, type: 'json_schema_invalid', input: schema }];
  }
  if (schema.type !== 'object') {
    return [{ loc: ['body', 'parameters', 'type'], msg: "The parameters schema must have type 'object'", type: 'json_schema_invalid', input: schema.type ?? null }];
  }
  try {
    ajv.compile(schema);
  } catch (err) {
    return [{ loc: ['body', 'parameters'], msg: `Invalid JSON Schema: ${(err as Error).message}`, type: 'json_schema_invalid', input: schema }];
  }
  return [];
}

export function assertTool(type: ToolType, body: ToolInput): void {
  const problems = toolProblems(type, body);
  if (problems.length) throw new ValidationFailure(problems);
}

export const defaultName = (type: ToolType, name: string | undefined) => name ?? type;
export const defaultDescription = (type: ToolType, d: string | null | undefined): string | null =>
  d !== undefined ? d : type === 'function' ? null : BUILTIN_DESCRIPTIONS[type];

/** `****` + last 4 characters for values of 16 characters or more; shorter values are masked entirely. */
export const maskHeaderValue = (v: string) => (v.length >= 16 ? `****${v.slice(-4)}` : '****');

/**
 * New header map for an update: a value equal to the masked form of the stored value of the same header
 * (names compared case-insensitively) keeps the stored value, so a client can send back what it read.
 */
export function mergeHeaders(stored: Record<string, string>, incoming: Record<string, string>): Record<string, string> {
  const byLower = new Map(Object.entries(stored).map(([k, v]) => [k.toLowerCase(), v]));
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(incoming)) {
    const old = byLower.get(k.toLowerCase());
    out[k] = old !== undefined && v === maskHeaderValue(old) ? old : v;
  }
  return out;
}

const headersAad = (id: string) => `tool:${id}:headers`;
const signingAad = (id: string) => `tool:${id}:signing`;


export function sealHeaders(secrets: Secrets, toolId: string, headers: Record<string, string>): SealedColumn {
  return secrets.seal(JSON.stringify(headers), headersAad(toolId));
}

export function openHeaders(secrets: Secrets, toolId: string, sealed: SealedColumn | null): Record<string, string> {
  return sealed ? (JSON.parse(secrets.open(sealed, headersAad(toolId))) as Record<string, string>) : {};
}

export function newSealedSigningSecret(secrets: Secrets, toolId: string): { secret: string; sealed: SealedColumn } {
  const secret = newSigningSecret();
  return { secret, sealed: secrets.seal(secret, signingAad(toolId)) };
}


export const sealedHeadersOf = (r: ToolRow): SealedColumn | null =>
  r.headers_ciphertext ? { ciphertext: r.headers_ciphertext, keyVersion: r.headers_key_version! } : null;

/** The public shape: header values masked, secrets left out. */
export function toolView(secrets: Secrets, r: ToolRow): Tool {
  const isFunction = r.type === 'function';
  const headers = isFunction ? openHeaders(secrets, r.id, sealedHeadersOf(r)) : null;
  return {
    id: r.id,
    type: r.type,
    name: r.name,
    description: r.description,
    parameters: r.parameters,
    url: r.url,
    method: r.method as Tool['method'],
    headers: headers ? Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, maskHeaderValue(v)])) : null,
    timeout_ms: r.timeout_ms,
    destination: r.destination,
    mode: (r.transfer_mode as Tool['mode']) ?? null,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
  };
}

/** What the media worker needs to call a tool: plain headers and the secrets to sign with (newest first). */
export interface ToolForCall {
  id: string;
  type: ToolType;
  name: string;
  description: string | null;
  parameters: Record<string, unknown> | null;
  url: string | null;
  method: string | null;
  headers: Record<string, string>;
  timeout_ms: number | null;
  destination: string | null;
  transfer_mode: string | null;
  signing_secrets: string[];
}

export function toolForCall(secrets: Secrets, r: ToolRow, now = new Date()): ToolForCall {
  const signing: string[] = [];
  if (r.signing_secret_ciphertext) {
    signing.push(secrets.open({ ciphertext: r.signing_secret_ciphertext, keyVersion: r.signing_secret_key_version! }, signingAad(r.id)));
  }
  if (r.previous_secret_ciphertext && r.previous_secret_expires_at && r.previous_secret_expires_at > now) {
    signing.push(secrets.open({ ciphertext: r.previous_secret_ciphertext, keyVersion: r.previous_secret_key_version! }, signingAad(r.id)));
  }
  return {
    id: r.id,
    type: r.type,
    name: r.name,
    description: r.description,
    parameters: r.parameters,
    url: r.url,
    method: r.method,
    headers: openHeaders(secrets, r.id, sealedHeadersOf(r)),
    timeout_ms: r.timeout_ms,
    destination: r.destination,
    transfer_mode: r.transfer_mode,
    signing_secrets: signing,
  };
}

/** Tools of an org by id, decrypted for a call (live tools only, in the order of `ids`). */
export async function loadToolsForCall(db: Db, secrets: Secrets, orgId: string, ids: string[]): Promise<ToolForCall[]> {
  if (!ids.length) return [];
  const rows = await liveToolsByIds(db, orgId, ids);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.flatMap((id) => (byId.has(id) ? [toolForCall(secrets, byId.get(id)!)] : []));
}
