// Agents: effective_system_prompt, the list, PATCH, tenancy, audit, and the delete rules (phone numbers, soft delete).
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { auditOf, bareLlmId, create, key, llmId, orgId, other, patch, tp, webhook } from './agents.test-support.ts';

describe('effective_system_prompt', () => {
  it('prepends the job description as a # Role block; null in lists', async () => {
    const res = await create({ name: 'Role', llm_id: llmId, job_description: 'Receptionist of Acme Dental.' });
    const expected = '# Role\nReceptionist of Acme Dental.\n\nAnswer for {{company}}. Be brief.';
    expect(res.body.effective_system_prompt).toBe(expected);
    expect((await tp.request('get', `/v1/agents/${res.body.id}`, { key })).body.effective_system_prompt).toBe(expected);
    const list = await tp.request('get', `/v1/agents?llm_id=${llmId}`, { key });
    const item = list.body.items.find((a: { id: string }) => a.id === res.body.id);
    expect(item.job_description).toBe('Receptionist of Acme Dental.');
    expect(item.effective_system_prompt).toBeNull();
  });

  it('is the role block alone when the model has no prompt, and null with neither', async () => {
    const onlyRole = await create({ name: 'r', llm_id: bareLlmId, job_description: 'Concierge.' });
    expect(onlyRole.body.effective_system_prompt).toBe('# Role\nConcierge.');
    const none = await create({ name: 'n', llm_id: bareLlmId });
    expect((await tp.request('get', `/v1/agents/${none.body.id}`, { key })).body.effective_system_prompt).toBeNull();
  });

  it('follows changes of the model and of the job description', async () => {
    const model = (await tp.request('post', '/v1/models', { key, body: { name: 'm', model: 'gpt-4o', system_prompt: 'v1' } })).body.id;
    const a = await create({ name: 'f', llm_id: model, job_description: 'Role A.' });
    await tp.request('patch', `/v1/models/${model}`, { key, body: { system_prompt: 'v2' } });
    expect((await tp.request('get', `/v1/agents/${a.body.id}`, { key })).body.effective_system_prompt).toBe('# Role\nRole A.\n\nv2');
    const p = await patch(a.body.id, { job_description: null });
    expect(p.body.effective_system_prompt).toBe('v2');
  });
});

describe('GET /v1/agents', () => {
  it('lists newest first with the envelope and paginates', async () => {
    const { key: k } = await tp.createOrg('lister');
    const m = (await tp.request('post', '/v1/models', { key: k, body: { name: 'm', model: 'gpt-4o' } })).body.id;
    for (const name of ['one', 'two', 'three']) await create({ name, llm_id: m }, k);
    const all = await tp.request('get', '/v1/agents', { key: k });
    expect(all.body).toMatchObject({ total: 3, limit: 50, offset: 0 });
    expect(all.body.items.map((a: { name: string }) => a.name)).toEqual(['three', 'two', 'one']);
    const page = await tp.request('get', '/v1/agents?limit=2&offset=2', { key: k });
    expect(page.body).toMatchObject({ total: 3, limit: 2, offset: 2, items: [{ name: 'one' }] });
    expect((await tp.request('get', '/v1/agents?limit=0', { key: k })).status).toBe(422);
  });
});

describe('PATCH /v1/agents/{agent_id}', () => {
  it('updates partially; transcriber and tts are replaced whole; audited with the field names', async () => {
    const a = await create({ name: 'p', llm_id: llmId, first_message: 'Hi', metadata: { a: 1 } });
    const res = await patch(a.body.id, { name: 'renamed', tts: { provider: 'cartesia' }, first_message: null, speed: 0.75, metadata: { b: 2 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'renamed',
      tts: { provider: 'cartesia', model: 'sonic-2', voice_id: 'f786b574-daa5-4673-aa0c-cbe3e8534c02' },
      transcriber: { provider: 'deepgram', model: 'nova-3', language: 'en-US' },
      first_message: null,
      speed: 0.75,
      metadata: { b: 2 },
      max_duration_seconds: 1800,
    });
    const lang = await patch(a.body.id, { language: 'fr-FR' });
    expect(lang.body).toMatchObject({ language: 'fr-FR', transcriber: { language: 'en-US' } });
    expect(await auditOf(a.body.id)).toEqual([
      { action: 'agent.create', details: { name: 'p', llm_id: llmId, version: 1 } },
      { action: 'agent.update', details: { fields: ['name', 'tts', 'first_message', 'speed', 'metadata'], version: 2 } },
      { action: 'agent.update', details: { fields: ['language'], version: 3 } },
    ]);
  });

  it('PATCH turn_taking merges over the defaults; responsiveness alone re-derives the delays and keeps the rest', async () => {
    const a = await create({
      name: 'tt',
      llm_id: llmId,
      turn_taking: { detection: 'vad', endpointing: 'dynamic', min_delay_ms: 100, max_delay_ms: 900, ignore_backchannels: true },
    });
    const other = await patch(a.body.id, { speed: 1.5 });
    expect(other.body.turn_taking).toEqual(a.body.turn_taking);
    const coarse = await patch(a.body.id, { responsiveness: 0 });
    expect(coarse.body).toMatchObject({
      responsiveness: 0,
      turn_taking: { detection: 'vad', endpointing: 'dynamic', min_delay_ms: 1000, max_delay_ms: 4000, ignore_backchannels: true },
    });
    const partial = await patch(a.body.id, { turn_taking: { preemptive_generation: false } });
    // A turn_taking object replaces the stored one: the defaults (the transcript detector) plus the fields given,
    // with the delays of the agent's responsiveness (0) for that detector.
    expect(partial.body.turn_taking).toEqual({
      detection: 'transcript',
      endpointing: 'fixed',
      min_delay_ms: 2500,
      max_delay_ms: 4000,
      preemptive_generation: false,
      ignore_backchannels: true,
      barge_in: 'pause',
    });
    const both = await patch(a.body.id, { responsiveness: 1, turn_taking: { min_delay_ms: 250 } });
    expect(both.body.turn_taking).toMatchObject({ min_delay_ms: 250, max_delay_ms: 1000 });
    expect((await tp.request('get', `/v1/agents/${a.body.id}`, { key })).body.turn_taking).toEqual(both.body.turn_taking);
  });

  it('moves to another model and webhook of the organisation; clears the webhook with null', async () => {
    const a = await create({ name: 'm', llm_id: llmId });
    const hook = await webhook(orgId);
    const res = await patch(a.body.id, { llm_id: bareLlmId, webhook_id: hook });
    expect(res.body).toMatchObject({ llm_id: bareLlmId, webhook_id: hook, effective_system_prompt: null });
    expect((await patch(a.body.id, { webhook_id: null })).body.webhook_id).toBeNull();
  });

  it('422 on PATCH: null llm_id, unknown voice, foreign model', async () => {
    const a = await create({ name: 'x', llm_id: llmId });
    expect((await patch(a.body.id, { llm_id: null })).body).toEqual({
      detail: [{ type: 'string_type', loc: ['body', 'llm_id'], msg: 'Input should be a valid string', input: null }],
    });
    expect((await patch(a.body.id, { tts: { provider: 'local', voice_id: 'klingon' } })).body.detail).toEqual([
      { type: 'unknown_voice', loc: ['body', 'tts', 'voice_id'], msg: "Unknown local voice 'klingon'; see GET /v1/voices?provider=local", input: 'klingon' },
    ]);
    const theirModel = (await tp.request('post', '/v1/models', { key: other.key, body: { name: 'm', model: 'gpt-4o' } })).body.id;
    expect((await patch(a.body.id, { llm_id: theirModel })).body.detail[0]).toMatchObject({ type: 'reference_not_found', loc: ['body', 'llm_id'] });
  });

  it('a webhook deleted for good leaves its agents without one', async () => {
    const hook = await webhook(orgId);
    const a = await create({ name: 'w', llm_id: llmId, webhook_id: hook });
    await tp.sql`delete from webhooks where id = ${hook}`;
    expect((await tp.request('get', `/v1/agents/${a.body.id}`, { key })).body.webhook_id).toBeNull();
  });
});

describe('tenancy and deletion', () => {
  it("answers 404 for another organisation's agent on every route", async () => {
    const a = await create({ name: 'private', llm_id: llmId });
    for (const [method, b] of [
      ['get', undefined],
      ['patch', { name: 'x' }],
      ['delete', undefined],
    ] as const) {
      const res = await tp.request(method, `/v1/agents/${a.body.id}`, { key: other.key, ...(b ? { body: b } : {}) });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Agent not found', type: 'not_found', request_id: res.headers.get('x-request-id') });
    }
    expect((await tp.request('get', `/v1/agents/${randomUUID()}`, { key })).status).toBe(404);
    const list = await tp.request('get', '/v1/agents', { key: other.key });
    expect(JSON.stringify(list.body)).not.toContain(a.body.id);
  });

  it('deletes softly (204): gone from the API, the row kept for call records; audited', async () => {
    const a = await create({ name: 'bye', llm_id: llmId });
    expect((await tp.request('delete', `/v1/agents/${a.body.id}`, { key })).status).toBe(204);
    expect((await tp.request('get', `/v1/agents/${a.body.id}`, { key })).status).toBe(404);
    expect((await tp.request('patch', `/v1/agents/${a.body.id}`, { key, body: { name: 'x' } })).status).toBe(404);
    expect((await tp.request('delete', `/v1/agents/${a.body.id}`, { key })).status).toBe(404);
    const list = await tp.request('get', '/v1/agents?limit=100', { key });
    expect(list.body.items.map((x: { id: string }) => x.id)).not.toContain(a.body.id);
    const [row] = await tp.sql`select name, deleted_at from agents where id = ${a.body.id}`;
    expect(row).toMatchObject({ name: 'bye', deleted_at: expect.any(Date) });
    expect((await auditOf(a.body.id)).map((x) => x.action)).toEqual(['agent.create', 'agent.delete']);
    // Its model can now be deleted: deleted agents do not hold it.
    const m = (await tp.request('post', '/v1/models', { key, body: { name: 'solo', model: 'gpt-4o' } })).body.id;
    const solo = await create({ name: 'solo', llm_id: m });
    expect((await tp.request('delete', `/v1/models/${m}`, { key })).status).toBe(409);
    await tp.request('delete', `/v1/agents/${solo.body.id}`, { key });
    expect((await tp.request('delete', `/v1/models/${m}`, { key })).status).toBe(204);
  });

  it('keeps the call records of a deleted agent readable', async () => {
    const a = await create({ name: 'had calls', llm_id: llmId });
    const [call] = await tp.sql<{ id: string }[]>`
      insert into calls (org_id, agent_id, type, status, direction, started_at, ended_at, duration_seconds, end_reason)
      values (${orgId}, ${a.body.id}, 'outbound', 'completed', 'outbound', now() - interval '2 minutes', now(), 120, 'agent_hangup')
      returning id`;
    expect((await tp.request('delete', `/v1/agents/${a.body.id}`, { key })).status).toBe(204);
    const res = await tp.request('get', `/v1/calls/${call!.id}`, { key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: call!.id, agent_id: a.body.id, status: 'completed', duration_seconds: 120 });
  });

  it('409 naming the phone numbers that route to the agent (directly, by override, or as fallback)', async () => {
    const a = await create({ name: 'routed', llm_id: llmId });
    const b = await create({ name: 'spare', llm_id: llmId });
    const [direct] = await tp.sql<{ id: string }[]>`
      insert into phone_numbers (org_id, phone_number, provider, agent_id) values (${orgId}, '+14155550101', 'twilio', ${a.body.id}) returning id`;
    const [override] = await tp.sql<{ id: string }[]>`
      insert into phone_numbers (org_id, phone_number, provider, agent_id, inbound_routing)
      values (${orgId}, '+14155550102', 'twilio', ${b.body.id}, ${tp.sql.json({ agent_id: a.body.id })}) returning id`;
    const [fallback] = await tp.sql<{ id: string }[]>`
      insert into phone_numbers (org_id, phone_number, provider, agent_id, inbound_routing)
      values (${orgId}, '+14155550103', 'twilio', ${b.body.id}, ${tp.sql.json({ agent_id: b.body.id, fallback: { agent_id: a.body.id } })}) returning id`;
    const res = await tp.request('delete', `/v1/agents/${a.body.id}`, { key });
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      detail: 'Agent receives calls from 3 phone numbers (+14155550101, +14155550102, +14155550103); route them to another agent first',
      type: 'conflict',
      request_id: res.headers.get('x-request-id'),
      phone_numbers: [
        { id: direct!.id, phone_number: '+14155550101' },
        { id: override!.id, phone_number: '+14155550102' },
        { id: fallback!.id, phone_number: '+14155550103' },
      ],
    });
    expect((await tp.request('get', `/v1/agents/${a.body.id}`, { key })).status).toBe(200);
    // Once the numbers route elsewhere the agent can go.
    await tp.sql`update phone_numbers set agent_id = ${b.body.id}, inbound_routing = null where org_id = ${orgId}`;
    expect((await tp.request('delete', `/v1/agents/${a.body.id}`, { key })).status).toBe(204);
  });
});
