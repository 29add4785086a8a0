// What the supervision, takeover and listen-stream tests start from: a control plane on a real LiveKit stack with
// the fake LLM, an agent on local speech, and web calls in progress as their worker reports them.
import { expect } from 'vitest';
import { usePlatform, type TestPlatform } from './platform.ts';
import { useStack, type TestStack } from './stack.ts';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai.ts';
import type { Config } from '../../control-plane/src/config.ts';

/** The worker token usePlatform gives the control plane. */
export const WORKER_TOKEN = 'test-worker-token-0123456789abcdef0123';

export interface LiveCallPlatform {
  stack: TestStack;
  llm: FakeOpenAI;
  tp: TestPlatform;
}

export interface LiveCall {
  id: string;
  room: string;
  /** The caller's participant token. */
  token: string;
  url: string;
}

/** The stack, the fake LLM, and a control plane on that stack with `env` on top (for a file's beforeAll). */
export async function startLiveCallPlatform(env: Partial<Config>): Promise<LiveCallPlatform> {
  const stack = await useStack({});
  const llm = await startFakeOpenAI({ ttftMs: 5 });
  try {
    const tp = await usePlatform({
      LIVEKIT_URL: stack.livekitUrl,
      LIVEKIT_API_KEY: stack.apiKey,
      LIVEKIT_API_SECRET: stack.apiSecret,
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      ...env,
    });
    return { stack, llm, tp };
  } catch (err) {
    // The file's afterAll cannot close an LLM it was never given.
    await llm.close();
    throw err;
  }
}

/** As a worker would: its token, and the call's capability from the dispatch. */
export function workerRequest(tp: TestPlatform, method: string, path: string, body?: unknown) {
  const callId = /^\/calls\/([^/]+)\//.exec(path)?.[1];
  const headers: Record<string, string> = callId ? { 'x-call-capability': tp.capability(callId) } : {};
  return tp.request(method, `/internal/v1${path}`, { key: WORKER_TOKEN, headers, ...(body !== undefined ? { body } : {}) });
}

/** An agent 'Ava' of `o` on the LLM at `llmUrl`, local speech-to-text and text-to-speech, greeting "Hello!". */
export async function createLocalAgent(tp: TestPlatform, o: { orgId: string; key: string }, llmUrl: string): Promise<string> {
  const model = await tp.request('post', '/v1/models', { key: o.key, body: { name: 'm', model: 'llama3', base_url: llmUrl, system_prompt: 'Help.' } });
  expect(model.status).toBe(201);
  const [row] = await tp.sql`
    insert into agents (org_id, name, llm_id, transcriber, tts, first_message)
    values (${o.orgId}, 'Ava', ${model.body.id}, ${tp.sql.json({ provider: 'local', model: 'pocketsphinx', language: 'en-US' })},
            ${tp.sql.json({ provider: 'local', model: 'espeak-ng', voice_id: 'en-us' })}, 'Hello!')
    returning id`;
  return row!.id as string;
}

/** A web call whose agent session has started (as its worker reports), so in progress. */
export async function startLiveCall(tp: TestPlatform, o: { key: string }, agentId: string | undefined): Promise<LiveCall> {
  const res = await tp.request('post', '/v1/calls/web', { key: o.key, body: { agent_id: agentId } });
  expect(res.status).toBe(201);
  const started = await workerRequest(tp, 'POST', `/calls/${res.body.id}/started`, { seq: 1, started_at: new Date().toISOString() });
  expect(started.status).toBe(200);
  return { id: res.body.id, room: res.body.room_name, token: res.body.participant_token, url: res.body.server_url };
}
