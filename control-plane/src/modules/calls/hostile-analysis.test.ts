// A tenant in `redact_pii` attacks the control plane through its calls (docs/security.md, "Bounded text"):
//  - its model's server answers the post-call analysis with a 200,000-character one-word summary, which the
//    redaction's old email pattern read in quadratic time (minutes, with every org's jobs and requests waiting);
//  - its worker reports carry texts longer than the caps.
// Another organisation's GET /v1/agents answers while the attack runs: the second call's analysis answer is held
// back until it has. Each attacked record ends clearly: the summary cut to its cap and redacted, the report 422.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { MESSAGE_CONTENT_MAX, SUMMARY_MAX, TOOL_ARGUMENTS_MAX } from '../../../../shared/text-caps.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const NO_LATENCY = Object.fromEntries(['llm_ttft', 'tts_ttfb', 'eou_delay', 'e2e'].map((k) => [k, { avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 }]));
const USAGE = { stt_seconds: 1, llm_prompt_tokens: 1, llm_completion_tokens: 1, tts_characters: 1 };
/** One word, no "@": the old email pattern's worst case. */
const HOSTILE_SUMMARY = 'a'.repeat(200_000);

let tp: TestPlatform;
let hostile: http.Server;
let attacker: { orgId: string; key: string };
let bystander: { orgId: string; key: string };
const order: string[] = [];
let firstAnswered!: () => void;
const firstSent = new Promise<void>((r) => (firstAnswered = r));
let releaseSecond!: () => void;
const secondReleased = new Promise<void>((r) => (releaseSecond = r));

beforeAll(async () => {
  hostile = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const asked = Buffer.concat(chunks).toString('utf8');
      const content = JSON.stringify({ summary: `${HOSTILE_SUMMARY} card 4111 1111 1111 1111`, outcome: 'x' });
      const answer = JSON.stringify({ id: 'c', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content } }] });
      const send = (after?: () => void) => res.writeHead(200, { 'content-type': 'application/json' }).end(answer, after);
      if (asked.includes('first call')) return send(() => firstAnswered());
      void secondReleased.then(() => {
        order.push('second answer sent');
        send();
      });
    });
  });
  await new Promise<void>((r) => hostile.listen(0, '127.0.0.1', r));
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1', ANALYSIS_RETRY_LIMIT: 0 } as never);
  attacker = await tp.createOrg('attacker');
  bystander = await tp.createOrg('bystander');
  const set = await tp.request('patch', '/v1/workspace', { key: attacker.key, body: { settings: { data_retention: 'redact_pii' } } });
  expect(set.status).toBe(200);
});

afterAll(async () => {
  hostile.closeAllConnections();
  await new Promise<void>((r) => hostile.close(() => r()));
});

async function agent(key: string, baseUrl: string): Promise<string> {
  const model = await tp.request('post', '/v1/models', { key, body: { name: 'm', model: 'm', base_url: baseUrl } });
  expect(model.status).toBe(201);
  const res = await tp.request('post', '/v1/agents', { key, body: { name: 'Ava', llm_id: model.body.id } });
  expect(res.status).toBe(201);
  return res.body.id as string;
}

async function liveCall(agentId: string): Promise<string> {
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, status, started_at)
    values (${attacker.orgId}, ${agentId}, 'web', 'in_progress', now() - interval '30 seconds') returning id`;
  return row!.id as string;
}

const report = (id: string, kind: 'transcript' | 'ended', body: Record<string, unknown>) =>
  tp.request('post', `/internal/v1/calls/${id}/${kind}`, { key: WORKER, headers: { 'x-call-capability': tp.capability(id) }, body });

const ended = (seq: number, messages: unknown[]) => ({
  seq,
  end_reason: 'user_hangup',
  ended_at: new Date().toISOString(),
  duration_seconds: 30,
  messages,
  usage: USAGE,
  latency: NO_LATENCY,
});

async function endCall(agentId: string, said: string): Promise<string> {
  const id = await liveCall(agentId);
  const res = await report(id, 'ended', ended(1, [{ role: 'user', content: said }]));
  expect(res.status).toBe(200);
  return id;
}

const analysis = async (id: string) => (await tp.sql`select analysis_status, analysis_summary, ai_summary from calls where id = ${id}`)[0]!;

describe("a tenant's analysis model and worker reports against redaction", () => {
  it("another org's GET /v1/agents answers while a 200,000-character summary is redacted; the summary ends cut and redacted", async () => {
    const theirs = await agent(bystander.key, 'https://models.example.com/v1');
    const mine = await agent(attacker.key, `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`);
    const first = await endCall(mine, 'This is the first call.');
    const second = await endCall(mine, 'This is the second call.');

    // The first answer is sent: the control plane reads, cuts and redacts it now.
    await firstSent;
    const listed = await tp.request('get', '/v1/agents', { key: bystander.key });
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((a: { id: string }) => a.id)).toEqual([theirs]);
    order.push('bystander answered');
    releaseSecond();

    for (const id of [first, second]) {
      await expect.poll(async () => (await analysis(id)).analysis_status, { timeout: 60_000 }).toBe('completed');
      const row = await analysis(id);
      expect(row.analysis_summary).toHaveLength(SUMMARY_MAX);
      expect(row.analysis_summary).toMatch(/^a+…$/);
      expect(row.ai_summary).toBe(row.analysis_summary);
    }
    order.push('second analysis ended');
    expect(order).toEqual(['bystander answered', 'second answer sent', 'second analysis ended']);
  });

  it("refuses a worker's report with a text over its cap, in the spec's detail shape", async () => {
    const mine = await agent(attacker.key, 'https://models.example.com/v1');
    const id = await liveCall(mine);
    const long = await report(id, 'transcript', { seq: 1, messages: [{ role: 'user', content: 'a'.repeat(MESSAGE_CONTENT_MAX + 1) }] });
    expect(long.status).toBe(422);
    expect(long.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'messages', 0, 'content'], type: 'string_too_long' })]);
    const tool = { name: 't', arguments: 'a'.repeat(TOOL_ARGUMENTS_MAX + 1), output: '', is_error: false };
    const end = await report(id, 'ended', ended(2, [{ role: 'agent', content: '', tool_call: tool }]));
    expect(end.status).toBe(422);
    expect(end.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'messages', 0, 'tool_call', 'arguments'], type: 'string_too_long' })]);
    // Within the caps, the same call's report is taken.
    const ok = await report(id, 'ended', ended(3, [{ role: 'user', content: 'a'.repeat(MESSAGE_CONTENT_MAX) }]));
    expect(ok.status).toBe(200);
  });
});
