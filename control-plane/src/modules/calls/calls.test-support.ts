// The calls API tests' fixture (calls.test.ts, calls-ending.test.ts): a LiveKit stack, the fake LLM, the platform,
// an org and its agent, with their helpers. Importing this module registers the beforeAll that builds them in the
// importing test file; the exported bindings are live, so they hold the values once it has run.
import { beforeAll, expect } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { useStack, type TestStack } from '../../../../test/support/stack.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../../../test/support/fake-openai.ts';
import { pollUntil } from '../../../../test/support/poll.ts';

export const WORKER = 'test-worker-token-0123456789abcdef0123';
/** An ended report's latency for a call without turns. */
export const NO_LATENCY = Object.fromEntries(
  ['llm_ttft', 'tts_ttfb', 'eou_delay', 'e2e'].map((k) => [k, { avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 }]),
);
export let stack: TestStack;
export let tp: TestPlatform;
export let llm: FakeOpenAI;
export let org: { orgId: string; key: string };
export let agentId: string;

export async function createAgent(o: { orgId: string; key: string }, extra: Record<string, unknown> = {}): Promise<string> {
  const model = await tp.request('post', '/v1/models', {
    key: o.key,
    body: { name: 'm', model: 'llama3', base_url: (extra.base_url as string) ?? llm.url, system_prompt: 'Help {{customer_name}} politely.' },
  });
  expect(model.status).toBe(201);
  const [row] = await tp.sql`
    insert into agents (org_id, name, llm_id, transcriber, tts, first_message, job_description, dynamic_variables, enable_recording)
    values (${o.orgId}, 'Ava', ${model.body.id}, ${tp.sql.json({ provider: 'local', model: 'pocketsphinx', language: 'en-US' })},
            ${tp.sql.json({ provider: 'local', model: 'espeak-ng', voice_id: 'en-us' })}, 'Hello {{customer_name}}!', 'You book dentist appointments.',
            ${tp.sql.json({ customer_name: 'friend' })}, ${(extra.enable_recording as boolean) ?? false})
    returning id`;
  return row!.id as string;
}

/** As a worker would: its token, and the call's capability from the dispatch. */
export const internal = (method: string, path: string, body?: unknown) => {
  const callId = /^\/calls\/([^/]+)\//.exec(path)?.[1];
  const headers: Record<string, string> = callId ? { 'x-call-capability': tp.capability(callId) } : {};
  return tp.request(method, `/internal/v1${path}`, { key: WORKER, headers, ...(body !== undefined ? { body } : {}) });
};

export async function startWebCall(o = org, body: Record<string, unknown> = {}) {
  return tp.request('post', '/v1/calls/web', { key: o.key, body: { agent_id: agentId, ...body } });
}

export async function eventsOf(callId: string): Promise<string[]> {
  const rows = await tp.sql`select type from events where call_id = ${callId} order by seq`;
  return rows.map((r) => r.type as string);
}

export const until = <T>(fn: () => Promise<T | null | undefined | false>, tries = 200): Promise<T> => pollUntil(fn, tries);

beforeAll(async () => {
  stack = await useStack({});
  llm = await startFakeOpenAI({ ttftMs: 5 });
  llm.setResponder(() => ({ text: JSON.stringify({ summary: 'The caller booked a cleaning.', outcome: 'Appointment Booked' }) }));
  tp = await usePlatform({
    LIVEKIT_URL: stack.livekitUrl,
    LIVEKIT_API_KEY: stack.apiKey,
    LIVEKIT_API_SECRET: stack.apiSecret,
    SSRF_ALLOWLIST: '127.0.0.1,localhost',
    ANALYSIS_RETRY_LIMIT: 1,
    ANALYSIS_RETRY_DELAY_SECONDS: 1,
    STOP_REPORT_GRACE_SECONDS: 2,
  });
  org = await tp.createOrg();
  agentId = await createAgent(org);
});
