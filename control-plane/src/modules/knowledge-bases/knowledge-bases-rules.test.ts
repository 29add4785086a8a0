// Knowledge bases on a real platform (as knowledge-bases.test.ts): validation (every 422 and 413), the token budget
// under concurrent jobs, deletion, retry after a crash, and tenant isolation.
import { describe, expect, it } from 'vitest';
import { setTestHooks } from './jobs.ts';
import { erroredSources } from './queries.ts';
import { chunkSections } from './chunk.ts';
import { WORKER, chunksOf, key, orgId, para, post, tp, waitJob } from './knowledge-bases.test-support.ts';

describe('validation', () => {
  const kbPath = async () => `/v1/knowledge-bases/${(await tp.request('post', '/v1/knowledge-bases', { key, body: { name: 'v' } })).body.kb_id}/sources`;

  it('lists with the spec envelope and 422 on limit/offset', async () => {
    const ok = await tp.request('get', '/v1/knowledge-bases', { key });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ limit: 50, offset: 0, total: expect.any(Number), items: expect.any(Array) });
    for (const [q, loc, type] of [
      ['limit=0', 'limit', 'greater_than_equal'],
      ['limit=101', 'limit', 'less_than_equal'],
      ['offset=-1', 'offset', 'greater_than_equal'],
      ['limit=abc', 'limit', 'int_type'],
    ] as const) {
      const res = await tp.request('get', `/v1/knowledge-bases?${q}`, { key });
      expect(res.status, q).toBe(422);
      expect(res.body.detail[0]).toMatchObject({ loc: ['query', loc], type });
    }
  });

  it('422 on base fields', async () => {
    const res = await tp.request('post', '/v1/knowledge-bases', { key, body: { name: '', chunk_size: 10, mode: 'all', multilingual: 'yes', colour: 1 } });
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(
      expect.arrayContaining([
        ['body', 'name'],
        ['body', 'chunk_size'],
        ['body', 'mode'],
        ['body', 'multilingual'],
        ['body', 'colour'],
      ]),
    );
  });

  it('422 on every form problem, in the detail shape', async () => {
    const path = await kbPath();
    const cases: [Record<string, string | [Blob, string]>, (string | number)[], string][] = [
      [{}, ['body', 'type'], 'missing'],
      [{ type: 'pdf' }, ['body', 'type'], 'enum'],
      [{ type: 'url' }, ['body', 'source'], 'missing'],
      [{ type: 'text' }, ['body', 'source'], 'missing'],
      [{ type: 'file' }, ['body', 'file'], 'missing'],
      [{ type: 'text', text: 'hello', source: 'https://example.com/' }, ['body', 'text'], 'value_error'],
      [{ type: 'url', source: `https://example.com/${'a'.repeat(2100)}` }, ['body', 'source'], 'string_too_long'],
      [{ type: 'text', text: 'hello', colour: 'red' }, ['body', 'colour'], 'extra_forbidden'],
      [
        { type: 'file', file: [new Blob([new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0])], { type: 'image/png' }), 'logo.png'] },
        ['body', 'file'],
        'unsupported_file_type',
      ],
      [{ type: 'file', file: [new Blob(['not a pdf'], { type: 'application/pdf' }), 'fake.pdf'] }, ['body', 'file'], 'unsupported_file_type'],
      [
        { type: 'file', file: [new Blob(['MZ\u0000\u0001binary'], { type: 'application/octet-stream' }), 'setup.exe'] },
        ['body', 'file'],
        'unsupported_file_type',
      ],
      [{ type: 'file', file: [new Blob([''], { type: 'text/plain' }), 'empty.txt'] }, ['body', 'file'], 'value_error'],
    ];
    for (const [fields, loc, type] of cases) {
      const res = await post(path, fields);
      expect(res.status, JSON.stringify(fields)).toBe(422);
      expect(res.body.detail, JSON.stringify(fields)).toContainEqual(expect.objectContaining({ loc, type }));
    }
    const created = await post('/v1/knowledge-bases/sources', { type: 'text', text: 'x', chunk_size: '9', multilingual: 'maybe' });
    expect(created.status).toBe(422);
    expect(created.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([
      ['body', 'chunk_size'],
      ['body', 'multilingual'],
    ]);
    const json = await tp.request('post', path, { key, body: { type: 'text', text: 'x' } });
    expect(json.status).toBe(422);
    expect(json.body.detail[0]).toMatchObject({ loc: ['header', 'content-type'], type: 'content_type' });
  });

  it('413 over the file and text limits, with a clear message', async () => {
    const path = await kbPath();
    const big = await post(path, { type: 'file', file: [new Blob(['a'.repeat(300_001)], { type: 'text/plain' }), 'big.txt'] });
    expect(big.status).toBe(413);
    expect(big.body).toMatchObject({ type: 'payload_too_large', detail: 'File "big.txt" exceeds the limit of 293 KiB' });
    const text = await post(path, { type: 'text', text: 'b'.repeat(100_001) });
    expect(text.status).toBe(413);
    expect(text.body.detail).toMatch(/Field "text" exceeds the limit/);
    expect((await tp.sql`select count(*)::int as n from knowledge_sources where file_name = 'big.txt'`)[0]!.n).toBe(0);
  });

  it("LLM models link the org's bases; unknown or foreign ids are 422 at body.knowledge_base_ids", async () => {
    const own = (await tp.request('post', '/v1/knowledge-bases', { key, body: { name: 'linked' } })).body.kb_id;
    const other = await tp.createOrg('kb-other');
    const foreign = (await tp.request('post', '/v1/knowledge-bases', { key: other.key, body: { name: 'theirs' } })).body.kb_id;
    const ok = await tp.request('post', '/v1/models', { key, body: { name: 'm', model: 'gpt-4o-mini', knowledge_base_ids: [own] } });
    expect(ok.status).toBe(201);
    expect(ok.body.knowledge_base_ids).toEqual([own]);
    const bad = await tp.request('post', '/v1/models', {
      key,
      body: { name: 'm', model: 'gpt-4o-mini', knowledge_base_ids: [own, foreign, '00000000-0000-4000-8000-000000000000'] },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([
      ['body', 'knowledge_base_ids', 1],
      ['body', 'knowledge_base_ids', 2],
    ]);
    // Deleting the base unlinks it.
    expect((await tp.request('delete', `/v1/knowledge-bases/${own}`, { key })).status).toBe(204);
    expect((await tp.request('get', `/v1/models/${ok.body.id}`, { key })).body.knowledge_base_ids).toEqual([]);
  });
});

describe('budget, deletion and retries', () => {
  it('two concurrent jobs cannot overshoot the budget; the loser ends in error with nothing indexed; deletion gives tokens back', async () => {
    const org = await tp.createOrg('budget');
    const text = (topic: string) => Array.from({ length: 20 }, (_, i) => `Paragraph ${i} on ${topic}: ${para(topic, 2)}`).join('\n\n');
    const need = Math.max(...['alpha', 'beta'].map((t) => chunkSections([{ heading: '', text: text(t) }], 512).reduce((n, c) => n + c.token_count, 0)));
    await tp.sql`update orgs set kb_token_budget = ${Math.floor(need * 1.5)} where id = ${org.orgId}`;
    const kb = (await tp.request('post', '/v1/knowledge-bases', { key: org.key, body: { name: 'b' } })).body.kb_id;
    const [a, b] = await Promise.all(['alpha', 'beta'].map((t) => post(`/v1/knowledge-bases/${kb}/sources`, { type: 'text', text: text(t) }, org.key)));
    const jobs = await Promise.all([a!, b!].map((r) => waitJob(kb, r.body.job.job_id, org.key)));
    expect(jobs.map((j) => j.status).sort()).toEqual(['failed', 'succeeded']);
    const base = (await tp.request('get', `/v1/knowledge-bases/${kb}`, { key: org.key })).body;
    const ready = base.sources.find((s: { status: string }) => s.status === 'ready');
    const errored = base.sources.find((s: { status: string }) => s.status === 'error');
    expect(errored.error_message).toMatch(/needs \d+ tokens but only \d+ of the organisation's knowledge token budget \(\d+\) are left/);
    expect(errored).toMatchObject({ chunk_count: 0, token_count: 0 });
    expect(await chunksOf(errored.source_id)).toEqual([]);
    expect(base.total_tokens).toBe(ready.token_count);
    expect(await erroredSources(tp.sql, org.orgId)).toEqual([{ knowledge_base_id: kb, source_id: errored.source_id, error_message: errored.error_message }]);
    expect((await tp.request('get', '/v1/usage', { key: org.key })).body.kb_token_budget).toBe(Math.floor(need * 1.5));
    expect((await tp.request('get', '/v1/activity/summary', { key: org.key })).body.error_signals.kb_sources_errored).toEqual([
      { knowledge_base_id: kb, source_id: errored.source_id, error_message: errored.error_message },
    ]);

    // Deleting the ready source removes its chunks and frees its tokens: the other text now fits.
    expect((await tp.request('delete', `/v1/knowledge-bases/${kb}/sources/${ready.source_id}`, { key: org.key })).status).toBe(204);
    expect(await chunksOf(ready.source_id)).toEqual([]);
    expect((await tp.request('get', `/v1/knowledge-bases/${kb}`, { key: org.key })).body.total_tokens).toBe(0);
    const again = await post(`/v1/knowledge-bases/${kb}/sources`, { type: 'text', text: text('beta') }, org.key);
    expect((await waitJob(kb, again.body.job.job_id, org.key)).status).toBe('succeeded');
  }, 60_000);

  it('a crash in the middle of writing chunks is retried and leaves exactly one copy', async () => {
    let crashes = 0;
    setTestHooks({
      afterBatch: () => {
        if (crashes++ === 0) throw new Error('simulated crash after the first batch');
      },
    });
    try {
      const text = Array.from({ length: 700 }, (_, i) => `Fact ${i}: the answer to question ${i} is ${i * 7}.`).join('\n\n');
      const kb = (await tp.request('post', '/v1/knowledge-bases', { key, body: { name: 'retry', chunk_size: 64 } })).body.kb_id;
      const res = await post(`/v1/knowledge-bases/${kb}/sources`, { type: 'text', text });
      const job = await waitJob(kb, res.body.job.job_id);
      expect(job).toMatchObject({ status: 'succeeded', attempts: 2 });
      const src = (await tp.request('get', `/v1/knowledge-bases/${kb}/sources/${res.body.source.source_id}`, { key })).body;
      expect(src.chunk_count).toBeGreaterThan(100); // more than one batch
      const chunks = await chunksOf(src.source_id);
      expect(chunks.length).toBe(src.chunk_count);
      expect(new Set(chunks.map((c) => c.ordinal)).size).toBe(chunks.length);
      expect(chunks.reduce((n, c) => n + c.token_count, 0)).toBe(src.token_count);
    } finally {
      setTestHooks(undefined);
    }
  }, 60_000);
});

describe('tenant isolation', () => {
  it('another organisation gets 404 for bases, sources and jobs, and never sees them in lists', async () => {
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', text: 'Isolation canary: the vault code is 7391.' });
    const { kb_id, source_id } = res.body.source;
    const other = await tp.createOrg('iso');
    for (const path of [
      `/v1/knowledge-bases/${kb_id}`,
      `/v1/knowledge-bases/${kb_id}/sources`,
      `/v1/knowledge-bases/${kb_id}/sources/${source_id}`,
      `/v1/knowledge-bases/${kb_id}/jobs/${res.body.job.job_id}`,
    ]) {
      expect((await tp.request('get', path, { key: other.key })).status, path).toBe(404);
    }
    expect((await post(`/v1/knowledge-bases/${kb_id}/sources`, { type: 'text', text: 'intrusion' }, other.key)).status).toBe(404);
    expect((await tp.request('delete', `/v1/knowledge-bases/${kb_id}`, { key: other.key })).status).toBe(404);
    expect(JSON.stringify((await tp.request('get', '/v1/knowledge-bases', { key: other.key })).body)).not.toContain(kb_id);
  });

  it("the worker search returns the chunks of the call's own bases only", async () => {
    const res = await post('/v1/knowledge-bases/sources', { type: 'text', text: 'The vault code of the Geneva office is 7391.' });
    const kbId = res.body.source.kb_id;
    await waitJob(kbId, res.body.job.job_id);
    const model = (await tp.request('post', '/v1/models', { key, body: { name: 'kb', model: 'gpt-4o-mini', knowledge_base_ids: [kbId] } })).body;
    const agent = (await tp.request('post', '/v1/agents', { key, body: { name: 'kb', llm_id: model.id } })).body;
    const [call] = await tp.sql<
      { id: string }[]
    >`insert into calls (org_id, agent_id, type, status) values (${orgId}, ${agent.id}, 'web', 'in_progress') returning id`;

    // Another org whose model row names the first org's base (only possible by writing the database directly).
    const other = await tp.createOrg('iso-search');
    const om = (await tp.request('post', '/v1/models', { key: other.key, body: { name: 'x', model: 'gpt-4o-mini' } })).body;
    await tp.sql`update llm_models set knowledge_base_ids = array[${kbId}::uuid] where id = ${om.id}`;
    const oa = (await tp.request('post', '/v1/agents', { key: other.key, body: { name: 'x', llm_id: om.id } })).body;
    const [ocall] = await tp.sql<
      { id: string }[]
    >`insert into calls (org_id, agent_id, type, status) values (${other.orgId}, ${oa.id}, 'web', 'in_progress') returning id`;

    const search = (callId: string, body: object) =>
      tp.request('post', `/internal/v1/calls/${callId}/knowledge/search`, {
        headers: { authorization: `Bearer ${WORKER}`, 'x-call-capability': tp.capability(callId) },
        body,
      });
    const mine = await search(call!.id, { query: 'What is the vault code in Geneva?', top_k: 3 });
    expect(mine.status).toBe(200);
    expect(mine.body.chunks[0]).toMatchObject({
      content: 'The vault code of the Geneva office is 7391.',
      source_id: res.body.source.source_id,
      kb_id: kbId,
      score: expect.any(Number),
    });
    expect((await search(ocall!.id, { query: 'What is the vault code in Geneva?', top_k: 3 })).body).toEqual({ chunks: [] });
    // The token budget of the turn bounds what comes back.
    expect((await search(call!.id, { query: 'vault code Geneva', top_k: 3, max_tokens: 2 })).body).toEqual({ chunks: [] });
    expect((await search(call!.id, { query: 'x', top_k: 0 })).status).toBe(422);
  });
});
