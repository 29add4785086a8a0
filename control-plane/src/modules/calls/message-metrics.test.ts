// Per-turn latency on a call's messages: the worker's ended report carries each agent reply's turn figures
// (`metrics`), the call record keeps them and the public call shows them; a malformed figure is refused.
import { beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';

const WORKER = 'test-worker-token-0123456789abcdef0123';
const NO_LATENCY = Object.fromEntries(['llm_ttft', 'tts_ttfb', 'eou_delay', 'e2e'].map((k) => [k, { avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 }]));
const USAGE = { stt_seconds: 1, llm_prompt_tokens: 1, llm_completion_tokens: 1, tts_characters: 1 };

let tp: TestPlatform;
let org: { orgId: string; key: string };
let agentId: string;

beforeAll(async () => {
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1', ANALYSIS_RETRY_LIMIT: 0 } as never);
  org = await tp.createOrg();
  const model = await tp.request('post', '/v1/models', { key: org.key, body: { name: 'm', model: 'llama3', base_url: 'http://127.0.0.1:9/v1' } });
  agentId = (await tp.request('post', '/v1/agents', { key: org.key, body: { name: 'Ava', llm_id: model.body.id } })).body.id;
});

async function liveCall(): Promise<string> {
  const [row] = await tp.sql`
    insert into calls (org_id, agent_id, type, status, started_at)
    values (${org.orgId}, ${agentId}, 'web', 'in_progress', now() - interval '30 seconds') returning id`;
  return row!.id as string;
}

const ended = (id: string, messages: unknown[]) =>
  tp.request('post', `/internal/v1/calls/${id}/ended`, {
    key: WORKER,
    headers: { 'x-call-capability': tp.capability(id) },
    body: { seq: 1, end_reason: 'user_hangup', ended_at: new Date().toISOString(), duration_seconds: 30, messages, usage: USAGE, latency: NO_LATENCY },
  });

describe('message metrics', () => {
  it("keeps each agent reply's turn figures on the call's messages", async () => {
    const id = await liveCall();
    const greeting = { eou_delay_ms: null, llm_ttft_ms: null, tts_ttfb_ms: 140, e2e_ms: null };
    const reply = { eou_delay_ms: 450, llm_ttft_ms: 300, tts_ttfb_ms: 110, e2e_ms: 900 };
    const res = await ended(id, [
      { role: 'agent', content: 'Hello.', metrics: greeting },
      { role: 'user', content: 'Can I book a cleaning?' },
      { role: 'agent', content: 'Booked for Tuesday.', metrics: reply },
      { role: 'agent', content: 'Anything else?' },
    ]);
    expect(res.status).toBe(200);
    const call = await tp.request('get', `/v1/calls/${id}`, { key: org.key });
    expect(call.status).toBe(200);
    expect(call.body.messages).toEqual([
      expect.objectContaining({ role: 'agent', content: 'Hello.', metrics: greeting }),
      expect.not.objectContaining({ metrics: expect.anything() }),
      expect.objectContaining({ role: 'agent', content: 'Booked for Tuesday.', metrics: reply }),
      expect.not.objectContaining({ metrics: expect.anything() }),
    ]);
  });

  it('refuses a malformed figure (negative, fractional, unknown or missing field) with 422', async () => {
    const bad = [
      { eou_delay_ms: -1, llm_ttft_ms: 1, tts_ttfb_ms: 1, e2e_ms: 1 },
      { eou_delay_ms: 1.5, llm_ttft_ms: 1, tts_ttfb_ms: 1, e2e_ms: 1 },
      { eou_delay_ms: 1, llm_ttft_ms: 1, tts_ttfb_ms: 1, e2e_ms: 1, stt_ms: 3 },
      { eou_delay_ms: 1, llm_ttft_ms: 1, tts_ttfb_ms: 1 },
    ];
    for (const metrics of bad) {
      const id = await liveCall();
      const res = await ended(id, [{ role: 'agent', content: 'Hi.', metrics }]);
      expect(res.status, JSON.stringify(metrics)).toBe(422);
      expect(res.body.detail[0].loc.slice(0, 4)).toEqual(['body', 'messages', 0, 'metrics']);
    }
  });
});
