// Agents: defaults, transcriber/tts against the catalogue with exact 422 bodies, and references (the rest in
// agents-read-update.test.ts).
import { describe, expect, it } from 'vitest';
import { auditOf, create, key, llmId, orgId, other, patch, tp, webhook } from './agents.test-support.ts';

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
      turn_taking: {
        detection: 'transcript',
        endpointing: 'fixed',
        min_delay_ms: 1700,
        max_delay_ms: 3000,
        preemptive_generation: true,
        ignore_backchannels: true,
        barge_in: 'pause',
      },
      speed: 1,
      background_sound: null,
      emotions: false,
      job_description: null,
      data_retention: null,
      recording_consent: 'none',
      recording_consent_message: null,
      metadata: {},
      version: 1,
      draft_version: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
      effective_system_prompt: 'Answer for {{company}}. Be brief.',
      // No key anywhere on this platform for the default model, STT and TTS: saved, with why calls would fail.
      warnings: [
        { code: 'provider_key_missing', field: 'llm_id', message: expect.stringContaining('OPENAI_API_KEY') },
        { code: 'provider_key_missing', field: 'transcriber.provider', message: expect.stringContaining('DEEPGRAM_API_KEY') },
        { code: 'provider_key_missing', field: 'tts.provider', message: expect.stringContaining('OPENAI_API_KEY') },
      ],
    });
    expect(await auditOf(res.body.id)).toEqual([{ action: 'agent.create', details: { name: 'Front desk', llm_id: llmId, version: 1 } }]);
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
    const dg = await create({
      name: 'DG',
      llm_id: llmId,
      transcriber: { provider: 'deepgram', language: 'multi' },
      tts: { provider: 'deepgram', voice_id: 'aura-2-thalia-en' },
    });
    expect(dg.status).toBe(422);
    const dg2 = await create({
      name: 'DG',
      llm_id: llmId,
      transcriber: { provider: 'deepgram', language: 'multi' },
      tts: { provider: 'deepgram', voice_id: 'aura-2-luna-en' },
    });
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
      detail: [
        { type: 'unknown_voice', loc: ['body', 'tts', 'voice_id'], msg: "Unknown openai voice 'robot'; see GET /v1/voices?provider=openai", input: 'robot' },
      ],
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
    const res = await create({
      name: 'a',
      llm_id: llmId,
      transcriber: { provider: 'local', model: 'vosk' },
      tts: { provider: 'local', model: 'flite', voice_id: 'en-us' },
    });
    expect(res.body).toEqual({
      detail: [
        { type: 'enum', loc: ['body', 'transcriber', 'model'], msg: "Input should be 'pocketsphinx'", input: 'vosk', ctx: { expected: "'pocketsphinx'" } },
        {
          type: 'enum',
          loc: ['body', 'tts', 'model'],
          msg: "Input should be 'espeak-ng' or 'festival'",
          input: 'flite',
          ctx: { expected: "'espeak-ng' or 'festival'" },
        },
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
        {
          type: 'less_than_equal',
          loc: ['body', 'silence_timeout_seconds'],
          msg: 'Input should be less than or equal to 3600',
          input: 4000,
          ctx: { le: 3600 },
        },
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
    expect(partial.body.turn_taking).toEqual({
      detection: 'model',
      endpointing: 'fixed',
      min_delay_ms: 1700,
      max_delay_ms: 3000,
      preemptive_generation: true,
      ignore_backchannels: false,
      barge_in: 'pause',
    });
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
    expect(patient.body.turn_taking).toMatchObject({ min_delay_ms: 2100, max_delay_ms: 3500 });
    const explicit = await create({
      name: 'tt',
      llm_id: llmId,
      responsiveness: 0,
      turn_taking: { min_delay_ms: 150, max_delay_ms: 1200, preemptive_generation: false },
    });
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
      turn_taking: { detection: 'semantic', endpointing: 'adaptive', min_delay_ms: 4500, max_delay_ms: 50, preemptive_generation: 'yes', extra: 1 },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual(
      expect.arrayContaining([
        {
          type: 'enum',
          loc: ['body', 'turn_taking', 'detection'],
          msg: "Input should be 'vad', 'model', 'transcript' or 'stt'",
          input: 'semantic',
          ctx: { expected: "'vad', 'model', 'transcript' or 'stt'" },
        },
        {
          type: 'enum',
          loc: ['body', 'turn_taking', 'endpointing'],
          msg: "Input should be 'fixed' or 'dynamic'",
          input: 'adaptive',
          ctx: { expected: "'fixed' or 'dynamic'" },
        },
        {
          type: 'less_than_equal',
          loc: ['body', 'turn_taking', 'min_delay_ms'],
          msg: 'Input should be less than or equal to 4000',
          input: 4500,
          ctx: { le: 4000 },
        },
        {
          type: 'greater_than_equal',
          loc: ['body', 'turn_taking', 'max_delay_ms'],
          msg: 'Input should be greater than or equal to 100',
          input: 50,
          ctx: { ge: 100 },
        },
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

  it("detection 'stt' takes a transcriber with its own end of turn (Deepgram Flux): 422 at the field the request set", async () => {
    const flux = { provider: 'deepgram', model: 'flux-general-en' };
    const ok = await create({ name: 'flux', llm_id: llmId, transcriber: flux, turn_taking: { detection: 'stt' } });
    expect(ok.status).toBe(201);
    // Its own delays: nothing added after Flux's end of turn, and Deepgram's default timeout as the ceiling.
    expect(ok.body).toMatchObject({ transcriber: { ...flux, language: 'en-US' }, turn_taking: { detection: 'stt', min_delay_ms: 0, max_delay_ms: 5000 } });
    const msg =
      "turn_taking.detection 'stt' needs a transcriber that detects the end of the turn itself (deepgram 'flux-general-en' or deepgram 'flux-general-multi'); this one is deepgram 'nova-3'";
    // The default transcriber (nova-3) with the detection given: at the detection.
    const nova = await create({ name: 'nova', llm_id: llmId, turn_taking: { detection: 'stt' } });
    expect(nova.status).toBe(422);
    expect(nova.body).toEqual({ detail: [{ type: 'value_error', loc: ['body', 'turn_taking', 'detection'], msg, input: 'stt' }] });
    // A transcriber changed under a stored 'stt': at the transcriber's model; the agent is unchanged.
    const swap = await patch(ok.body.id, { transcriber: { provider: 'deepgram', model: 'nova-3' } });
    expect(swap.status).toBe(422);
    expect(swap.body).toEqual({ detail: [{ type: 'value_error', loc: ['body', 'transcriber', 'model'], msg, input: 'nova-3' }] });
    expect((await tp.request('get', `/v1/agents/${ok.body.id}`, { key })).body.transcriber.model).toBe('flux-general-en');
    // The same change with another detection is fine; and responsiveness alone re-derives the stt delays.
    expect((await patch(ok.body.id, { responsiveness: 1 })).body.turn_taking).toMatchObject({ detection: 'stt', min_delay_ms: 0, max_delay_ms: 2000 });
    const both = await patch(ok.body.id, { transcriber: { provider: 'deepgram', model: 'nova-3' }, turn_taking: { detection: 'model' } });
    expect(both.status).toBe(200);
    const offline = await patch(ok.body.id, { transcriber: { provider: 'local' }, turn_taking: { detection: 'stt' } });
    expect(offline.status).toBe(422);
    expect(offline.body.detail[0]).toMatchObject({
      loc: ['body', 'turn_taking', 'detection'],
      msg: expect.stringContaining("this one is local 'pocketsphinx'"),
    });
    // Flux with another detection is an ordinary transcriber; flux-general-en speaks English only.
    expect((await create({ name: 'flux-vad', llm_id: llmId, transcriber: flux, turn_taking: { detection: 'vad' } })).status).toBe(201);
    const french = await create({ name: 'fr', llm_id: llmId, language: 'fr', transcriber: flux, turn_taking: { detection: 'stt' } });
    expect(french.status).toBe(422);
    expect(french.body.detail).toEqual([expect.objectContaining({ type: 'unsupported_language', loc: ['body', 'language'] })]);
    const multi = await create({
      name: 'fr',
      llm_id: llmId,
      language: 'fr',
      transcriber: { provider: 'deepgram', model: 'flux-general-multi' },
      turn_taking: { detection: 'stt' },
    });
    expect(multi.status).toBe(201);
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

  it('422: llm_id and webhook_id of another organisation, unknown or deleted', async () => {
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
    expect(res2.body.detail).toEqual([
      { type: 'reference_not_found', loc: ['body', 'llm_id'], msg: 'No LLM model with this id in your organisation', input: gone },
    ]);
    const res3 = await create({ name: 'a', llm_id: 'not-a-uuid' });
    expect(res3.body.detail).toEqual([{ type: 'uuid_parsing', loc: ['body', 'llm_id'], msg: 'Input should be a valid UUID', input: 'not-a-uuid' }]);
  });
});
