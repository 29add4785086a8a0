// Agents: defaults, transcriber/tts against the catalogue with exact 422 bodies, references, effective_system_prompt,
// tenancy, audit, and the delete rules (phone numbers, soft delete).
import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';

let tp: TestPlatform;
let key: string;
let orgId: string;
let other: { orgId: string; key: string };
let llmId: string;
let bareLlmId: string;

beforeAll(async () => {
  tp = await usePlatform();
  ({ key, orgId } = await tp.createOrg('agents'));
  other = await tp.createOrg('other');
  llmId = (await tp.request('post', '/v1/models', { key, body: { name: 'Support', model: 'gpt-4o-mini', system_prompt: 'Answer for {{company}}. Be brief.' } })).body.id;
  bareLlmId = (await tp.request('post', '/v1/models', { key, body: { name: 'Bare', model: 'gpt-4o-mini' } })).body.id;
});

const create = (body: Record<string, unknown>, k = key) => tp.request('post', '/v1/agents', { key: k, body });
const patch = (id: string, body: Record<string, unknown>, k = key) => tp.request('patch', `/v1/agents/${id}`, { key: k, body });
const auditOf = (resourceId: string) =>
  tp.sql<{ action: string; details: Record<string, unknown> }[]>`
    select action, details from audit_events where resource_id = ${resourceId} order by created_at, id`;
const webhook = async (org: string) =>
  (await tp.sql<{ id: string }[]>`insert into webhooks (org_id, name, url) values (${org}, 'hook', 'https://example.com/hook') returning id`)[0]!.id;

describe('POST /v1/agents', () => {
  it('creates an agent with every default and answers 201 with effective_system_prompt', async () => {
    const res = await create({ name: 'Front desk', llm_id: llmId });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Front desk',
      llm_id: llmId,
      webhook_id: null,
      transcriber: { provider: 'deepgram', model: 'nova-3', language: 'en-US' },
      tts: { provider: 'openai', model: 'gpt-4o-mini-tts', voice_id: 'alloy' },
      first_message: null,
      end_call_phrases: [],
      max_duration_seconds: 1800,
      interruption_sensitivity: 0.5,
      silence_timeout_seconds: 30,
      enable_recording: false,
      language: 'en-US',
      dynamic_variables: {},
      voicemail_detection: false,
      voicemail_message: null,
      responsiveness: 0.5,
      turn_taking: { detection: 'transcript', endpointing: 'fixed', min_delay_ms: 1000, max_delay_ms: 1500, preemptive_generation: true, ignore_backchannels: true, barge_in: 'pause' },
      speed: 1,
      background_sound: null,
      emotions: false,
      job_description: null,
      data_retention: null,
      recording_consent: 'none',
      recording_consent_message: null,
      metadata: {},
      created_at: expect.any(String),
      updated_at: expect.any(String),
      effective_system_prompt: 'Answer for {{company}}. Be brief.',
    });
    expect(await auditOf(res.body.id)).toEqual([{ action: 'agent.create', details: { name: 'Front desk', llm_id: llmId } }]);
  });

  it('stores every field given', async () => {
    const hook = await webhook(orgId);
    const body = {
      name: 'Full',
      llm_id: llmId,
      webhook_id: hook,
      transcriber: { provider: 'local', model: 'pocketsphinx', language: 'en-US' },
      tts: { provider: 'local', model: 'festival', voice_id: 'us-slt-hts' },
      first_message: 'Hello {{name}}!',
      end_call_phrases: ['goodbye', 'have a nice day'],
      max_duration_seconds: 600,
      interruption_sensitivity: 0.2,
      silence_timeout_seconds: 15,
      enable_recording: true,
      language: 'en-GB',
      dynamic_variables: { company: 'Acme', open_hours: 9, vip: true },
      voicemail_detection: true,
      voicemail_message: 'Please call us back.',
      responsiveness: 0.9,
      speed: 1.25,
      background_sound: 'office',
      emotions: true,
      job_description: 'Receptionist of Acme.',
      metadata: { team: 'front' },
    };
    const res = await create(body);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject(body);
    const got = await tp.request('get', `/v1/agents/${res.body.id}`, { key });
    expect(got.body).toEqual(res.body);
  });

  it('fills provider defaults into partial transcriber and tts objects', async () => {
    const res = await create({ name: 'Offline', llm_id: llmId, language: 'en-US', transcriber: { provider: 'local' }, tts: { provider: 'local' } });
    expect(res.body).toMatchObject({
      transcriber: { provider: 'local', model: 'pocketsphinx', language: 'en-US' },
      tts: { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' },
    });
    const el = await create({ name: 'EL', llm_id: llmId, tts: { provider: 'elevenlabs', voice_id: '21m00Tcm4TlvDq8ikWAM' } });
    expect(el.body.tts).toEqual({ provider: 'elevenlabs', model: 'eleven_flash_v2_5', voice_id: '21m00Tcm4TlvDq8ikWAM' });
    const dg = await create({ name: 'DG', llm_id: llmId, transcriber: { provider: 'deepgram', language: 'multi' }, tts: { provider: 'deepgram', voice_id: 'aura-2-thalia-en' } });
    expect(dg.status).toBe(422);
    const dg2 = await create({ name: 'DG', llm_id: llmId, transcriber: { provider: 'deepgram', language: 'multi' }, tts: { provider: 'deepgram', voice_id: 'aura-2-luna-en' } });
    expect(dg2.body).toMatchObject({ transcriber: { model: 'nova-3', language: 'multi' }, tts: { model: 'aura-2', voice_id: 'aura-2-luna-en' } });
  });

  it('422: missing name and llm_id', async () => {
    expect((await create({})).body).toEqual({
      detail: [
        { type: 'missing', loc: ['body', 'name'], msg: 'Field required', input: {} },
        { type: 'missing', loc: ['body', 'llm_id'], msg: 'Field required', input: {} },
      ],
    });
  });

  it('422: unknown transcriber and tts providers at their loc', async () => {
    const res = await create({ name: 'a', llm_id: llmId, transcriber: { provider: 'whisperx' }, tts: { provider: 'polly', voice_id: 'Joanna' } });
    expect(res.body).toEqual({
      detail: [
        {
          type: 'enum',
          loc: ['body', 'transcriber', 'provider'],
          msg: "Input should be 'deepgram', 'openai' or 'local'",
          input: 'whisperx',
          ctx: { expected: "'deepgram', 'openai' or 'local'" },
        },
        {
          type: 'enum',
          loc: ['body', 'tts', 'provider'],
          msg: "Input should be 'openai', 'deepgram', 'elevenlabs', 'cartesia' or 'local'",
          input: 'polly',
          ctx: { expected: "'openai', 'deepgram', 'elevenlabs', 'cartesia' or 'local'" },
        },
      ],
    });
  });

  it('422: unknown voice, at ["body","tts","voice_id"]', async () => {
    const res = await create({ name: 'a', llm_id: llmId, tts: { provider: 'openai', voice_id: 'robot' } });
    expect(res.body).toEqual({
      detail: [{ type: 'unknown_voice', loc: ['body', 'tts', 'voice_id'], msg: "Unknown openai voice 'robot'; see GET /v1/voices?provider=openai", input: 'robot' }],
    });
  });

  it('422: a voice that does not work with the chosen model', async () => {
    const res = await create({ name: 'a', llm_id: llmId, tts: { provider: 'openai', model: 'tts-1', voice_id: 'ballad' } });
    expect(res.body).toEqual({
      detail: [
        {
          type: 'unknown_voice',
          loc: ['body', 'tts', 'voice_id'],
          msg: "Voice 'ballad' is not available with model 'tts-1'; it works with 'gpt-4o-mini-tts'",
          input: 'ballad',
          ctx: { models: ['gpt-4o-mini-tts'] },
        },
      ],
    });
  });

  it('422: unknown models of a known provider', async () => {
    const res = await create({ name: 'a', llm_id: llmId, transcriber: { provider: 'local', model: 'vosk' }, tts: { provider: 'local', model: 'flite', voice_id: 'en-us' } });
    expect(res.body).toEqual({
      detail: [
        { type: 'enum', loc: ['body', 'transcriber', 'model'], msg: "Input should be 'pocketsphinx'", input: 'vosk', ctx: { expected: "'pocketsphinx'" } },
        { type: 'enum', loc: ['body', 'tts', 'model'], msg: "Input should be 'espeak-ng' or 'festival'", input: 'flite', ctx: { expected: "'espeak-ng' or 'festival'" } },
      ],
    });
  });

  it('422: a language the transcriber does not support, at the field the caller set', async () => {
    const explicit = await create({ name: 'a', llm_id: llmId, transcriber: { provider: 'local', language: 'de-DE' } });
    expect(explicit.body).toEqual({
      detail: [
        {
          type: 'unsupported_language',
          loc: ['body', 'transcriber', 'language'],
          msg: "Language 'de-DE' is not supported by local model 'pocketsphinx'",
          input: 'de-DE',
          ctx: { supported: ['en-US'] },
        },
      ],
    });
    const inherited = await create({ name: 'a', llm_id: llmId, language: 'de-DE', transcriber: { provider: 'local' } });
    expect(inherited.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'language'], type: 'unsupported_language', input: 'de-DE' })]);
  });

  it('422: ranges, enums and formats of the behaviour settings', async () => {
    const res = await create({
      name: 'a',
      llm_id: llmId,
      interruption_sensitivity: 1.5,
      responsiveness: -0.1,
      speed: 3,
      max_duration_seconds: 5,
      silence_timeout_seconds: 4000,
      background_sound: 'jungle',
      language: 'english',
      end_call_phrases: [''],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([
        { type: 'less_than_equal', loc: ['body', 'interruption_sensitivity'], msg: 'Input should be less than or equal to 1', input: 1.5, ctx: { le: 1 } },
        { type: 'greater_than_equal', loc: ['body', 'responsiveness'], msg: 'Input should be greater than or equal to 0', input: -0.1, ctx: { ge: 0 } },
        { type: 'less_than_equal', loc: ['body', 'speed'], msg: 'Input should be less than or equal to 2', input: 3, ctx: { le: 2 } },
        { type: 'greater_than_equal', loc: ['body', 'max_duration_seconds'], msg: 'Input should be greater than or equal to 10', input: 5, ctx: { ge: 10 } },
        { type: 'less_than_equal', loc: ['body', 'silence_timeout_seconds'], msg: 'Input should be less than or equal to 3600', input: 4000, ctx: { le: 3600 } },
        {
          type: 'enum',
          loc: ['body', 'background_sound'],
          msg: "Input should be 'office', 'cafe', 'call_center', 'restaurant' or 'static'",
          input: 'jungle',
          ctx: { expected: "'office', 'cafe', 'call_center', 'restaurant' or 'static'" },
        },
        {
          type: 'string_pattern_mismatch',
          loc: ['body', 'language'],
          msg: "String should match pattern '^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$'",
          input: 'english',
          ctx: { pattern: '^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$' },
        },
        { type: 'string_too_short', loc: ['body', 'end_call_phrases', 0], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } },
      ]),
    );
    expect(res.body.detail).toHaveLength(8);
  });

  it('completes a partial turn_taking over the defaults, with delays from responsiveness unless given', async () => {
    const partial = await create({ name: 'tt', llm_id: llmId, turn_taking: { detection: 'model', ignore_backchannels: false } });
    expect(partial.status).toBe(201);
    expect(partial.body.turn_taking).toEqual({ detection: 'model', endpointing: 'fixed', min_delay_ms: 1000, max_delay_ms: 1500, preemptive_generation: true, ignore_backchannels: false, barge_in: 'pause' });
    const words = await create({ name: 'tt', llm_id: llmId, turn_taking: { barge_in: 'words' } });
    expect(words.body.turn_taking).toMatchObject({ barge_in: 'words', ignore_backchannels: true });
    const wrong = await create({ name: 'tt', llm_id: llmId, turn_taking: { barge_in: 'sound' } });
    expect(wrong.status).toBe(422);
    expect(wrong.body.detail).toEqual([expect.objectContaining({ type: 'enum', loc: ['body', 'turn_taking', 'barge_in'], input: 'sound' })]);
    // Silence alone has its own, longer delays: it has no detector to tell a pause from an end.
    const silence = await create({ name: 'tt', llm_id: llmId, turn_taking: { detection: 'vad' } });
    expect(silence.body.turn_taking).toMatchObject({ detection: 'vad', min_delay_ms: 500, max_delay_ms: 3000 });
    // responsiveness is the coarse knob: it sets the delays that are not given.
    const eager = await create({ name: 'tt', llm_id: llmId, responsiveness: 1, turn_taking: { endpointing: 'dynamic' } });
    expect(eager.body.turn_taking).toMatchObject({ endpointing: 'dynamic', min_delay_ms: 150, max_delay_ms: 1000 });
    const patient = await create({ name: 'tt', llm_id: llmId, responsiveness: 0.25 });
    expect(patient.body.turn_taking).toMatchObject({ min_delay_ms: 1250, max_delay_ms: 2250 });
    const explicit = await create({ name: 'tt', llm_id: llmId, responsiveness: 0, turn_taking: { min_delay_ms: 150, max_delay_ms: 1200, preemptive_generation: false } });
    expect(explicit.body).toMatchObject({ responsiveness: 0, turn_taking: { min_delay_ms: 150, max_delay_ms: 1200, preemptive_generation: false } });
    // One delay given: the other, derived, moves to keep min <= max.
    const highMin = await create({ name: 'tt', llm_id: llmId, responsiveness: 1, turn_taking: { min_delay_ms: 1800 } });
    expect(highMin.body.turn_taking).toMatchObject({ min_delay_ms: 1800, max_delay_ms: 1800 });
    const lowMax = await create({ name: 'tt', llm_id: llmId, turn_taking: { max_delay_ms: 300 } });
    expect(lowMax.body.turn_taking).toMatchObject({ min_delay_ms: 300, max_delay_ms: 300 });
    const lowerMax = await create({ name: 'tt', llm_id: llmId, turn_taking: { max_delay_ms: 120 } });
    expect(lowerMax.body.turn_taking).toMatchObject({ min_delay_ms: 120, max_delay_ms: 120 });
    const got = await tp.request('get', `/v1/agents/${explicit.body.id}`, { key });
    expect(got.body.turn_taking).toEqual(explicit.body.turn_taking);
  });

  it('422: turn_taking ranges, enums, unknown fields, and max_delay_ms below min_delay_ms', async () => {
    const res = await create({
      name: 'a',
      llm_id: llmId,
      turn_taking: { detection: 'semantic', endpointing: 'adaptive', min_delay_ms: 2500, max_delay_ms: 50, preemptive_generation: 'yes', extra: 1 },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([
        { type: 'enum', loc: ['body', 'turn_taking', 'detection'], msg: "Input should be 'vad', 'model' or 'transcript'", input: 'semantic', ctx: { expected: "'vad', 'model' or 'transcript'" } },
        { type: 'enum', loc: ['body', 'turn_taking', 'endpointing'], msg: "Input should be 'fixed' or 'dynamic'", input: 'adaptive', ctx: { expected: "'fixed' or 'dynamic'" } },
        { type: 'less_than_equal', loc: ['body', 'turn_taking', 'min_delay_ms'], msg: 'Input should be less than or equal to 2000', input: 2500, ctx: { le: 2000 } },
        { type: 'greater_than_equal', loc: ['body', 'turn_taking', 'max_delay_ms'], msg: 'Input should be greater than or equal to 100', input: 50, ctx: { ge: 100 } },
        expect.objectContaining({ type: 'bool_type', loc: ['body', 'turn_taking', 'preemptive_generation'] }),
        expect.objectContaining({ type: 'extra_forbidden', loc: ['body', 'turn_taking', 'extra'] }),
      ]),
    );
    const inverted = await create({ name: 'a', llm_id: llmId, turn_taking: { min_delay_ms: 800, max_delay_ms: 400 } });
    expect(inverted.status).toBe(422);
    expect(inverted.body.detail).toEqual([
      { type: 'value_error', loc: ['body', 'turn_taking', 'max_delay_ms'], msg: 'max_delay_ms must be at least min_delay_ms (800)', input: 400 },
    ]);
    const a = await create({ name: 'a', llm_id: llmId });
    const onPatch = await patch(a.body.id, { turn_taking: { min_delay_ms: 1000, max_delay_ms: 999 } });
    expect(onPatch.status).toBe(422);
    expect(onPatch.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'turn_taking', 'max_delay_ms'] });
  });

  it('422: dynamic variable names and values', async () => {
    expect((await create({ name: 'a', llm_id: llmId, dynamic_variables: { 'first-name': 'Ada' } })).body).toEqual({
      detail: [
        {
          type: 'value_error',
          loc: ['body', 'dynamic_variables', 'first-name'],
          msg: 'Variable names are letters, digits and _, not starting with a digit (as in {{name}} placeholders)',
          input: 'first-name',
        },
      ],
    });
    expect((await create({ name: 'a', llm_id: llmId, dynamic_variables: { x: { nested: 1 } } })).body).toEqual({
      detail: [{ type: 'string_type', loc: ['body', 'dynamic_variables', 'x'], msg: 'Input should be a valid string', input: { nested: 1 } }],
    });
  });

  it("422: llm_id and webhook_id of another organisation, unknown or deleted", async () => {
    const theirModel = (await tp.request('post', '/v1/models', { key: other.key, body: { name: 'm', model: 'gpt-4o' } })).body.id;
    const theirHook = await webhook(other.orgId);
    const res = await create({ name: 'a', llm_id: theirModel, webhook_id: theirHook });
    expect(res.body).toEqual({
      detail: [
        { type: 'reference_not_found', loc: ['body', 'llm_id'], msg: 'No LLM model with this id in your organisation', input: theirModel },
        { type: 'reference_not_found', loc: ['body', 'webhook_id'], msg: 'No webhook with this id in your organisation', input: theirHook },
      ],
    });
    const gone = (await tp.request('post', '/v1/models', { key, body: { name: 'gone', model: 'gpt-4o' } })).body.id;
    await tp.request('delete', `/v1/models/${gone}`, { key });
    const res2 = await create({ name: 'a', llm_id: gone });
    expect(res2.body.detail).toEqual([{ type: 'reference_not_found', loc: ['body', 'llm_id'], msg: 'No LLM model with this id in your organisation', input: gone }]);
    const res3 = await create({ name: 'a', llm_id: 'not-a-uuid' });
    expect(res3.body.detail).toEqual([{ type: 'uuid_parsing', loc: ['body', 'llm_id'], msg: 'Input should be a valid UUID', input: 'not-a-uuid' }]);
  });
});

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
      { action: 'agent.create', details: { name: 'p', llm_id: llmId } },
      { action: 'agent.update', details: { fields: ['name', 'tts', 'first_message', 'speed', 'metadata'] } },
      { action: 'agent.update', details: { fields: ['language'] } },
    ]);
  });

  it('PATCH turn_taking merges over the defaults; responsiveness alone re-derives the delays and keeps the rest', async () => {
    const a = await create({ name: 'tt', llm_id: llmId, turn_taking: { detection: 'vad', endpointing: 'dynamic', min_delay_ms: 100, max_delay_ms: 900, ignore_backchannels: true } });
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
    expect(partial.body.turn_taking).toEqual({ detection: 'transcript', endpointing: 'fixed', min_delay_ms: 1500, max_delay_ms: 3000, preemptive_generation: false, ignore_backchannels: true, barge_in: 'pause' });
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
    for (const [method, b] of [['get', undefined], ['patch', { name: 'x' }], ['delete', undefined]] as const) {
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
