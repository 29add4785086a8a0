// A worker's drain on the real stack (LiveKit, the control plane, one media worker with one prewarmed job process):
// two calls arrive together, one takes the prewarmed process and the other waits for the next one to start, and
// the worker gets its SIGTERM as soon as it has the second job offer. Both calls must be greeted and served to the
// end, and the worker must then exit by itself (drain-after-launches.ts: before it, agents-js's drain closed the
// process the second call waited for, and that call failed `dispatch_timeout`; docs/operations.md, "What happens
// when …"). No durations are asserted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { disposeRtc } from '../support/rtc-client.ts';
import { webCall, type WebCaller } from '../support/web-caller.ts';
import { untilEvery } from '../support/e2e.ts';
import { alive, workerLog } from '../support/worker-log.ts';

const ESPEAK = { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' };

let stack: TestStack;
let llm: FakeOpenAI;
let agentId: string;

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(50);

/** The worker log's lines with this message. */
const logLines = (msg: string) => workerLog(stack.logDir).filter((l) => l.msg === msg);

async function greeted(caller: WebCaller): Promise<void> {
  await caller.heard.until(() => caller.heard.pcm().samples.some((s) => Math.abs(s) > 1500), 120_000, `the greeting of ${caller.callId}`);
}

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder(() => ({ text: 'We open at nine.' }));
  ({ stack } = await fixture.start({
    org: 'worker-drain',
    worker: true,
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      DISPATCH_TIMEOUT_SECONDS: '90',
      // One prewarmed process: the second call's job waits for the next one to start.
      JOB_IDLE_PROCESSES: '1',
      JOB_INIT_TIMEOUT_MS: '60000',
    },
  }));
  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'You are the receptionist of Acme Dental.' });
  agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, tts: ESPEAK, first_message: 'Hello, Acme Dental.' });
}, 240_000);

afterAll(async () => {
  await disposeRtc();
  await fixture.stop();
  await llm?.close();
});

describe('a worker drains', () => {
  it('launches the job it accepted just before its SIGTERM: both calls are served, then it exits by itself', { timeout: 420_000 }, async () => {
    const worker = stack.services.find((s) => s.name === 'worker');
    expect(worker?.pid, 'the stack runs a worker').toBeTruthy();
    const pid = worker!.pid!;
    const offersBefore = logLines('received job request').length;

    const [a, b] = await Promise.all([webCall(api, { agent_id: agentId }), webCall(api, { agent_id: agentId })]);
    try {
      await until('the worker to get both job offers', () => logLines('received job request').length >= offersBefore + 2, 120_000);
      process.kill(pid, 'SIGTERM');

      // Both callers are greeted: the job accepted before the drain was launched, not dropped.
      await Promise.all([greeted(a), greeted(b)]);
      // The worker's `started` report is sent alongside the greeting, not before it: wait for it rather than race it.
      for (const c of [a, b]) {
        const status = await until(`${c.callId} to be in progress`, async () => {
          const s = (await api('GET', `/v1/calls/${c.callId}`)).body.status as string;
          return s === 'initiated' || s === 'queued' ? null : s;
        }, 60_000);
        expect(status).toBe('in_progress');
      }
      expect(logLines('draining: launching the jobs accepted before the drain').length, 'the drain waited for a launch').toBeGreaterThan(0);
      expect(alive(pid), 'the worker drains while its calls go on').toBe(true);

      // The callers hang up; the worker, now idle, exits by itself.
      await a.client.leave();
      await b.client.leave();
      for (const c of [a, b]) {
        const call = await until(
          `${c.callId} to end`,
          async () => {
            const body = (await api('GET', `/v1/calls/${c.callId}`)).body;
            return body.status === 'completed' || body.status === 'failed' ? body : null;
          },
          120_000,
        );
        expect({ status: call.status, end_reason: call.end_reason }).toEqual({ status: 'completed', end_reason: 'user_hangup' });
      }
      await until('the drained worker to exit', () => !alive(pid), 120_000);
    } finally {
      await Promise.all([a.client.leave().catch(() => {}), b.client.leave().catch(() => {})]);
    }
  });
});
