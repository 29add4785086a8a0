// A voice-mode agent test in a real room, with no cloud key: the real supervisor starts LiveKit, the control
// plane and a media worker; the agent speaks with festival and hears with pocketsphinx, and its LLM is the
// OpenAI-compatible stand-in; the control plane's simulated caller joins the agent's room like a web caller
// and speaks the scenario's script with the same local voices. The stand-in books only when the agent's prompt
// says it may and the worker's STT heard the request, so a pass shows the audio carried the words both ways.
// Then the prompt is changed so the agent no longer books: the same scenario fails, and its failed expectations
// say why. The offline profile (ANALYSIS_MODE=extractive) has no model to judge with: an llm_judge says so.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { contentText, lastUserText, startFakeOpenAI, type ChatRequest, type FakeOpenAI } from '../support/fake-openai.ts';
import { untilEvery } from '../support/e2e.ts';

const BOOKING_PROMPT = 'You are the receptionist of Acme Dental. You may book appointments with the book_appointment tool.';
const BROKEN_PROMPT = 'You are the receptionist of Acme Dental. Appointments are handled by email only.';
const BOOKED = 'Your appointment is booked for Wednesday.';
const REFUSED = 'Sorry, please send us an email instead.';
/** Words the worker's pocketsphinx is likely to catch in the caller's request (any one will do). */
const REQUEST_WORDS = ['book', 'appointment', 'wednesday', 'like', 'would'];

let llm: FakeOpenAI;
let agentId: string;
let modelId: string;
let toolServer: http.Server;
const toolRequests: { headers: http.IncomingHttpHeaders; body: string }[] = [];

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(1000);

function agentReply(req: ChatRequest) {
  const system = contentText(req.messages[0]!);
  const last = req.messages.at(-1)!;
  if (last.role === 'tool') return { text: BOOKED };
  // As a real model would: a booking already in the context is not made again. The caller's one line can reach
  // the agent as two user turns (pocketsphinx splits it at a pause), and the first may have booked; the worker
  // keeps an interrupted turn's tool call and output in the context, so a second booking here means it did not.
  const booked = req.messages.some((m) => m.tool_calls?.some((c) => c.function.name === 'book_appointment'));
  if (booked) return { text: BOOKED };
  const asked = lastUserText(req).toLowerCase();
  if (system === BOOKING_PROMPT && REQUEST_WORDS.some((w) => asked.includes(w))) {
    return { toolCalls: [{ name: 'book_appointment', arguments: { day: 'Wednesday' } }] };
  }
  return { text: REFUSED };
}

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20, responder: agentReply });
  toolServer = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      toolRequests.push({ headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"booked":true}');
    });
  });
  await new Promise<void>((r) => toolServer.listen(0, '127.0.0.1', r));

  await fixture.start({
    org: 'e2e-agent-tests',
    worker: true,
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      ANALYSIS_MODE: 'extractive',
      REAP_DELAY_SECONDS: '1',
      // A shared, busy machine can need longer to start a job process (as in the other e2e files).
      JOB_INIT_TIMEOUT_MS: '60000',
    },
  });

  const tool = await api('POST', '/v1/tools', {
    type: 'function',
    name: 'book_appointment',
    description: 'Book an appointment',
    url: `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}/book`,
    parameters: { type: 'object', properties: { day: { type: 'string' } } },
  });
  expect(tool.status).toBe(201);
  modelId = await createStandInModel(api, llm.url, { system_prompt: BOOKING_PROMPT, tool_ids: [tool.body.id] });
  agentId = await createLocalAgent(api, {
    name: 'Receptionist',
    llm_id: modelId,
    // espeak-ng, the lighter voice: the agent's words are read from the worker's record, not heard.
    tts: { provider: 'local', model: 'espeak-ng' },
    first_message: 'Hello, Acme Dental.',
    enable_recording: true,
  });
}, 180_000);

afterAll(async () => {
  await fixture.stop();
  toolServer?.close();
  await llm?.close();
});

async function scenario(name: string, expectations: unknown[]): Promise<string> {
  const s = await api('POST', '/v1/test-scenarios', {
    name,
    script: [{ say: 'I would like to book an appointment for Wednesday please.' }],
    max_turns: 3,
    max_duration_seconds: 120,
    expectations,
  });
  expect(s.status).toBe(201);
  return s.body.id;
}

async function finished(runId: string) {
  return until(
    'the run to finish',
    async () => {
      const r = await api('GET', `/v1/test-runs/${runId}`);
      return r.body.status === 'completed' ? r.body : null;
    },
    300_000,
  );
}

describe('a voice-mode agent test in a real room', () => {
  let books: string;

  it('passes a scripted scenario against a local-speech agent; llm_judge says no model is configured', async () => {
    books = await scenario('books Wednesday', [
      { type: 'tool_called', tool: 'book_appointment', arguments: { day: { equals: 'Wednesday' } } },
      { type: 'transcript_contains', text: 'booked for Wednesday', role: 'agent' },
      { type: 'ended_by', by: 'caller' },
    ]);
    const judged = await scenario('judged', [{ type: 'llm_judge', question: 'Did the agent book the appointment?' }]);
    const created = await api('POST', `/v1/agents/${agentId}/test-runs`, { scenario_ids: [books, judged], mode: 'voice' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ mode: 'voice', status: 'queued', total: 2 });

    const run = await finished(created.body.id);
    const [ok, judge] = run.results;
    expect(ok, JSON.stringify(ok)).toMatchObject({ status: 'passed', ended_by: 'caller', turns: 1 });
    expect(ok.expectations.every((e: { passed: boolean }) => e.passed)).toBe(true);
    expect(ok.tool_calls).toEqual([{ tool: 'book_appointment', arguments: { day: 'Wednesday' }, output: '{"booked":true}', error: false, mocked: false }]);
    expect(ok.messages.some((m: { role: string; content: string }) => m.role === 'agent' && m.content === BOOKED)).toBe(true);
    expect(ok.latency.e2e.samples).toBeGreaterThanOrEqual(1);
    expect(ok.duration_seconds).toBeGreaterThan(0);
    // The tool server got the worker's signed request for this scenario's call, not a test run's. The judged
    // scenario's call books too, and may reach the tool server first.
    const request = toolRequests.find((r) => JSON.parse(r.body).call_id === ok.call_id);
    expect(request, JSON.stringify(toolRequests.map((r) => r.body))).toBeDefined();
    expect(JSON.parse(request!.body)).toMatchObject({ type: 'tool.call', call_id: ok.call_id, name: 'book_appointment', arguments: { day: 'Wednesday' } });
    expect(request!.headers['user-agent']).toBe('vap-worker');

    expect(judge.status).toBe('failed');
    expect(judge.expectations[0]).toMatchObject({ type: 'llm_judge', passed: false });
    expect(judge.expectations[0].reason).toMatch(/^Not judged: no model is configured to judge: the platform runs the offline profile/);
    expect(run).toMatchObject({ passed: 1, failed: 1, errored: 0 });

    // The test call is the worker's own record, with its recording; it is no billable call.
    const call = await api('GET', `/v1/calls/${ok.call_id}`);
    expect(call.body).toMatchObject({ status: 'completed', type: 'web', metadata: { test_run_id: run.id } });
    const withRecording = await until('the recording', async () => (await api('GET', `/v1/test-runs/${run.id}`)).body.results[0].recording_url, 60_000);
    expect(withRecording).toMatch(/^http/);
    const usage = await api('GET', '/v1/usage');
    expect(usage.body).toMatchObject({ calls_made_today: 0, calls_this_month: 0 });
    expect(usage.body.test_minutes_this_month).toBeGreaterThan(0);
  }, 600_000);

  it('fails the same scenario once a prompt change breaks it, and the failed expectations say why', async () => {
    const patched = await api('PATCH', `/v1/models/${modelId}`, { system_prompt: BROKEN_PROMPT });
    expect(patched.status).toBe(200);
    const created = await api('POST', `/v1/agents/${agentId}/test-runs`, { scenario_ids: [books], mode: 'voice' });
    expect(created.status).toBe(201);
    const run = await finished(created.body.id);
    const [r] = run.results;
    expect(r.status, JSON.stringify(r)).toBe('failed');
    const byType = Object.fromEntries(r.expectations.map((e: { type: string }) => [e.type, e]));
    expect(byType.tool_called).toMatchObject({ passed: false, reason: 'book_appointment was never called (the agent called no tool)' });
    expect(byType.transcript_contains).toMatchObject({ passed: false, reason: '"booked for Wednesday" was never said by the agent' });
    expect(byType.ended_by).toMatchObject({ passed: true });
    expect(r.messages.some((m: { role: string; content: string }) => m.role === 'agent' && m.content === REFUSED)).toBe(true);
    expect(run).toMatchObject({ passed: 0, failed: 1 });
  }, 600_000);

  it('cancels a voice run mid-call: the caller leaves, the call ends, the result is canceled', async () => {
    const s = await api('POST', '/v1/test-scenarios', {
      name: 'long pause',
      script: [{ say: 'Hello.' }, { say: 'Are you still there?', wait_ms: 100_000 }],
      max_duration_seconds: 300,
      expectations: [{ type: 'ended_by', by: 'caller' }],
    });
    expect(s.status).toBe(201);
    const created = await api('POST', `/v1/agents/${agentId}/test-runs`, { scenario_ids: [s.body.id], mode: 'voice' });
    expect(created.status).toBe(201);
    const callId = await until(
      'the test call to be in progress',
      async () => {
        const id = (await api('GET', `/v1/test-runs/${created.body.id}`)).body.results[0].call_id;
        return id && (await api('GET', `/v1/calls/${id}`)).body.status === 'in_progress' ? (id as string) : null;
      },
      120_000,
    );
    const canceled = await api('POST', `/v1/test-runs/${created.body.id}/cancel`);
    expect(canceled.status).toBe(200);
    const run = await until('the run to be canceled', async () => {
      const r = (await api('GET', `/v1/test-runs/${created.body.id}`)).body;
      return r.results[0].status === 'canceled' ? r : null;
    });
    expect(run.status).toBe('canceled');
    // The room is gone, so the worker ended the call and reported it.
    await until('the test call to end', async () => (await api('GET', `/v1/calls/${callId}`)).body.status === 'completed', 60_000);
  }, 600_000);
});
