// Tools: per-type rules with exact 422 bodies, header encryption and masking, signing secrets verified by the
// standardwebhooks package, tenancy, audit and delete rules.
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { signatureHeaders } from '../../../../shared/signing.ts';
import { loadToolsForCall, maskHeaderValue, mergeHeaders } from './service.ts';

let tp: TestPlatform;
let key: string;
let orgId: string;
let other: { orgId: string; key: string };

const SECRET_HEADER = 'Bearer sk_live_51HxQ2abcdEFGH9f2c';

beforeAll(async () => {
  tp = await usePlatform();
  ({ key, orgId } = await tp.createOrg('tools'));
  other = await tp.createOrg('other');
});

const create = (body: Record<string, unknown>, k = key) => tp.request('post', '/v1/tools', { key: k, body });
const auditOf = (resourceId: string) =>
  tp.sql<{ action: string; details: Record<string, unknown> }[]>`
    select action, details from audit_events where resource_id = ${resourceId} order by created_at, id`;
const fn = (extra: Record<string, unknown> = {}) => ({ type: 'function', name: 'lookup_order', url: 'https://api.example.com/lookup', ...extra });

describe('POST /v1/tools: function tools', () => {
  it('creates a function tool with defaults, masks headers and returns the signing secret once', async () => {
    const parameters = { type: 'object', properties: { order_number: { type: 'string' } }, required: ['order_number'] };
    const res = await create(fn({ description: 'Look up an order.', parameters, headers: { Authorization: SECRET_HEADER, 'X-Team': 'ops' } }));
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      type: 'function',
      name: 'lookup_order',
      description: 'Look up an order.',
      parameters,
      url: 'https://api.example.com/lookup',
      method: 'POST',
      headers: { Authorization: '****9f2c', 'X-Team': '****' },
      timeout_ms: 5000,
      destination: null,
      mode: null,
      signing_secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    expect(await auditOf(res.body.id)).toEqual([{ action: 'tool.create', details: { type: 'function', name: 'lookup_order' } }]);

    const got = await tp.request('get', `/v1/tools/${res.body.id}`, { key });
    expect(got.body).toEqual((({ signing_secret: _s, ...rest }) => rest)(res.body));
  });

  it('keeps header values and the signing secret encrypted at rest', async () => {
    const res = await create(fn({ headers: { Authorization: SECRET_HEADER } }));
    const [row] = await tp.sql`select * from tools where id = ${res.body.id}`;
    const dump = JSON.stringify(row, (_k, v) => (v && v.type === 'Buffer' ? Buffer.from(v.data).toString('latin1') : v));
    expect(dump).not.toContain(SECRET_HEADER);
    expect(dump).not.toContain('sk_live');
    expect(dump).not.toContain(res.body.signing_secret);
    expect(dump).not.toContain(res.body.signing_secret.slice(6));
    expect(row!.headers_key_version).toBe(1);
    // Round trip: the worker's view decrypts both.
    const [forCall] = await loadToolsForCall(tp.sql, tp.platform.services.secrets, orgId, [res.body.id]);
    expect(forCall!.headers).toEqual({ Authorization: SECRET_HEADER });
    expect(forCall!.signing_secrets).toEqual([res.body.signing_secret]);
    // The ciphertext is bound to its row: moved onto another tool it does not open.
    const copy = await create(fn({ name: 'copy' }));
    await tp.sql`update tools set headers_ciphertext = ${row!.headers_ciphertext} where id = ${copy.body.id}`;
    await expect(loadToolsForCall(tp.sql, tp.platform.services.secrets, orgId, [copy.body.id])).rejects.toThrow();
    await tp.sql`delete from tools where id = ${copy.body.id}`;
  });

  it('signs requests so that the standardwebhooks package verifies them', async () => {
    const res = await create(fn({ name: 'signed' }));
    const [forCall] = await loadToolsForCall(tp.sql, tp.platform.services.secrets, orgId, [res.body.id]);
    const body = JSON.stringify({ tool: 'signed', arguments: { order_number: 'A-1' } });
    const headers = signatureHeaders(forCall!.signing_secrets, 'msg_tool_1', body);
    expect(new Webhook(res.body.signing_secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
  });

  it('rotates the signing secret; the previous one keeps signing during the grace period', async () => {
    const res = await create(fn({ name: 'rotating' }));
    const rot = await tp.request('post', `/v1/tools/${res.body.id}/rotate-signing-secret`, { key });
    expect(rot.status).toBe(200);
    expect(rot.body.signing_secret).toMatch(/^whsec_/);
    expect(rot.body.signing_secret).not.toBe(res.body.signing_secret);
    const [forCall] = await loadToolsForCall(tp.sql, tp.platform.services.secrets, orgId, [res.body.id]);
    expect(forCall!.signing_secrets).toEqual([rot.body.signing_secret, res.body.signing_secret]);
    const body = '{"x":1}';
    const headers = signatureHeaders(forCall!.signing_secrets, 'msg_2', body);
    expect(new Webhook(res.body.signing_secret).verify(body, { ...headers })).toEqual({ x: 1 });
    expect(new Webhook(rot.body.signing_secret).verify(body, { ...headers })).toEqual({ x: 1 });
    // Once the grace period is over only the new secret signs.
    await tp.sql`update tools set previous_secret_expires_at = now() - interval '1 second' where id = ${res.body.id}`;
    const [later] = await loadToolsForCall(tp.sql, tp.platform.services.secrets, orgId, [res.body.id]);
    expect(later!.signing_secrets).toEqual([rot.body.signing_secret]);
    expect((await auditOf(res.body.id)).map((a) => a.action)).toEqual(['tool.create', 'tool.rotate_signing_secret']);
  });

  it('422: name and url missing for a function tool', async () => {
    const res = await create({ type: 'function' });
    expect(res.body).toEqual({
      detail: [
        { type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: { type: 'function' } },
        { type: 'missing', loc: ['body', 'url'], msg: 'Field required', input: { type: 'function' } },
      ],
    });
  });

  it('422: bad name, url, timeout and method', async () => {
    const res = await create(fn({ name: 'look up!', url: 'not a url', timeout_ms: 50, method: 'HEAD' }));
    expect(res.body).toEqual({
      detail: expect.arrayContaining([
        { type: 'string_pattern_mismatch', loc: ['body', 'name'], msg: "String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", input: 'look up!', ctx: { pattern: '^[a-zA-Z0-9_-]{1,64}$' } },
        { type: 'url_parsing', loc: ['body', 'url'], msg: 'Input should be a valid http or https URL', input: 'not a url' },
        { type: 'greater_than_equal', loc: ['body', 'timeout_ms'], msg: 'Input should be greater than or equal to 100', input: 50, ctx: { ge: 100 } },
        {
          type: 'enum',
          loc: ['body', 'method'],
          msg: "Input should be 'GET', 'POST', 'PUT', 'PATCH' or 'DELETE'",
          input: 'HEAD',
          ctx: { expected: "'GET', 'POST', 'PUT', 'PATCH' or 'DELETE'" },
        },
      ]),
    });
    expect(res.body.detail).toHaveLength(4);
  });

  it('422: parameters that are not a valid JSON Schema, at the offending keyword', async () => {
    const res = await create(fn({ parameters: { type: 'object', properties: { city: { type: 'strng' } } } }));
    expect(res.status).toBe(422);
    expect(res.body.detail).toHaveLength(1);
    expect(res.body.detail[0]).toMatchObject({ type: 'json_schema_invalid', loc: ['body', 'parameters', 'properties', 'city', 'type'] });
    expect(res.body.detail[0].msg).toMatch(/^Invalid JSON Schema: /);
  });

  it('422: parameters not of type object, or with an unresolvable $ref', async () => {
    const arr = await create(fn({ parameters: { type: 'array' } }));
    expect(arr.body).toEqual({
      detail: [{ type: 'json_schema_invalid', loc: ['body', 'parameters', 'type'], msg: "The parameters schema must have type 'object'", input: 'array' }],
    });
    const ref = await create(fn({ parameters: { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } } }));
    expect(ref.body.detail).toEqual([
      { type: 'json_schema_invalid', loc: ['body', 'parameters'], msg: expect.stringMatching(/^Invalid JSON Schema: can't resolve reference/), input: { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } } },
    ]);
  });

  it('422: reserved, duplicate and malformed header names; header values with newlines', async () => {
    const res = await create(fn({ headers: { 'Content-Type': 'text/plain', 'x-a': '1', 'X-A': '2', 'bad name': 'v', 'X-Inject': 'a\r\nHost: evil' } }));
    expect(res.body).toEqual({
      detail: [
        { type: 'string_pattern_mismatch', loc: ['body', 'headers', 'X-Inject'], msg: "String should match pattern '^[^\\r\\n\\x00]*$'", input: 'a\r\nHost: evil', ctx: { pattern: '^[^\\r\\n\\x00]*$' } },
      ],
    });
    const res2 = await create(fn({ headers: { 'Content-Type': 'text/plain', 'x-a': '1', 'X-A': '2', 'bad name': 'v' } }));
    expect(res2.body).toEqual({
      detail: [
        { type: 'value_error', loc: ['body', 'headers', 'Content-Type'], msg: "Header 'Content-Type' is set by the platform", input: 'Content-Type' },
        { type: 'value_error', loc: ['body', 'headers', 'X-A'], msg: "Header 'X-A' is given twice (names are case-insensitive)", input: 'X-A' },
        { type: 'value_error', loc: ['body', 'headers', 'bad name'], msg: "Header names are HTTP tokens: letters, digits and !#$%&'*+.^_`|~-", input: 'bad name' },
      ],
    });
  });
});

describe('POST /v1/tools: built-in tools', () => {
  it('creates end_call and send_dtmf with default names and descriptions, and no secret', async () => {
    const end = await create({ type: 'end_call' });
    expect(end.status).toBe(201);
    expect(end.body).toEqual({
      id: expect.any(String),
      type: 'end_call',
      name: 'end_call',
      description: 'End the call once the conversation is complete or the caller asks to hang up.',
      parameters: null,
      url: null,
      method: null,
      headers: null,
      timeout_ms: null,
      destination: null,
      mode: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const dtmf = await create({ type: 'send_dtmf', name: 'press_keys', description: null });
    expect(dtmf.body).toMatchObject({ type: 'send_dtmf', name: 'press_keys', description: null });
    const dnc = await create({ type: 'do_not_call' });
    expect(dnc.body).toMatchObject({ type: 'do_not_call', name: 'do_not_call', description: expect.stringContaining('do-not-call list') });
    expect((await tp.request('post', `/v1/tools/${end.body.id}/rotate-signing-secret`, { key })).status).toBe(409);
  });

  it('creates transfer_call to an E.164 number or a SIP URI', async () => {
    for (const destination of ['+14155550123', 'sip:support@pbx.example.com', 'sips:100@10.0.0.1:5061;transport=tls']) {
      const res = await create({ type: 'transfer_call', name: 'transfer_to_sales', destination });
      expect(res.status, destination).toBe(201);
      expect(res.body).toMatchObject({ type: 'transfer_call', destination, mode: 'blind' });
    }
  });

  it('422: transfer_call without destination, or with a malformed one', async () => {
    expect((await create({ type: 'transfer_call' })).body).toEqual({
      detail: [{ type: 'missing', loc: ['body', 'destination'], msg: 'Field required', input: { type: 'transfer_call' } }],
    });
    expect((await create({ type: 'transfer_call', destination: '4155550123' })).body).toEqual({
      detail: [{ type: 'value_error', loc: ['body', 'destination'], msg: 'Input should be an E.164 phone number (+14155550123) or a SIP URI (sip:user@host)', input: '4155550123' }],
    });
  });

  it('422: fields of another tool type, and unknown types', async () => {
    expect((await create({ type: 'end_call', url: 'https://x.example', destination: '+14155550123' })).body).toEqual({
      detail: [
        { type: 'extra_forbidden', loc: ['body', 'url'], msg: "Extra inputs are not permitted for tools of type 'end_call'", input: 'https://x.example' },
        { type: 'extra_forbidden', loc: ['body', 'destination'], msg: "Extra inputs are not permitted for tools of type 'end_call'", input: '+14155550123' },
      ],
    });
    expect((await create({ type: 'hangup' })).body).toEqual({
      detail: [
        {
          type: 'enum',
          loc: ['body', 'type'],
          msg: "Input should be 'function', 'end_call', 'transfer_call', 'send_dtmf' or 'do_not_call'",
          input: 'hangup',
          ctx: { expected: "'function', 'end_call', 'transfer_call', 'send_dtmf' or 'do_not_call'" },
        },
      ],
    });
  });
});

describe('GET /v1/tools', () => {
  it('lists newest first, filters by type, masks headers', async () => {
    const { key: k } = await tp.createOrg('lister');
    await create(fn({ headers: { Authorization: SECRET_HEADER } }), k);
    await create({ type: 'end_call' }, k);
    const all = await tp.request('get', '/v1/tools', { key: k });
    expect(all.body).toMatchObject({ total: 2, limit: 50, offset: 0 });
    expect(all.body.items.map((t: { type: string }) => t.type)).toEqual(['end_call', 'function']);
    expect(all.body.items[1].headers).toEqual({ Authorization: '****9f2c' });
    expect(JSON.stringify(all.body)).not.toContain('sk_live');
    expect(all.body.items[1].signing_secret).toBeUndefined();
    const fns = await tp.request('get', '/v1/tools?type=function', { key: k });
    expect(fns.body).toMatchObject({ total: 1, items: [{ type: 'function' }] });
  });
});

describe('PATCH /v1/tools/{tool_id}', () => {
  it('updates partially; masked header values keep the stored value', async () => {
    const { body } = await create(fn({ name: 'patchable', headers: { Authorization: SECRET_HEADER, 'X-Old': 'gone' } }));
    const res = await tp.request('patch', `/v1/tools/${body.id}`, {
      key,
      body: { timeout_ms: 9000, method: 'GET', headers: { Authorization: '****9f2c', 'X-New': 'fresh-value-0123456789' } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'patchable', timeout_ms: 9000, method: 'GET', headers: { Authorization: '****9f2c', 'X-New': '****6789' } });
    const [forCall] = await loadToolsForCall(tp.sql, tp.platform.services.secrets, orgId, [body.id]);
    expect(forCall!.headers).toEqual({ Authorization: SECRET_HEADER, 'X-New': 'fresh-value-0123456789' });
    expect((await auditOf(body.id))[1]).toEqual({ action: 'tool.update', details: { fields: ['timeout_ms', 'method', 'headers'] } });
  });

  it('422: type cannot change; fields of another type are refused', async () => {
    const { body } = await create({ type: 'end_call', name: 'bye' });
    expect((await tp.request('patch', `/v1/tools/${body.id}`, { key, body: { type: 'function' } })).body).toEqual({
      detail: [{ type: 'extra_forbidden', loc: ['body', 'type'], msg: 'Extra inputs are not permitted', input: 'function' }],
    });
    expect((await tp.request('patch', `/v1/tools/${body.id}`, { key, body: { headers: {} } })).body).toEqual({
      detail: [{ type: 'extra_forbidden', loc: ['body', 'headers'], msg: "Extra inputs are not permitted for tools of type 'end_call'", input: {} }],
    });
  });

  it('422: a rename that would clash inside a model that links the tool', async () => {
    const a = await create(fn({ name: 'tool_a' }));
    const b = await create(fn({ name: 'tool_b' }));
    const model = await tp.request('post', '/v1/models', { key, body: { name: 'Clashy', model: 'gpt-4o', tool_ids: [a.body.id, b.body.id] } });
    expect(model.status).toBe(201);
    const res = await tp.request('patch', `/v1/tools/${b.body.id}`, { key, body: { name: 'tool_a' } });
    expect(res.body).toEqual({
      detail: [{ type: 'value_error', loc: ['body', 'name'], msg: "LLM model 'Clashy' links another tool with this name; tools of one model need distinct names", input: 'tool_a' }],
    });
  });
});

describe('tenancy and deletion', () => {
  it("answers 404 for another organisation's tool on every route", async () => {
    const { body } = await create(fn({ name: 'private' }));
    for (const [method, path, b] of [
      ['get', '', undefined],
      ['patch', '', { name: 'x' }],
      ['delete', '', undefined],
      ['post', '/rotate-signing-secret', undefined],
    ] as const) {
      const res = await tp.request(method, `/v1/tools/${body.id}${path}`, { key: other.key, ...(b ? { body: b } : {}) });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body).toEqual({ detail: 'Tool not found', type: 'not_found', request_id: res.headers.get('x-request-id') });
    }
    expect((await tp.request('get', `/v1/tools/${randomUUID()}`, { key })).status).toBe(404);
  });

  it('deletes (204); a tool linked to a live model answers 409 naming the models', async () => {
    const t = await create(fn({ name: 'linked' }));
    const m = await tp.request('post', '/v1/models', { key, body: { name: 'Uses linked', model: 'gpt-4o', tool_ids: [t.body.id] } });
    const res = await tp.request('delete', `/v1/tools/${t.body.id}`, { key });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      detail: 'Tool is linked to 1 LLM model; remove it from their tool_ids first',
      type: 'conflict',
      request_id: res.headers.get('x-request-id'),
      models: [{ id: m.body.id, name: 'Uses linked' }],
    });
    await tp.request('patch', `/v1/models/${m.body.id}`, { key, body: { tool_ids: [] } });
    expect((await tp.request('delete', `/v1/tools/${t.body.id}`, { key })).status).toBe(204);
    expect((await tp.request('get', `/v1/tools/${t.body.id}`, { key })).status).toBe(404);
    expect((await auditOf(t.body.id)).map((a) => a.action)).toEqual(['tool.create', 'tool.delete']);
    // A deleted tool can no longer be linked.
    const relink = await tp.request('patch', `/v1/models/${m.body.id}`, { key, body: { tool_ids: [t.body.id] } });
    expect(relink.body.detail[0]).toMatchObject({ type: 'reference_not_found', loc: ['body', 'tool_ids', 0] });
  });
});

describe('header helpers', () => {
  it('masks and merges', () => {
    expect(maskHeaderValue('0123456789abcdef')).toBe('****cdef');
    expect(maskHeaderValue('0123456789abcde')).toBe('****');
    expect(mergeHeaders({ Authorization: 'secret-value-1234567' }, { authorization: '****4567', 'X-B': '****' })).toEqual({
      authorization: 'secret-value-1234567',
      'X-B': '****',
    });
  });
});
