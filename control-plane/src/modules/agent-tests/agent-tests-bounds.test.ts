// Agent tests in text mode (as agent-tests.test.ts): the agent-test CLI, security, bad input and tenancy, 100
// scenarios under the organisation's concurrency bound, and a cancel mid-way.
import { randomUUID } from 'node:crypto';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { PLATFORM_KEY, agentWith, api, openai, org, runToEnd, scenario, tp, waitFor, replies } from './agent-tests.test-support.ts';

describe('the agent-test CLI', () => {
  const cli = (args: string[], env: Record<string, string>) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      const script = path.resolve(import.meta.dirname, '../../../../scripts/agent-test.ts');
      execFile(process.execPath, [script, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
      );
    });

  it('exits 0 when the suite passes, 1 naming the failed expectation when a prompt change breaks it, 2 on bad input', async () => {
    replies.agent = () => ({ text: 'We are open from nine to five.' });
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

    replies.agent = () => ({ text: 'Please check our website.' });
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
    replies.agent = (req) =>
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
    replies.agent = async () => {
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
    replies.agent = async () => {
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
