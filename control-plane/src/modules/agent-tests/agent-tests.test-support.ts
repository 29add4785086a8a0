// The agent-tests API tests' fixture (agent-tests*.test.ts): the OpenAI-compatible stand-in playing the agent's model
// (`replies.agent`, set by each test), the judge and the caller (`replies.caller`), a tool server, the platform and an
// org, with their helpers. Importing this module registers the hooks that build and close them in the importing test
// file; the exported bindings are live.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { contentText, lastUserText, startFakeOpenAI, type ChatRequest, type FakeOpenAI, type ScriptedReply } from '../../../../test/support/fake-openai.ts';
import { CALLER_RULES } from './conversation.ts';
import { JUDGE_PROMPT } from './expectations.ts';

export let tp: TestPlatform;
export let openai: FakeOpenAI;
export let toolServer: http.Server;
export let toolUrl: string;
export const toolRequests: { headers: http.IncomingHttpHeaders; body: string }[] = [];
export let org: { orgId: string; key: string };

export const AGENT_PROMPT = 'You are the front desk of Bright Smiles dental.';
export const PLATFORM_KEY = 'sk-platform-canary-0123456789abcdef';
export const system = (req: ChatRequest) => contentText(req.messages[0]!);

/** Each test sets what the agent's model says (and the caller's, where it matters); the judge has its rules below. */
export const replies: { agent: (req: ChatRequest) => ScriptedReply | Promise<ScriptedReply>; caller: (req: ChatRequest) => string } = {
  agent: () => ({ text: 'How can I help?' }),
  caller: () => 'Goodbye. [HANGUP]',
};

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
      if (sys.startsWith(CALLER_RULES)) return { text: replies.caller(req) };
      return replies.agent(req);
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

export const api = (method: string, path: string, body?: unknown, key = org.key) => tp.request(method, path, { key, ...(body !== undefined ? { body } : {}) });

export async function agentWith(o: { key?: string; tools?: string[]; first_message?: string; end_call_phrases?: string[] } = {}): Promise<string> {
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

export async function scenario(body: Record<string, unknown>, key = org.key): Promise<string> {
  const res = await api('post', '/v1/test-scenarios', { name: 's', ...body }, key);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.id as string;
}

/** Starts a run and waits (bounded) until it has ended. */
export async function runToEnd(agentId: string, body: Record<string, unknown>, key = org.key) {
  const started = await api('post', `/v1/agents/${agentId}/test-runs`, body, key);
  expect(started.status, JSON.stringify(started.body)).toBe(201);
  return waitFor(started.body.id, key, (r) => r.status === 'completed' || r.status === 'canceled');
}

export async function waitFor(runId: string, key: string, done: (run: any) => boolean, timeoutMs = 60_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const res = await api('get', `/v1/test-runs/${runId}`, undefined, key);
    expect(res.status).toBe(200);
    if (done(res.body)) return res.body;
    if (Date.now() > until) throw new Error(`run ${runId} did not get there: ${JSON.stringify(res.body).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
