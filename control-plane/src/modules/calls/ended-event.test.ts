// call.ended as a webhook receiver sees it: the spec says its `outcome` and `ai_summary` are strings, so it waits
// for the post-call analysis (up to CALL_ENDED_ANALYSIS_WAIT_SECONDS) and carries its result; transcript.final
// and call.analyzed follow, in the spec's order. With nothing to wait for (analysis off, or failed) it goes at
// once; past the bound it goes with what is known. Exactly one call.ended per call, however the analysis and
// the bound's job race. The worker's side is driven through the internal API, the model is a local double.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { eventually, Receiver } from '../../../../test/support/webhook-receiver.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../../../test/support/fake-openai.ts';
import { runAnalysis } from './jobs.ts';
import { failCall, releaseEndedEvent } from './lifecycle.ts';
import { getCallById } from './queries.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const NO_LATENCY = Object.fromEntries(['llm_ttft', 'tts_ttfb', 'eou_delay', 'e2e'].map((k) => [k, { avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 }]));
const USAGE = { stt_seconds: 1, llm_prompt_tokens: 1, llm_completion_tokens: 1, tts_characters: 1 };
const MESSAGES = [
  { role: 'agent', content: 'Bright Smiles dental, how can I help?' },
  { role: 'user', content: 'A cleaning next Tuesday, please.' },
  { role: 'agent', content: 'Booked for Tuesday at 10.' },
];
const SUMMARY = 'The caller booked a cleaning for Tuesday at 10.';
const ANSWER = { text: JSON.stringify({ summary: SUMMARY, outcome: 'Appointment Booked' }) };

let tp: TestPlatform;
let llm: FakeOpenAI;
let rx: Receiver;
let org: { orgId: string; key: string };
let agentId: string;

async function createAgent(baseUrl: string): Promise<string> {
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'llama3', base_url: baseUrl } });
  expect(model.status).toBe(201);
  const agent = await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Ava', llm_id: model.body.id } });
  expect(agent.status).toBe(201);
  return agent.body.id as string;
}

async function liveCall(agent = agentId): Promise<string> {
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, status, started_at)
    values (${org.orgId}, ${agent}, 'web', 'in_progress', now() - interval '30 seconds') returning id`;
  return row!.id as string;
}

/** The worker's `ended` report, with its token and the call's capability. */
const reportEnded = (id: string, seq = 1) =>
  tp.request('post', `/internal/v1/calls/${id}/ended`, {
    key: WORKER,
    headers: { 'x-call-capability': tp.capability(id) },
    body: { seq, end_reason: 'user_hangup', ended_at: new Date().toISOString(), duration_seconds: 30, messages: MESSAGES, usage: USAGE, latency: NO_LATENCY },
  });

/** What the receiver got for a call, in order of arrival. */
const received = (id: string) => rx.at('/calls').filter((r) => r.json?.call_id === id).map((r) => r.json);
const until = (id: string, n: number, what: string) => rx.until(() => received(id).length >= n, what);
const storedTypes = async (id: string) => (await tp.sql`select type from events where call_id = ${id} order by seq`).map((r) => r.type as string);
const getCall = async (id: string) => (await tp.request('get', `/v1/calls/${id}`, { key: org.key })).body;

beforeAll(async () => {
  rx = await new Receiver().start();
  llm = await startFakeOpenAI({ responder: () => ANSWER });
  tp = await usePlatform({
    SSRF_ALLOWLIST: '127.0.0.1',
    // Long enough that the analysis always makes it on a loaded machine; the test of the bound shortens it.
    CALL_ENDED_ANALYSIS_WAIT_SECONDS: 120,
    ANALYSIS_RETRY_LIMIT: 0,
  } as never);
  org = await tp.createOrg();
  agentId = await createAgent(llm.url);
  const hook = await tp.request('post', '/v1/webhooks', {
    key: org.key,
    body: { name: 'crm', url: rx.url('/calls'), events: ['call.ended', 'transcript.final', 'call.analyzed', 'call.failed'] },
  });
  expect(hook.status).toBe(201);
});

afterAll(async () => {
  await rx.close();
  await llm.close();
});

/** Runs `fn` with config values changed, then puts them back. */
async function withConfig(values: Record<string, unknown>, fn: () => Promise<void>): Promise<void> {
  const config = tp.platform.services.config as unknown as Record<string, unknown>;
  const saved = Object.fromEntries(Object.keys(values).map((k) => [k, config[k]]));
  Object.assign(config, values);
  try {
    await fn();
  } finally {
    Object.assign(config, saved);
  }
}

describe('call.ended', () => {
  it('carries the outcome and summary of the analysis as strings, then transcript.final, then call.analyzed', async () => {
    const id = await liveCall();
    expect((await reportEnded(id)).status).toBe(200);
    // The call itself is completed at once, as before.
    expect(await getCall(id)).toMatchObject({ status: 'completed', end_reason: 'user_hangup', duration_seconds: 30 });

    await until(id, 3, 'call.ended, transcript.final and call.analyzed');
    const [ended, final, analyzed] = received(id);
    expect(ended).toMatchObject({ event: 'call.ended', call_id: id, agent_id: agentId, status: 'completed', duration_seconds: 30 });
    expect(typeof ended.outcome).toBe('string');
    expect(typeof ended.ai_summary).toBe('string');
    expect(ended).toMatchObject({ outcome: 'appointment_booked', ai_summary: SUMMARY, analysis: { summary: SUMMARY, outcome: 'appointment_booked' } });
    expect(final).toMatchObject({ event: 'transcript.final', call_id: id, messages: MESSAGES });
    expect(analyzed).toMatchObject({ event: 'call.analyzed', call_id: id, outcome: 'appointment_booked', ai_summary: SUMMARY });
    expect(await storedTypes(id)).toEqual(['call.ended', 'transcript.final', 'call.analyzed']);
  });

  it('after a stop, waits for the worker’s late report and the analysis of its conversation', async () => {
    const id = await liveCall();
    const stopped = await tp.request('post', `/v1/calls/${id}/stop`, { key: org.key });
    expect(stopped.body).toMatchObject({ status: 'completed', end_reason: 'api_stop' });
    expect((await reportEnded(id)).status).toBe(200);

    await until(id, 3, 'the end events of a stopped call');
    const [ended, final, analyzed] = received(id);
    expect(ended).toMatchObject({ event: 'call.ended', status: 'completed', outcome: 'appointment_booked', ai_summary: SUMMARY, analysis: { summary: SUMMARY } });
    expect(final).toMatchObject({ event: 'transcript.final', messages: MESSAGES });
    expect(analyzed).toMatchObject({ event: 'call.analyzed', outcome: 'appointment_booked', ai_summary: SUMMARY });
  });

  it('waits no longer than the bound: then it goes with what is known, and call.analyzed follows', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    llm.setResponder(async () => {
      await held;
      return ANSWER;
    });
    try {
      await withConfig({ CALL_ENDED_ANALYSIS_WAIT_SECONDS: 1 }, async () => {
        const id = await liveCall();
        await reportEnded(id);
        // The model has not answered (it can't until released): call.ended goes at the bound, then the transcript.
        await until(id, 2, 'call.ended at the bound');
        const [ended, final] = received(id);
        expect(ended).toMatchObject({ event: 'call.ended', status: 'completed', outcome: null, ai_summary: null });
        expect(final).toMatchObject({ event: 'transcript.final', messages: MESSAGES });
        // Not done (queued, or waiting on the model): call.ended did not wait for it.
        expect(['pending', 'running']).toContain((await getCall(id)).analysis.status);
        release();
        await until(id, 3, 'call.analyzed');
        expect(received(id)[2]).toMatchObject({ event: 'call.analyzed', outcome: 'appointment_booked', ai_summary: SUMMARY });
        expect(await storedTypes(id)).toEqual(['call.ended', 'transcript.final', 'call.analyzed']);
      });
    } finally {
      release();
      llm.setResponder(() => ANSWER);
    }
  });

  it('goes at once when the analysis is off, with no wait for the bound', async () => {
    await withConfig({ ANALYSIS_MODE: 'off', CALL_ENDED_ANALYSIS_WAIT_SECONDS: 3600 }, async () => {
      const id = await liveCall();
      await reportEnded(id);
      await until(id, 2, 'call.ended without an analysis');
      expect(received(id).map((e) => e.event)).toEqual(['call.ended', 'transcript.final']);
      expect(received(id)[0]).toMatchObject({ outcome: null, ai_summary: null });
      await eventually(async () => (await getCall(id)).analysis.status === 'skipped', 'the analysis skipped');
      expect(await storedTypes(id)).toEqual(['call.ended', 'transcript.final']);
    });
  });

  it('goes as soon as the analysis has failed for good, with no wait for the bound', async () => {
    const downAgent = await createAgent('http://127.0.0.1:9/v1');
    await withConfig({ CALL_ENDED_ANALYSIS_WAIT_SECONDS: 3600 }, async () => {
      const id = await liveCall(downAgent);
      await reportEnded(id);
      await until(id, 2, 'call.ended after a failed analysis');
      expect(received(id).map((e) => e.event)).toEqual(['call.ended', 'transcript.final']);
      expect(received(id)[0]).toMatchObject({ outcome: null, ai_summary: null });
      expect((await getCall(id)).analysis).toMatchObject({ status: 'failed', error: 'analysis failed: connection refused' });
      expect(await storedTypes(id)).toEqual(['call.ended', 'transcript.final']);
    });
  });

  it('is emitted exactly once when the analysis and the bound race, and not at all by a rolled-back attempt', async () => {
    const services = tp.platform.services;
    // An ended call whose call.ended is held, as finishCall leaves it (no jobs enqueued for it: the test runs them).
    const [row] = await tp.sql`
      insert into calls (org_id, agent_id, type, status, started_at, ended_at, duration_seconds, end_reason, messages, ended_event_pending)
      values (${org.orgId}, ${agentId}, 'web', 'completed', now() - interval '30 seconds', now(), 30, 'user_hangup', ${tp.sql.json(MESSAGES)}, true)
      returning id`;
    const id = row!.id as string;
    // A process that dies after claiming it sends nothing, and leaves it held.
    await expect(
      tp.sql.begin(async (tx) => {
        expect(await releaseEndedEvent(tx, id)).toBe(true);
        throw new Error('the process died');
      }),
    ).rejects.toThrow('the process died');
    expect(await storedTypes(id)).toEqual([]);

    const bound = () => tp.sql.begin((tx) => releaseEndedEvent(tx, id));
    const analysis = runAnalysis(services, { id: 'job', name: 'calls.analyze', data: { call_id: id }, retryCount: 0 } as never);
    const released = await Promise.all([bound(), bound(), analysis.then(() => null), bound(), bound()]);
    // One of the bound's attempts, or else the analysis itself, sent it.
    expect(released.filter((r) => r === true).length).toBeLessThanOrEqual(1);
    const types = await storedTypes(id);
    expect(types).toEqual(['call.ended', 'transcript.final', 'call.analyzed']);
    await until(id, 3, 'the raced events');
    expect(received(id).map((e) => e.event)).toEqual(['call.ended', 'transcript.final', 'call.analyzed']);
    // Nothing left to release.
    expect(await bound()).toBe(false);
  });

  it('leaves failed calls as they were: call.failed at once, no call.ended', async () => {
    const [row] = await tp.sql`insert into calls (org_id, agent_id, type, status) values (${org.orgId}, ${agentId}, 'web', 'initiated') returning id`;
    const id = row!.id as string;
    await tp.sql.begin(async (tx) => failCall(tx, (await getCallById(tx, id, { lock: true }))!, 'agent_unavailable', 'dispatch_timeout'));
    expect(await storedTypes(id)).toEqual(['call.failed']);
    await until(id, 1, 'call.failed');
    expect(received(id)[0]).toMatchObject({ event: 'call.failed', reason: 'agent_unavailable' });
  });
});
