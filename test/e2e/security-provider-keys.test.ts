// Item 1 of docs/security.md through the real stack: the platform's provider keys (canaries here) are in the
// control plane's and the worker's environment; an org with no credentials points its model at a local
// OpenAI-compatible receiver that records every header. A real web call (LiveKit, the media worker warming up
// and talking to the model, a WebRTC client) and its post-call analysis must never show the canary to the
// receiver. An
// org with its own OpenAI credential: the receiver sees that key, from the worker and from the analysis.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useStack, type TestStack } from '../support/stack.ts';
import { createTestDatabase } from '../support/db.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { disposeRtc } from '../support/rtc-client.ts';
import { webCall as startWebCall } from '../support/web-caller.ts';
import { synthesize } from '../support/speech.ts';
import { apiClient, untilEvery } from '../support/e2e.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { createSql, type Sql } from '../../control-plane/src/db/connect.ts';
import { createOrgWithKey } from '../../control-plane/src/modules/workspace/orgs.ts';

const CANARY = { OPENAI_API_KEY: 'sk-canary-platform-openai-e2e', ANTHROPIC_API_KEY: 'sk-ant-canary-platform-e2e', GEMINI_API_KEY: 'canary-platform-gemini-e2e' };
const ANALYSIS = 'You analyse phone and web calls';

let stack: TestStack;
let receiver: FakeOpenAI;
let sql: Sql;
let dropDb: () => Promise<void>;
const until = untilEvery(250);

beforeAll(async () => {
  receiver = await startFakeOpenAI({ ttftMs: 20 });
  receiver.setResponder((req) =>
    String(req.messages[0]?.content ?? '').startsWith(ANALYSIS)
      ? { text: JSON.stringify({ summary: 'The caller asked when the practice opens.', outcome: 'question_answered' }) }
      : { text: 'We open at nine in the morning.' },
  );
  const db = await createTestDatabase();
  dropDb = db.drop;
  stack = await useStack({
    controlPlane: true,
    worker: true,
    env: {
      DATABASE_URL: db.url,
      ...CANARY,
      // The receiver is on loopback: the operator allows it as a model host (item 6's rule, not a key rule).
      LLM_PRIVATE_HOSTS: '127.0.0.1',
      WORKER_SILENCE_SECONDS: '15',
      DISPATCH_TIMEOUT_SECONDS: '30',
      REAP_DELAY_SECONDS: '1',
      // A shared, loaded test machine can take longer than agents-js's 10 s to start a job process.
      JOB_INIT_TIMEOUT_MS: '60000',
    },
  });
  sql = createSql(db.url, { max: 2 });
}, 180_000);

afterAll(async () => {
  await disposeRtc();
  await sql?.end();
  await receiver?.close();
  await dropDb?.();
});

/** One web call of a new org's agent whose model is the receiver: a spoken question, a stop, the analysis. */
async function webCall(orgCredential: string | null): Promise<{ workerAuth: (string | undefined)[]; analysisAuth: (string | undefined)[]; all: unknown[] }> {
  const { api_key: key } = await createOrgWithKey(sql, `keys ${orgCredential ?? 'none'}`);
  const api = apiClient(() => stack.controlPlaneUrl, () => key);
  if (orgCredential) expect((await api('POST', '/v1/integrations', { name: 'own', provider: 'openai', api_key: orgCredential })).status).toBe(201);
  const modelId = await createStandInModel(api, receiver.url, { name: 'own server', system_prompt: 'Answer in one short sentence.' });
  const agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, tts: { provider: 'local', model: 'espeak-ng', voice_id: 'en-us' }, first_message: 'Hello, thank you for calling.' });

  const from = receiver.headers.length;
  // The worker talks through the OpenAI SDK (its x-stainless-* headers; agents-js sets its own user-agent on
  // chat requests); the analysis through a plain fetch.
  const viaSdk = (h: Record<string, unknown>) => h['x-stainless-lang'] !== undefined;
  const fromWorker = () => receiver.headers.slice(from).filter(viaSdk).length;
  const { callId, client, heard: agentAudio } = await startWebCall(api, { agent_id: agentId });
  try {
    // The session warms its LLM up (GET /models) with the client and key it will chat with.
    await until('the worker to reach the model', () => fromWorker() > 0, 150_000);
    // The greeting heard: the conversation the analysis sends has it (the transcript is stored only with the
    // worker's report at the end, so it cannot be polled for here).
    await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 150_000 });
    // A spoken question makes the worker chat with the model too; its answer heard, the turn is in the report.
    agentAudio.reset();
    await client.speak(await synthesize('What time do you open tomorrow morning'), { trailingSilenceMs: 1500 });
    await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
  } finally {
    await client.leave();
  }
  expect((await api('POST', `/v1/calls/${callId}/stop`)).status).toBe(200);
  const analysed = await until('the analysis', async () => {
    const c = (await api('GET', `/v1/calls/${callId}`)).body;
    return c.analysis.status === 'completed' || c.analysis.status === 'failed' ? c : null;
  }, 90_000);
  expect(analysed.analysis).toMatchObject({ status: 'completed', method: 'agent_model' });
  expect(analysed.outcome).toBe('question_answered');

  // Requests and headers are recorded in the same order; the /models probe has headers but no chat body.
  const all = receiver.headers.slice(from);
  const analysisBody = JSON.stringify(receiver.requests.findLast((r) => String(r.messages[0]?.content).startsWith(ANALYSIS)));
  expect(analysisBody).toContain('thank you for calling');
  const analysisAuth: (string | undefined)[] = [];
  const workerAuth: (string | undefined)[] = [];
  // Tell the analysis's request from the worker's by their clients: the SDK announces itself, the analysis does not.
  for (const h of all) (viaSdk(h) ? workerAuth : analysisAuth).push(h.authorization);
  return { workerAuth, analysisAuth, all };
}

describe("the platform's provider keys and a tenant's model URL", () => {
  it('an org without credentials: neither the worker nor the analysis shows the receiver the platform key', async () => {
    const { workerAuth, analysisAuth, all } = await webCall(null);
    expect(workerAuth.length).toBeGreaterThan(0);
    expect(analysisAuth.length).toBeGreaterThan(0);
    const seen = JSON.stringify(all);
    for (const canary of Object.values(CANARY)) expect(seen).not.toContain(canary);
    expect(analysisAuth.every((a) => a === undefined), JSON.stringify(all)).toBe(true);
  }, 420_000);

  it("an org with its own OpenAI credential: the receiver sees the org's key from both", async () => {
    const own = 'sk-org-own-credential-0123456789';
    const { workerAuth, analysisAuth, all } = await webCall(own);
    expect(workerAuth.length).toBeGreaterThan(0);
    expect(new Set(workerAuth)).toEqual(new Set([`Bearer ${own}`]));
    expect(analysisAuth).toContain(`Bearer ${own}`);
    const seen = JSON.stringify(all);
    for (const canary of Object.values(CANARY)) expect(seen).not.toContain(canary);
  }, 420_000);
});
