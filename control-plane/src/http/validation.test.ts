// 422 bodies are exactly the spec's shape: {detail: [{loc, msg, type, input?, ctx?}]}.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../test/support/platform.ts';

let tp: TestPlatform;
let key: string;

beforeAll(async () => {
  tp = await usePlatform({ BODY_LIMIT: '2kb' });
  ({ key } = await tp.createOrg());
});

describe('422 validation errors', () => {
  it('reports a missing required field', async () => {
    const res = await tp.request('post', '/v1/api-keys', { key, body: {} });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: {} }] });
  });

  it('reports a wrong type', async () => {
    const res = await tp.request('post', '/v1/api-keys', { key, body: { name: 42 } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ type: 'string_type', loc: ['body', 'name'], msg: 'Input should be a valid string', input: 42 }] });
  });

  it('reports too short strings with ctx', async () => {
    const res = await tp.request('post', '/v1/api-keys', { key, body: { name: '' } });
    expect(res.body).toEqual({
      detail: [{ type: 'string_too_short', loc: ['body', 'name'], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } }],
    });
  });

  it('rejects unknown fields', async () => {
    const res = await tp.request('post', '/v1/api-keys', { key, body: { name: 'x', colour: 'red' } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ type: 'extra_forbidden', loc: ['body', 'colour'], msg: 'Extra inputs are not permitted', input: 'red' }] });
  });

  it('reports several errors at once', async () => {
    const res = await tp.request('post', '/v1/api-keys', { key, body: { expires_at: 'soon', extra: 1 } });
    expect(res.status).toBe(422);
    const types = (res.body.detail as { type: string; loc: unknown[] }[]).map((d) => [d.type, d.loc]);
    expect(types).toEqual(
      expect.arrayContaining([
        ['missing', ['body', 'name']],
        ['extra_forbidden', ['body', 'extra']],
        ['datetime_parsing', ['body', 'expires_at']],
      ]),
    );
  });

  it('reports out-of-range query values', async () => {
    const res = await tp.request('get', '/v1/audit-events?limit=0', { key });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [{ type: 'greater_than_equal', loc: ['query', 'limit'], msg: 'Input should be greater than or equal to 1', input: 0, ctx: { ge: 1 } }],
    });
    const high = await tp.request('get', '/v1/audit-events?limit=201', { key });
    expect(high.body).toEqual({
      detail: [{ type: 'less_than_equal', loc: ['query', 'limit'], msg: 'Input should be less than or equal to 200', input: 201, ctx: { le: 200 } }],
    });
  });

  it('reports a non-integer query value', async () => {
    const res = await tp.request('get', '/v1/audit-events?offset=abc', { key });
    expect(res.body).toEqual({ detail: [{ type: 'int_type', loc: ['query', 'offset'], msg: 'Input should be a valid integer', input: 'abc' }] });
  });

  it('reports bad enums', async () => {
    const res = await tp.request('get', '/v1/audit-events?actor=you', { key });
    expect(res.body).toEqual({
      detail: [{ type: 'enum', loc: ['query', 'actor'], msg: "Input should be 'me'", input: 'you', ctx: { expected: "'me'" } }],
    });
  });

  it('reports bad date-time formats', async () => {
    const res = await tp.request('get', '/v1/audit-events?since=yesterday', { key });
    expect(res.body).toEqual({
      detail: [{ type: 'datetime_parsing', loc: ['query', 'since'], msg: 'Input should be a valid datetime in RFC 3339 format', input: 'yesterday' }],
    });
  });

  it('reports a malformed uuid in the path', async () => {
    const res = await tp.request('delete', '/v1/api-keys/not-a-uuid', { key });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ type: 'uuid_parsing', loc: ['path', 'api_key_id'], msg: 'Input should be a valid UUID', input: 'not-a-uuid' }] });
  });

  it('reports malformed JSON', async () => {
    const res = await tp.request('post', '/v1/api-keys', { key, rawBody: '{"name": ', headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toHaveLength(1);
    expect(res.body.detail[0]).toMatchObject({ type: 'json_invalid', loc: ['body', expect.any(Number)], msg: 'JSON decode error', input: {} });
    expect(res.body.detail[0].ctx.error).toEqual(expect.any(String));
  });

  it('reports a body that is not an object', async () => {
    const res = await tp.request('post', '/v1/api-keys', { key, body: [1, 2] });
    expect(res.body).toEqual({ detail: [{ type: 'dict_type', loc: ['body'], msg: 'Input should be a valid dictionary', input: [1, 2] }] });
  });

  it('reports a wrong content type', async () => {
    const res = await tp.request('post', '/v1/api-keys', { key, rawBody: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [{ type: 'content_type', loc: ['header', 'content-type'], msg: 'Content-Type must be application/json', input: 'application/x-www-form-urlencoded' }],
    });
  });

  it('answers 413 for a body over the limit', async () => {
    const res = await tp.request('post', '/v1/api-keys', { key, body: { name: 'x'.repeat(5000) } });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ detail: 'Request body exceeds the limit of 2kb', type: 'payload_too_large', request_id: res.headers.get('x-request-id') });
  });

  it('a future-date check that needs code still answers in the same shape', async () => {
    const res = await tp.request('post', '/v1/api-keys', { key, body: { name: 'x', expires_at: '2001-01-01T00:00:00Z' } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ type: 'datetime_future', loc: ['body', 'expires_at'], msg: 'Input should be in the future', input: '2001-01-01T00:00:00Z' }] });
  });
});

describe('input PostgreSQL cannot hold, and hostile shapes', () => {
  it('rejects NUL characters and unpaired surrogates in bodies and queries with 422', async () => {
    const nul = await tp.request('post', '/v1/api-keys', { key, rawBody: '{"name":"a\\u0000b"}', headers: { 'content-type': 'application/json' } });
    expect(nul.status).toBe(422);
    expect(nul.body).toEqual({
      detail: [{ type: 'string_invalid_characters', loc: ['body', 'name'], msg: 'String must not contain NUL characters or unpaired surrogates' }],
    });
    const surrogate = await tp.request('post', '/v1/api-keys', { key, rawBody: '{"name":"\\ud800"}', headers: { 'content-type': 'application/json' } });
    expect(surrogate.status).toBe(422);
    expect(surrogate.body.detail[0].type).toBe('string_invalid_characters');
    const q = await tp.request('get', '/v1/audit-events?resource_type=a%00b', { key });
    expect(q.status).toBe(422);
    expect(q.body.detail[0]).toMatchObject({ type: 'string_invalid_characters', loc: ['query', 'resource_type'] });
  });

  it('rejects JSON nested deeper than 32 levels without echoing it', async () => {
    const deep = '{"name":"x","expires_at":' + '['.repeat(100) + ']'.repeat(100) + '}';
    const res = await tp.request('post', '/v1/api-keys', { key, rawBody: deep, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ detail: [{ type: 'json_too_deep', loc: ['body'], msg: 'JSON nests deeper than 32 levels', ctx: { max_depth: 32 } }] });
  });

  it('bounds offset so the database never sees an out-of-range value', async () => {
    const res = await tp.request('get', '/v1/audit-events?offset=99999999999999999999', { key });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ type: 'less_than_equal', loc: ['query', 'offset'] });
    const ok = await tp.request('get', '/v1/audit-events?offset=2147483647', { key });
    expect(ok.status).toBe(200);
    expect(ok.body.items).toEqual([]);
  });

  it('reports path, query and body problems together', async () => {
    const res = await tp.request('delete', '/v1/api-keys/nope', { key });
    expect(res.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([['path', 'api_key_id']]);
    const both = await tp.request('get', '/v1/audit-events?limit=0&since=x', { key });
    expect(both.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([['query', 'limit'], ['query', 'since']]);
  });
});

describe('other errors', () => {
  it('a wrong method is 405 with the error body and Allow', async () => {
    const res = await tp.request('put', '/v1/api-keys', { key });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toContain('GET');
    expect(res.body).toEqual({ detail: 'Method not allowed', type: 'method_not_allowed', request_id: res.headers.get('x-request-id') });
  });

  it('unknown routes are 404 with the error body', async () => {
    const res = await tp.request('get', '/v1/nope', { key });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ detail: 'Route not found', type: 'not_found', request_id: res.headers.get('x-request-id') });
  });

  it('every response carries X-Request-Id and honours a sane incoming one', async () => {
    const res = await tp.request('get', '/health', { headers: { 'x-request-id': 'trace-1234567' } });
    expect(res.headers.get('x-request-id')).toBe('trace-1234567');
    const gen = await tp.request('get', '/health', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(gen.headers.get('x-request-id')).toMatch(/^req_[0-9A-Za-z]+$/);
  });
});
