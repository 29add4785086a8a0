// Agent tests in text mode against the OpenAI-compatible stand-in, which plays the agent's model, the judge and
// the persona's caller (told apart by their system prompts): judges that pass and fail, tool argument matching
// on a real tool server reached through the SSRF guard, a tool mock, 422 shapes and the event and usage. The CLI,
// security, tenancy, the concurrency bound and a cancel are in agent-tests-bounds.test.ts; a voice-mode run's
// conversations in test/e2e/agent-test-voice.test.ts.
import { describe, expect, it } from 'vitest';
import { contentText, lastUserText } from '../../../../test/support/fake-openai.ts';
import { evaluate } from './expectations.ts';
import { AGENT_PROMPT, agentWith, api, openai, runToEnd, scenario, system, toolRequests, toolUrl, tp, replies } from './agent-tests.test-support.ts';

describe('scenarios: validation and audit', () => {
  it('stores a scenario with its defaults and audits it', async () => {
    const res = await api('post', '/v1/test-scenarios', { name: 'Hours', script: [{ say: 'When are you open?' }] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'Hours',
      persona: null,
      script: [{ say: 'When are you open?' }],
      variables: {},
      max_turns: 10,
      max_duration_seconds: 300,
      tool_mocks: [],
      expectations: [],
      metadata: {},
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const [audit] = await tp.sql`select action, details from audit_events where resource_id = ${res.body.id}`;
    expect(audit).toEqual({ action: 'test_scenario.create', details: { name: 'Hours' } });
    // Setting a persona drops the script.
    const upd = await api('patch', `/v1/test-scenarios/${res.body.id}`, { persona: 'You are in a hurry.' });
    expect(upd.body).toMatchObject({ persona: 'You are in a hurry.', script: null });
  });

  it("answers 422 in the spec's shape: fields of another expectation type, a missing field, a bad matcher, persona and script", async () => {
    const res = await api('post', '/v1/test-scenarios', {
      name: 'bad',
      persona: 'p',
      script: [{ say: 'x' }],
      expectations: [
        { type: 'llm_judge', question: 'ok?', tool: 'book' },
        { type: 'tool_called', arguments: { day: { equals: 'x', contains: 'y' }, name: { matches: '(' } } },
      ],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: ['body', 'script'], msg: 'Give either persona or script, not both', type: 'value_error', input: [{ say: 'x' }] },
      {
        loc: ['body', 'expectations', 0, 'tool'],
        msg: "Extra inputs are not permitted for expectations of type 'llm_judge'",
        type: 'extra_forbidden',
        input: 'book',
      },
      { loc: ['body', 'expectations', 1, 'tool'], msg: 'Field required', type: 'missing', input: expect.any(Object) },
      {
        loc: ['body', 'expectations', 1, 'arguments', 'day'],
        msg: 'A matcher has exactly one of equals, contains, matches, exists',
        type: 'value_error',
        input: { equals: 'x', contains: 'y' },
      },
      {
        loc: ['body', 'expectations', 1, 'arguments', 'name', 'matches'],
        msg: expect.stringMatching(/^Invalid regular expression/),
        type: 'value_error',
        input: '(',
      },
    ]);
    const none = await api('post', '/v1/test-scenarios', { name: 'empty' });
    expect(none.body.detail).toEqual([{ loc: ['body', 'persona'], msg: 'Field required: a persona or a script', type: 'missing', input: { name: 'empty' } }]);
    // A script line is an object: a plain string is refused with the shape it should have had.
    const plain = await api('post', '/v1/test-scenarios', { name: 'x', script: ['When are you open?'] });
    expect(plain.body.detail).toEqual([
      {
        type: 'dict_type',
        loc: ['body', 'script', 0],
        msg: 'Input should be a valid dictionary: a ScriptLine object, such as {"say":"When are you open on Saturday?","wait_ms":1500}',
        input: 'When are you open?',
      },
    ]);
    const unknownType = await api('post', '/v1/test-scenarios', { name: 'x', script: [{ say: 'x' }], expectations: [{ type: 'vibes' }] });
    expect(unknownType.status).toBe(422);
    expect(unknownType.body.detail[0].loc).toEqual(['body', 'expectations', 0, 'type']);
  });
});

describe('text-mode runs', () => {
  it('a judge passes one conversation and fails another, saying why; test_run.completed carries the counts', async () => {
    replies.agent = (req) => ({ text: /move/i.test(lastUserText(req)) ? 'Done, your appointment is now on Wednesday at 9:30.' : 'Goodbye!' });
    const agentId = await agentWith();
    const good = await scenario({
      script: [{ say: 'I need to move my appointment.' }, { say: 'Thanks, bye.' }],
      expectations: [
        { type: 'llm_judge', question: 'Did the agent confirm the new day?' },
        { type: 'transcript_contains', text: 'wednesday', role: 'agent' },
        { type: 'ended_by', by: 'caller', end_reason: 'user_hangup' },
        { type: 'max_latency_ms', max_ms: 60000 },
      ],
    });
    const bad = await scenario({
      script: [{ say: 'Hello there.' }],
      expectations: [{ type: 'llm_judge', question: 'Did the agent confirm the new day?', name: 'confirms' }],
    });
    const suite = await api('post', '/v1/test-suites', { name: 'regressions', agent_id: agentId, scenario_ids: [good, bad] });
    expect(suite.status).toBe(201);

    const run = await runToEnd(agentId, { suite_id: suite.body.id });
    expect(run).toMatchObject({ status: 'completed', mode: 'text', suite_id: suite.body.id, total: 2, passed: 1, failed: 1, errored: 0 });
    const [r1, r2] = run.results;
    expect(r1).toMatchObject({
      scenario_id: good,
      status: 'passed',
      ended_by: 'caller',
      end_reason: 'user_hangup',
      turns: 2,
      recording_url: null,
      error: null,
    });
    expect(r1.messages).toEqual([
      { role: 'user', content: 'I need to move my appointment.' },
      { role: 'agent', content: 'Done, your appointment is now on Wednesday at 9:30.' },
      { role: 'user', content: 'Thanks, bye.' },
      { role: 'agent', content: 'Goodbye!' },
    ]);
    expect(r1.expectations.map((e: any) => [e.type, e.passed])).toEqual([
      ['llm_judge', true],
      ['transcript_contains', true],
      ['ended_by', true],
      ['max_latency_ms', true],
    ]);
    expect(r1.expectations[0].reason).toBe('The agent confirmed Wednesday.');
    expect(r1.latency.e2e.samples).toBe(2);
    expect(r2).toMatchObject({
      status: 'failed',
      expectations: [{ type: 'llm_judge', name: 'confirms', passed: false, reason: 'The agent never confirmed a new day.' }],
    });
    // The agent's model got its prompt; the judge got the rubric and the transcript.
    expect(openai.requests.some((r) => system(r) === AGENT_PROMPT)).toBe(true);

    const [event] = await tp.sql`select payload from events where type = 'test_run.completed' and (payload->>'test_run_id') = ${run.id}`;
    expect(event!.payload).toMatchObject({
      event: 'test_run.completed',
      test_run_id: run.id,
      agent_id: agentId,
      status: 'completed',
      total: 2,
      passed: 1,
      failed: 1,
      errored: 0,
    });
    const usage = await api('get', '/v1/usage');
    expect(usage.body.test_minutes_this_month).toBeGreaterThanOrEqual(0);
    expect(usage.body.calls_made_today).toBe(0);
  });

  it('checks tool arguments against a real tool server (signed, through the SSRF guard), and a mock answers instead of the server', async () => {
    const tool = await api('post', '/v1/tools', {
      type: 'function',
      name: 'book_appointment',
      url: toolUrl,
      parameters: { type: 'object', properties: { day: { type: 'string' }, name: { type: 'string' } } },
    });
    expect(tool.status).toBe(201);
    replies.agent = (req) => {
      const last = req.messages.at(-1)!;
      if (last.role === 'tool') return { text: `Booked: ${contentText(last)}` };
      return { toolCalls: [{ name: 'book_appointment', arguments: { day: 'Wednesday', name: 'Ada Lovelace' } }] };
    };
    const agentId = await agentWith({ tools: [tool.body.id] });
    const expectations = [
      { type: 'tool_called', tool: 'book_appointment', arguments: { day: { equals: 'Wednesday' }, name: { contains: 'ada' }, slot: { exists: false } } },
      { type: 'tool_called', tool: 'book_appointment', arguments: { day: { matches: '^tue' } }, name: 'books Tuesday' },
      { type: 'tool_called', tool: 'cancel_appointment' },
    ];
    const real = await scenario({ script: [{ say: 'Book me for Wednesday.' }], expectations });
    const mocked = await scenario({
      script: [{ say: 'Book me for Wednesday.' }],
      tool_mocks: [{ tool: 'book_appointment', result: { booked: false, reason: 'full' } }],
      expectations: expectations.slice(0, 1),
    });

    const before = toolRequests.length;
    const run = await runToEnd(agentId, { scenario_ids: [real, mocked] });
    expect(run).toMatchObject({ status: 'completed', passed: 1, failed: 1 });
    const [r1, r2] = run.results;
    expect(r1.expectations.map((e: any) => e.passed)).toEqual([true, false, false]);
    expect(r1.expectations[1]).toEqual({
      type: 'tool_called',
      name: 'books Tuesday',
      passed: false,
      reason: 'book_appointment was called 1 time, never with matching arguments: day is "Wednesday", which does not match /^tue/',
    });
    expect(r1.expectations[2].reason).toBe('cancel_appointment was never called (the agent called book_appointment)');
    expect(r1.tool_calls).toEqual([
      {
        tool: 'book_appointment',
        arguments: { day: 'Wednesday', name: 'Ada Lovelace' },
        output: JSON.stringify({ booked: true, slot: 'Wednesday 09:30' }),
        error: false,
        mocked: false,
      },
    ]);
    expect(r1.messages.at(-1).content).toContain('Wednesday 09:30');
    // Exactly one request reached the server (the mocked scenario sent none), signed with the tool's secret.
    expect(toolRequests.length - before).toBe(1);
    const sent = toolRequests.at(-1)!;
    expect(JSON.parse(sent.body)).toMatchObject({
      type: 'tool.call',
      call_id: null,
      test_run_id: run.id,
      scenario_id: real,
      name: 'book_appointment',
      arguments: { day: 'Wednesday', name: 'Ada Lovelace' },
    });
    expect(sent.headers['webhook-signature']).toMatch(/^v1,/);
    expect(r2.status).toBe('passed');
    expect(r2.tool_calls).toEqual([
      {
        tool: 'book_appointment',
        arguments: { day: 'Wednesday', name: 'Ada Lovelace' },
        output: '{"booked":false,"reason":"full"}',
        error: false,
        mocked: true,
      },
    ]);
  });

  it("plays a persona with the caller model, and ends on the agent's end-call phrase", async () => {
    replies.caller = (req) => (/Agent:/.test(lastUserText(req)) ? 'Great, that is all.' : 'Hi, I want to move Tuesday to Wednesday.');
    replies.agent = (req) => ({ text: /all/i.test(lastUserText(req)) ? 'Thank you, goodbye.' : 'Sure, moved to Wednesday.' });
    const agentId = await agentWith({ end_call_phrases: ['goodbye'] });
    const id = await scenario({
      persona: 'You are Ada; you want to move Tuesday to Wednesday.',
      expectations: [{ type: 'ended_by', by: 'agent', end_reason: 'agent_hangup' }],
    });
    const run = await runToEnd(agentId, { scenario_ids: [id] });
    expect(run.results[0]).toMatchObject({ status: 'passed', turns: 2, ended_by: 'agent', end_reason: 'agent_hangup' });
    expect(run.results[0].messages.map((m: any) => m.role)).toEqual(['user', 'agent', 'user', 'agent']);
  });

  it('says clearly that llm_judge has no model when none is configured, and fails it', async () => {
    const ctrl = new AbortController();
    const [r] = await evaluate(
      [{ type: 'llm_judge', question: 'Polite?' }],
      { messages: [], toolCalls: [], ending: { by: 'caller', reason: 'user_hangup' }, latencyP50Ms: 0, latencySamples: 0, outcome: null },
      { llm: null, unavailable: 'no model is configured to judge: add a credential' },
      ctrl.signal,
    );
    expect(r).toEqual({ type: 'llm_judge', name: 'Polite?', passed: false, reason: 'Not judged: no model is configured to judge: add a credential' });
  });
});
