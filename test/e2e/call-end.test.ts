// A call's end, in every order, on the real stack (LiveKit, the SIP bridge, the control plane, a media worker):
// an API stop with the caller still in the room, the caller leaving, the agent's own end, a stop at each step of
// the start, and a SIP caller hanging up during the greeting. Each call's job process must be free as soon as the
// call has ended: its own exit (the worker log's `job process exit` line, and the pid gone) is observed, and the
// worker must never have fallen back on agents-js's 15 s entrypoint timeout, the session's bounded close or
// agents-js's 60 s session close timeout. No durations are asserted: orderings, and bounds the test observed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestStack } from '../support/stack.ts';
import { sipBridgeVersion } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { RtcClient, disposeRtc } from '../support/rtc-client.ts';
import { SipPhone } from '../support/sip-phone.ts';
import { untilEvery } from '../support/e2e.ts';
import { alive, workerLog as readWorkerLog, type LogLine } from '../support/worker-log.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';

// Long enough that a stop or hang-up "during the greeting" lands while it is synthesized or plays.
const FIRST_MESSAGE = 'Hello, thank you for calling Acme Dental. We are open from nine in the morning until five in the evening, every day but Sunday.';
// espeak-ng: its first audio in milliseconds, where festival's can take seconds on a loaded machine.
const ESPEAK = { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' };
const SUMMARY = 'The caller rang the practice.';
/** call.ended's wait for the analysis (the control plane's CALL_ENDED_ANALYSIS_WAIT_SECONDS, set below). */
const ANALYSIS_WAIT_SECONDS = 10;
/** Lines that say a job's end fell back on a timeout instead of following the call's end. */
const FALLBACKS = /did not exit in time|session close is slow|AgentSession\.close\(\) timed out|job shutdown is taking too much time|job is unresponsive/;

let stack: TestStack;
let llm: FakeOpenAI;
let sql: Sql;
let agentId: string;
let goodbyeAgentId: string;

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(100);

const workerLog = () => readWorkerLog(stack.logDir);

/**
 * The call's job process has exited: its `job process exit` line, and its pid gone. Returns the exit's time
 * (the line's clock, this machine's) and every line that process wrote.
 */
async function jobExit(callId: string): Promise<{ exitAt: number; pid: number; lines: LogLine[] }> {
  const exit = await until('the job process to exit', () => workerLog().find((l) => l.msg === 'job process exit' && l.call_id === callId), 60_000);
  await until('the job process to be gone', () => !alive(exit.pid), 10_000);
  const lines = workerLog().filter((l) => l.pid === exit.pid);
  return { exitAt: Date.parse(exit.time), pid: exit.pid, lines };
}

/** The worker's voice_active_calls gauge. */
async function activeCalls(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${stack.ports.workerMetrics}/metrics`)).text();
  return Number(/^voice_active_calls\s+(\d+)/m.exec(text)?.[1] ?? NaN);
}

/**
 * The gauge counts a job until its process has exited: once it reads 0, the process is gone (an exit is for
 * good, so a process seen alive after the gauge read 0 was alive when it did).
 */
async function expectGaugeFollowsExit(pid: number): Promise<void> {
  await until('voice_active_calls to read 0', async () => (await activeCalls()) === 0, 60_000);
  expect(alive(pid)).toBe(false);
}

/** The worker's job ended the call itself, without any timeout standing in for the end. */
function expectNoFallback(lines: LogLine[]): void {
  expect(lines.filter((l) => FALLBACKS.test(l.msg)).map((l) => l.msg)).toEqual([]);
}

/** The call.ended event's payload, once emitted. */
async function endedEvent(callId: string): Promise<{ payload: Record<string, any>; created_at: Date }> {
  return until(
    'call.ended',
    async () => (await sql<{ payload: Record<string, any>; created_at: Date }[]>`select payload, created_at from events where call_id = ${callId} and type = 'call.ended'`)[0],
    60_000,
  );
}

/** A web call's caller joined and publishing; the agent's audio recorded. */
async function webCall(agent = agentId) {
  const t0 = Date.now();
  const created = await api('POST', '/v1/calls/web', { agent_id: agent });
  expect(created.status).toBe(201);
  const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
  await client.publishMicrophone();
  return { callId: created.body.id as string, client, audio: client.record({}), t0 };
}

/** The agent's audio has started to play at the caller. */
async function greetingPlaying(audio: ReturnType<RtcClient['record']>): Promise<void> {
  await audio.until(() => audio.pcm().samples.some((s) => Math.abs(s) > 1500), 90_000, 'the greeting to play');
}

/**
 * Leaves the room. rtc-node's leave can wait for good once the server has deleted the room under it (the stop,
 * the agent's hang-up): the client is let go after a while instead, and disposed of with the rest at the end.
 */
async function leave(client: RtcClient): Promise<void> {
  await Promise.race([client.leave().catch(() => {}), new Promise((r) => setTimeout(r, 10_000).unref())]);
}

/** When the job decided the call's end (its `call ending` line): what the call's length may run to. */
function endingAt(lines: LogLine[]): number {
  const line = lines.find((l) => l.msg === 'call ending');
  expect(line, 'the job logged the call ending').toBeTruthy();
  return Date.parse(line!.time);
}

/**
 * The call's length runs from its start to the end the job decided on (not to the end of its session's close):
 * started after `from`, ended by the job's `call ending`, which followed the leave at `leftAt`. The worker rounds
 * the length to 0.1 s, the record to whole seconds.
 */
function expectLengthUpTo(call: { started_at: string; ended_at: string; duration_seconds: number }, from: number, leftAt: number, endedAt: number): void {
  expect(Date.parse(call.started_at)).toBeGreaterThanOrEqual(from);
  expect(endedAt).toBeGreaterThanOrEqual(leftAt);
  expect(Date.parse(call.ended_at)).toBeLessThanOrEqual(endedAt);
  expect(call.duration_seconds).toBeLessThanOrEqual(Math.round((endedAt - Date.parse(call.started_at)) / 1000 + 0.05));
}

async function stop(callId: string): Promise<number> {
  const at = Date.now();
  const res = await api('POST', `/v1/calls/${callId}/stop`);
  expect(res.status).toBe(200);
  return at;
}

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    const system = String(req.messages[0]?.content ?? '');
    if (system.startsWith('You analyse')) return { text: JSON.stringify({ summary: SUMMARY, outcome: 'greeted' }) };
    return { text: 'We open at nine.' };
  });
  ({ stack, sql } = await fixture.start({
    org: 'call-end',
    worker: true,
    sip: 'if-built',
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      DISPATCH_TIMEOUT_SECONDS: '60',
      // A loaded machine can take longer than agents-js's 10 s to start a job process.
      JOB_INIT_TIMEOUT_MS: '60000',
      SIP_RINGING_TIMEOUT_SECONDS: '90',
      CALL_ENDED_ANALYSIS_WAIT_SECONDS: String(ANALYSIS_WAIT_SECONDS),
    },
  }));
  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'You are the receptionist of Acme Dental.' });
  agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, tts: ESPEAK, first_message: FIRST_MESSAGE });
  // Its first message ends the call: the agent's own end, once it has been said.
  goodbyeAgentId = await createLocalAgent(api, { name: 'Goodbye', llm_id: modelId, tts: ESPEAK, first_message: 'Thank you for calling. Goodbye.', end_call_phrases: ['goodbye'] });
}, 240_000);

afterAll(async () => {
  await disposeRtc();
  await fixture.stop();
  await llm?.close();
});

describe('a call ends at once, and its job process is free, in every order', () => {
  it('an API stop with the caller still in the room: the job exits, and call.ended carries the analysis', { timeout: 240_000 }, async () => {
    const { callId, client, audio } = await webCall();
    let stoppedAt: number;
    try {
      await greetingPlaying(audio);
      await audio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      stoppedAt = await stop(callId);
      const { exitAt, pid, lines } = await jobExit(callId);
      expectNoFallback(lines);
      await expectGaugeFollowsExit(pid);
      // Freed before call.ended's wait for the analysis could have run out.
      expect(exitAt).toBeLessThan(stoppedAt + ANALYSIS_WAIT_SECONDS * 1000);
    } finally {
      await leave(client);
    }
    const ended = await endedEvent(callId);
    expect(ended.payload).toMatchObject({ outcome: 'greeted', ai_summary: SUMMARY, analysis: { summary: SUMMARY, outcome: 'greeted' } });
    expect((await api('GET', `/v1/calls/${callId}`)).body.end_reason).toBe('api_stop');
    expect(ended.payload.messages?.[0]?.content ?? FIRST_MESSAGE).toBe(FIRST_MESSAGE);
  });
});

describe('the caller leaves, or the agent ends the call', () => {
  it('a web caller leaving during the greeting: recorded up to the leave, the job exits without a timeout', { timeout: 240_000 }, async () => {
    const { callId, client, audio, t0 } = await webCall();
    await greetingPlaying(audio);
    const leftAt = Date.now();
    await client.leave();
    const { pid, lines } = await jobExit(callId);
    expectNoFallback(lines);
    await expectGaugeFollowsExit(pid);
    const call = await until('the call to complete', async () => {
      const c = (await api('GET', `/v1/calls/${callId}`)).body;
      return c.status === 'completed' && c.messages ? c : null;
    });
    expect(call.end_reason).toBe('user_hangup');
    expectLengthUpTo(call, t0, leftAt, endingAt(lines));
  });

  it("the agent's own end: the job exits, and call.ended carries the analysis", { timeout: 240_000 }, async () => {
    const { callId, client } = await webCall(goodbyeAgentId);
    try {
      const { lines } = await jobExit(callId);
      expectNoFallback(lines);
    } finally {
      await leave(client);
    }
    const ended = await endedEvent(callId);
    expect(ended.payload).toMatchObject({ outcome: 'greeted', ai_summary: SUMMARY });
    expect((await api('GET', `/v1/calls/${callId}`)).body.end_reason).toBe('agent_hangup');
  });
});

describe('a stop at each step of the start', () => {
  // Each stop is sent as the caller sees the step happen: at once (the job has not joined), when the agent has
  // joined (its session is being built or started), when its audio track is there (the greeting is being
  // synthesized), and when the greeting is heard.
  const steps: [string, (c: RtcClient, audio: ReturnType<RtcClient['record']>) => Promise<unknown>][] = [
    ['before the job connects', async () => {}],
    ['once the agent has joined', (c) => c.waitForParticipant(undefined, 90_000)],
    [
      'once its audio track is there',
      (c) =>
        until('the agent track', () => [...c.room.remoteParticipants.values()].some((p) => p.trackPublications.size > 0), 90_000),
    ],
    ['while the greeting plays', (_c, audio) => greetingPlaying(audio)],
  ];
  for (const [step, reached] of steps) {
    it(`stopped ${step}: no job holds the call, and none fell back on a timeout`, { timeout: 240_000 }, async () => {
      const { callId, client, audio } = await webCall();
      try {
        await reached(client, audio);
        await stop(callId);
        // A job that took the call exits; one that never did leaves none behind. Either way the worker holds none.
        await until('voice_active_calls to read 0', async () => (await activeCalls()) === 0, 120_000);
        for (const exit of workerLog().filter((l) => l.call_id === callId)) expect(alive(exit.pid)).toBe(false);
        const pids = new Set(workerLog().filter((l) => l.call_id === callId).map((l) => l.pid));
        expectNoFallback(workerLog().filter((l) => pids.has(l.pid)));
      } finally {
        await leave(client);
      }
      expect((await api('GET', `/v1/calls/${callId}`)).body.status).toBe('completed');
    });
  }
});

describe.skipIf(!sipBridgeVersion())('a SIP caller hangs up during the greeting', () => {
  it('is recorded at its real length, and its job exits without a timeout', { timeout: 240_000 }, async () => {
    const number = await api('POST', '/v1/phone-numbers', { agent_id: agentId, area_code: '415' });
    expect(number.status, JSON.stringify(number.body)).toBe(200);
    const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: number.body.phone_number });
    let invitedAt = 0;
    let hungUpAt = 0;
    try {
      await phone.startMedia();
      await phone.waitFor('the greeting to play', () => phone.firstAudioAt !== null, 90_000);
      invitedAt = phone.inviteSentAt!;
      hungUpAt = Date.now();
      await phone.hangUp();
    } finally {
      await phone.close();
    }
    const [row] = await sql<{ id: string }[]>`select id from calls where to_number = ${number.body.phone_number}`;
    const { lines } = await jobExit(row!.id);
    expectNoFallback(lines);
    const call = await until('the call to complete', async () => {
      const c = (await api('GET', `/v1/calls/${row!.id}`)).body;
      return c.status === 'completed' && c.messages ? c : null;
    });
    expect(call.end_reason).toBe('user_hangup');
    // The leg: from the answer (after the INVITE the test sent) to the BYE (after the test hung up).
    expectLengthUpTo(call, invitedAt, hungUpAt, endingAt(lines));
  });
});
