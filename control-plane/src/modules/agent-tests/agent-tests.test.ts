// Agent tests in text mode against the OpenAI-compatible stand-in, which plays the agent's model, the judge and
// the persona's caller (told apart by their system prompts): judges that pass and fail, tool argument matching
// on a real tool server reached through the SSRF guard, a tool mock, 422 shapes, tenancy, 100 scenarios under
// the organisation's concurrency bound without taking call capacity, a cancel mid-way, the event and usage; and
// a voice-mode run's scheduling and bookkeeping (its conversations are in test/e2e/agent-test-voice.test.ts).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { contentText, lastUserText, startFakeOpenAI, type ChatRequest, type FakeOpenAI, type ScriptedReply } from '../../../../test/support/fake-openai.ts';
import { CALLER_RULES } from './conversation.ts';
import { evaluate, JUDGE_PROMPT } from './expectations.ts';

let tp: TestPlatform;
let openai: FakeOpenAI;
let toolServer: http.Server;
let toolUrl: string;
const toolRequests: { headers: http.IncomingHttpHeaders; body: string }[] = [];
let org: { orgId: string; key: string };

const AGENT_PROMPT = 'You are the front desk of Bright Smiles dental.';
const PLATFORM_KEY = 'sk-platform-canary-0123456789abcdef';
const system = (req: ChatRequest) => contentText(req.messages[0]!);

/** Each test sets what the agent's model says; the judge and caller have their own rules below. */
let agentReply: (req: ChatRequest) => ScriptedReply | Promise<ScriptedReply> = () => ({ text: 'How can I help?' });
let callerReply: (req: ChatRequest) => string = () => 'Goodbye. [HANGUP]';

beforeAll(async () => {
  openai = await startFakeOpenAI({
    responder: (req) => {
      const sys = system(req);
      if (sys.startsWith(JUDGE_PROMPT)) {
        // The judge passes a conversation in which the agent confirmed Wednesday.
        const said = lastUserText(req);
        const pass = /Agent: [^\n]*wednesday/i.test(said);
        return { text: JSON.stringify({ pass, reason: pass ? 'The agent confirmed Wednesday.' : 'The agent never confirmed a new day.' }) };
      }
      if (sys.startsWith(CALLER_RULES)) return { text: callerReply(req) };
      return agentReply(req);
    },
  });
  toolServer = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      toolRequests.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ booked: true, slot: 'Wednesday 09:30' }));
    });
  });
  await new Promise<void>((r) => toolServer.listen(0, '127.0.0.1', r));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}/book`;
  // A canary platform key: it must never reach the agent's model, whose base_url is the tenant's.
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1', OPENAI_API_KEY: PLATFORM_KEY } as never);
  org = await tp.createOrg('agent-tests');
});

afterAll(async () => {
  await openai.close();
  await new Promise<void>((r) => toolServer.close(() => r()));
});

const api = (method: string, path: string, body?: unknown, key = org.key) => tp.request(method, path, { key, ...(body !== undefined ? { body } : {}) });

async function agentWith(o: { key?: string; tools?: string[]; first_message?: string; end_call_phrases?: string[] } = {}): Promise<string> {
  const key = o.key ?? org.key;
  const m = await api(
    'post',
    '/v1/models',
    { name: 'm', model: 'fake-model', provider: 'openai', base_url: openai.url, system_prompt: AGENT_PROMPT, tool_ids: o.tools ?? [] },
    key,
  );
  expect(m.status).toBe(201);
  const a = await api(
    'post',
    '/v1/agents',
    {
      name: 'a',
      llm_id: m.body.id,
      ...(o.first_message ? { first_message: o.first_message } : {}),
      ...(o.end_call_phrases ? { end_call_phrases: o.end_call_phrases } : {}),
    },
    key,
  );
  expect(a.status).toBe(201);
  return a.body.id as string;
}

async function scenario(body: Record<string, unknown>, key = org.key): Promise<string> {
  const res = await api('post', '/v1/test-scenarios', { name: 's', ...body }, key);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

/** Starts a run and waits (bounded) until it has ended. */
async function runToEnd(agentId: string, body: Record<string, unknown>, key = org.key) {
  const started = await api('post', `/v1/agents/${agentId}/test-runs`, body, key);
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  return waitFor(started.body.id, key, (r) => r.status === 'completed' || r.status === 'canceled');
}

async function waitFor(runId: string, key: string, done: (run: any) => boolean, timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await api('get', `/v1/test-runs/${runId}`, undefined, key);
    expect(res.status).toBe(200);
    if (done(res.body)) return res.body;
    if (Date.now() > until) throw new Error(`run ${runId} did not get there: ${JSON.stringify(res.body).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

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
    const unknownType = await api('post', '/v1/test-scenarios', { name: 'x', script: [{ say: 'x' }], expectations: [{ type: 'vibes' }] });
    expect(unknownType.status).toBe(422);
    expect(unknownType.body.detail[0].loc).toEqual(['body', 'expectations', 0, 'type']);
  });
});

describe('text-mode runs', () => {
  it('a judge passes one conversation and fails another, saying why; test_run.completed carries the counts', async () => {
    agentReply = (req) => ({ text: /move/i.test(lastUserText(req)) ? 'Done, your appointment is now on Wednesday at 9:30.' : 'Goodbye!' });
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
    agentReply = (req) => {
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
    callerReply = (req) => (/Agent:/.test(lastUserText(req)) ? 'Great, that is all.' : 'Hi, I want to move Tuesday to Wednesday.');
    agentReply = (req) => ({ text: /all/i.test(lastUserText(req)) ? 'Thank you, goodbye.' : 'Sure, moved to Wednesday.' });
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

describe('the agent-test CLI', () => {
  const cli = (args: string[], env: Record<string, string>) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const script = path.resolve(import.meta.dirname, '../../../../scripts/agent-test.ts');
      execFile(process.execPath, [script, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  it('exits 0 when the suite passes, 1 naming the failed expectation when a prompt change breaks it, 2 on bad input', async () => {
    agentReply = () => ({ text: 'We are open from nine to five.' });
    const agentId = await agentWith();
    const id = await scenario({
      name: 'Opening hours',
      script: [{ say: 'When are you open?' }],
      expectations: [{ type: 'transcript_contains', text: 'nine', role: 'agent' }],
    });
    const suite = await api('post', '/v1/test-suites', { name: 'ci', agent_id: agentId, scenario_ids: [id] });
    const env = { VAP_API_KEY: org.key, VAP_API_URL: tp.url };
    const ok = await cli(['--agent', agentId, '--suite', suite.body.id], env);
    expect(ok.stdout).toContain('PASS  Opening hours');
    expect(ok.code).toBe(0);

    agentReply = () => ({ text: 'Please check our website.' });
    const broken = await cli(['--agent', agentId, '--suite', suite.body.id], env);
    expect(broken.code).toBe(1);
    expect(broken.stdout).toContain('FAIL  Opening hours');
    expect(broken.stdout).toContain('✗ agent says "nine": "nine" was never said by the agent');

    expect((await cli(['--agent', agentId], env)).code).toBe(2);
    expect((await cli(['--agent', agentId, '--suite', suite.body.id], { VAP_API_KEY: '', VAP_API_URL: tp.url })).code).toBe(2);
    const unknown = await cli(['--agent', '00000000-0000-4000-8000-000000000000', '--suite', suite.body.id], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('404');
  });
});

describe('security', () => {
  it('never sends the platform key to the tenant model, and a tool at a private address is refused by the SSRF guard', async () => {
    // A private address is refused at creation; one reached later (a name re-pointed, as in DNS rebinding) is
    // refused when the test calls it: stored straight into the row here.
    const tool = await api('post', '/v1/tools', { type: 'function', name: 'lookup', url: 'https://tools.example.com/lookup' });
    await tp.sql`update tools set url = 'http://10.255.255.1/internal' where id = ${tool.body.id}`;
    agentReply = (req) =>
      req.messages.at(-1)!.role === 'tool' ? { text: 'Sorry, I could not look that up.' } : { toolCalls: [{ name: 'lookup', arguments: {} }] };
    const agentId = await agentWith({ tools: [tool.body.id] });
    const id = await scenario({ script: [{ say: 'Look it up.' }] });
    const before = openai.headers.length;
    const run = await runToEnd(agentId, { scenario_ids: [id] });
    expect(run.results[0].tool_calls).toEqual([
      {
        tool: 'lookup',
        arguments: {},
        output: 'The lookup service is at an address the platform may not call (private or local network).',
        error: true,
        mocked: false,
      },
    ]);
    const sent = openai.headers.slice(before);
    expect(sent.length).toBeGreaterThan(0);
    for (const h of sent) expect(JSON.stringify(h)).not.toContain(PLATFORM_KEY);
  });
});

describe('bad input and tenancy', () => {
  it("answers 404 for an unknown agent, another org's suite or scenario, and 422 for a bad run body", async () => {
    const other = await tp.createOrg('other');
    const agentId = await agentWith();
    const otherAgent = await agentWith({ key: other.key });
    const theirScenario = await scenario({ script: [{ say: 'hi' }] }, other.key);
    const theirSuite = await api('post', '/v1/test-suites', { name: 'theirs', agent_id: otherAgent, scenario_ids: [theirScenario] }, other.key);
    const mine = await scenario({ script: [{ say: 'hi' }] });

    const unknown = await api('post', '/v1/agents/00000000-0000-4000-8000-000000000000/test-runs', { scenario_ids: [mine] });
    expect(unknown).toMatchObject({ status: 404, body: { type: 'not_found', detail: 'Agent not found' } });
    expect((await api('post', `/v1/agents/${otherAgent}/test-runs`, { scenario_ids: [mine] })).status).toBe(404);
    expect((await api('post', `/v1/agents/${agentId}/test-runs`, { suite_id: theirSuite.body.id })).body).toMatchObject({
      type: 'not_found',
      detail: 'Test suite not found',
    });
    expect((await api('post', `/v1/agents/${agentId}/test-runs`, { scenario_ids: [mine, theirScenario] })).body).toMatchObject({
      type: 'not_found',
      detail: 'Test scenario not found',
    });
    expect((await api('get', `/v1/test-suites/${theirSuite.body.id}`)).status).toBe(404);

    const both = await api('post', `/v1/agents/${agentId}/test-runs`, { suite_id: theirSuite.body.id, scenario_ids: [mine] });
    expect(both.body.detail).toEqual([
      { loc: ['body', 'suite_id'], msg: 'Give exactly one of suite_id and scenario_ids', type: 'value_error', input: expect.any(Object) },
    ]);
    const audio = await api('post', `/v1/agents/${agentId}/test-runs`, { scenario_ids: [mine], mode: 'audio' });
    expect(audio.status).toBe(422);
    expect(audio.body.detail[0]).toMatchObject({ loc: ['body', 'mode'] });
    // A suite naming another org's scenario is a 422 at the id.
    const suite = await api('post', '/v1/test-suites', { name: 'x', agent_id: agentId, scenario_ids: [mine, theirScenario] });
    expect(suite.body.detail).toEqual([
      { loc: ['body', 'scenario_ids', 1], msg: 'No test scenario with this id in your organisation', type: 'reference_not_found', input: theirScenario },
    ]);
    // A scenario in a suite cannot be deleted.
    const ok = await api('post', '/v1/test-suites', { name: 'y', agent_id: agentId, scenario_ids: [mine] });
    const del = await api('delete', `/v1/test-scenarios/${mine}`);
    expect(del).toMatchObject({ status: 409, body: { suites: [{ id: ok.body.id, name: 'y' }] } });
  });
});

describe('concurrency and cancel', () => {
  it('runs 100 scenarios at most max_concurrent_calls at a time, and a real call is still admitted meanwhile', async () => {
    const busy = await tp.createOrg('busy');
    await tp.sql`update orgs set max_concurrent_calls = 3 where id = ${busy.orgId}`;
    let inFlight = 0;
    let most = 0;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let seen = 0;
    agentReply = async () => {
      inFlight++;
      most = Math.max(most, inFlight);
      // Hold the first conversations until the web call below has been tried, so it meets a full house.
      if (++seen <= 3) await gate;
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      return { text: 'Noted.' };
    };
    const agentId = await agentWith({ key: busy.key });
    const ids: string[] = [];
    for (let i = 0; i < 100; i++)
      ids.push(await scenario({ name: `s${i}`, script: [{ say: `Question ${i}` }], expectations: [{ type: 'transcript_contains', text: 'noted' }] }, busy.key));
    const started = await api('post', `/v1/agents/${agentId}/test-runs`, { scenario_ids: ids }, busy.key);
    expect(started.status).toBe(201);
    await waitFor(started.body.id, busy.key, (r) => r.results.filter((x: any) => x.status === 'running').length === 3);
    // Three test conversations hold all three of the org's slots' worth of test concurrency, yet a web call
    // is admitted (it then fails at the media stage: this platform has no LiveKit server), never refused 429.
    const call = await tp.request('post', '/v1/calls/web', { key: busy.key, body: { agent_id: agentId } });
    expect(call.status).toBe(503);
    release();
    const run = await waitFor(started.body.id, busy.key, (r) => r.status === 'completed', 120_000);
    expect(run).toMatchObject({ total: 100, passed: 100, failed: 0, errored: 0 });
    expect(most).toBe(3);
  });

  it('voice mode: a scenario waits while real calls fill max_concurrent_calls; its test call is no billable call and takes no slot', async () => {
    const org2 = await tp.createOrg('voice-yield');
    await tp.sql`update orgs set max_concurrent_calls = 1 where id = ${org2.orgId}`;
    const agentId = await agentWith({ key: org2.key });
    const realCall = randomUUID();
    await tp.sql`insert into calls (id, org_id, agent_id, type, status, started_at) values (${realCall}, ${org2.orgId}, ${agentId}, 'web', 'in_progress', now())`;
    const id = await scenario({ script: [{ say: 'Hello' }], expectations: [{ type: 'transcript_contains', text: 'hello' }] }, org2.key);
    const started = await api('post', `/v1/agents/${agentId}/test-runs`, { scenario_ids: [id], mode: 'voice' }, org2.key);
    expect(started.status).toBe(201);
    // The runner polls every 300 ms: after several polls the scenario has still not started.
    await waitFor(started.body.id, org2.key, (r) => r.status === 'running');
    await new Promise((r) => setTimeout(r, 1500));
    expect((await api('get', `/v1/test-runs/${started.body.id}`, undefined, org2.key)).body.results[0].status).toBe('pending');
    await tp.sql`update calls set status = 'completed', ended_at = now() where id = ${realCall}`;
    const run = await waitFor(started.body.id, org2.key, (r) => r.status === 'completed');
    // This platform has no LiveKit server: the call is made, then fails at the media stage, and the result says so.
    const [r] = run.results;
    expect(r).toMatchObject({ status: 'error', error: 'the media service is unavailable: the test call could not be started', call_id: expect.any(String) });
    const [call] = await tp.sql`select test_run_id, status, metadata from calls where id = ${r.call_id}`;
    expect(call).toMatchObject({ test_run_id: run.id, status: 'failed', metadata: { test_run_id: run.id, scenario_id: id } });
    // A live test call takes no slot: a real call is still admitted (then fails at the media stage: 503, not 429).
    await tp.sql`update calls set status = 'in_progress' where id = ${r.call_id}`;
    expect((await tp.request('post', '/v1/calls/web', { key: org2.key, body: { agent_id: agentId } })).status).toBe(503);
    const usage = await api('get', '/v1/usage', undefined, org2.key);
    // The real call above and the 503 one; the test call is not among them, and took no daily slot.
    expect(usage.body).toMatchObject({ calls_this_month: 2, calls_made_today: 1 });
    // No call event was sent for the test call.
    const events = await tp.sql`select type from events where call_id = ${r.call_id}`;
    expect(events).toEqual([]);
  });

  it('cancels a run mid-way: pending scenarios never start, the one in flight keeps what was said, and the event says canceled', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    agentReply = async () => {
      await gate;
      return { text: 'Still here.' };
    };
    const agentId = await agentWith();
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) ids.push(await scenario({ script: [{ say: 'One' }, { say: 'Two' }] }));
    const started = await api('post', `/v1/agents/${agentId}/test-runs`, { scenario_ids: ids });
    await waitFor(started.body.id, org.key, (r) => r.results.some((x: any) => x.status === 'running'));
    const canceled = await api('post', `/v1/test-runs/${started.body.id}/cancel`);
    expect(canceled.status).toBe(200);
    expect(canceled.body.status).toBe('canceled');
    release();
    const run = await waitFor(started.body.id, org.key, (r) => r.results.every((x: any) => x.status !== 'running' && x.status !== 'pending'));
    expect(run.results.every((x: any) => x.status === 'canceled')).toBe(true);
    const inFlight = run.results.filter((x: any) => x.messages.length > 0);
    expect(inFlight.length).toBeGreaterThan(0);
    expect(inFlight[0].messages[0]).toEqual({ role: 'user', content: 'One' });
    const until = Date.now() + 10_000;
    let event: any;
    while (!event && Date.now() < until) {
      [event] = await tp.sql`select payload from events where type = 'test_run.completed' and (payload->>'test_run_id') = ${run.id}`;
      if (!event) await new Promise((r) => setTimeout(r, 100));
    }
    expect(event.payload).toMatchObject({ status: 'canceled', total: 10, passed: 0, failed: 0 });
    const [audit] = await tp.sql`select action from audit_events where resource_id = ${run.id} and action = 'test_run.cancel'`;
    expect(audit).toBeTruthy();
  });

  it('lets a webhook subscribe to test_run.completed', async () => {
    const res = await api('post', '/v1/webhooks', { name: 'ci', url: 'https://hooks.example.com/ci', events: ['test_run.completed'] });
    expect(res.status).toBe(201);
  });
});
