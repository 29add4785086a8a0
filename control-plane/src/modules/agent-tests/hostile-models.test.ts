// A tenant's model server attacks the control plane through agent tests (docs/security.md, "Bounded text"):
//  - its tool call's arguments are 15,980 "a"s and a "!", tested by the scenario's `matches: '^(a+)+$'`, which
//    a backtracking engine takes hours over (the time doubles with each character); RE2 answers at once;
//  - it answers with a gzip bomb: a JSON answer whose content is 64 MiB once decoded, 64 KiB on the wire;
//  - it answers with 1,000 tool calls.
// While the pattern is being checked, another organisation's GET /v1/agents answers: the bomb's answer is held
// back until it has, so the attack is still running when it does. Each attacked run ends in a clear result.
import http from 'node:http';
import zlib from 'node:zlib';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePlatform, type TestPlatform } from '../../../../test/support/platform.ts';
import { MODEL_ANSWER_MAX_BYTES, TOOL_ARGUMENTS_MAX, TOOL_CALLS_PER_ANSWER_MAX } from '../../../../shared/text-caps.ts';

interface ChatBody {
  messages: { role: string; content?: string | null }[];
}

let tp: TestPlatform;
let hostile: http.Server;
let hostileUrl: string;
let attacker: { orgId: string; key: string };
let bystander: { orgId: string; key: string };
const order: string[] = [];

/** Resolved when the server has sent the answer after which the control plane checks the pattern. */
let patternAnswered!: () => void;
const patternChecking = new Promise<void>((r) => (patternAnswered = r));
/** The bomb waits for this. */
let releaseBomb!: () => void;
const bombReleased = new Promise<void>((r) => (releaseBomb = r));

// As long as a tool call's arguments may be (their JSON text within the cap).
const HOSTILE_ARGUMENT = `${'a'.repeat(TOOL_ARGUMENTS_MAX - 20)}!`;
const BOMB = zlib.gzipSync(
  Buffer.from(JSON.stringify({ id: 'x', object: 'chat.completion', created: 0, model: 'm', choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'a'.repeat(64 * 1024 * 1024) } }] })),
  { level: 9 },
);

const completion = (message: Record<string, unknown>) => ({
  id: 'chatcmpl-hostile',
  object: 'chat.completion',
  created: 0,
  model: 'm',
  choices: [{ index: 0, finish_reason: message.tool_calls ? 'tool_calls' : 'stop', message: { role: 'assistant', content: null, ...message } }],
});
const toolCall = (i: number, args: string) => ({ id: `call_${i}`, type: 'function', function: { name: 'lookup', arguments: args } });

beforeAll(async () => {
  hostile = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as ChatBody;
      const caller = body.messages.find((m) => m.role === 'user')?.content ?? '';
      const afterTool = body.messages.some((m) => m.role === 'tool');
      const json = (value: unknown, after?: () => void) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(value), after);
      };
      if (caller === 'pattern') {
        if (!afterTool) return json(completion({ tool_calls: [toolCall(0, JSON.stringify({ name: HOSTILE_ARGUMENT }))] }));
        return json(completion({ content: 'Done.' }), () => patternAnswered());
      }
      if (caller === 'bomb') {
        void bombReleased.then(() => {
          order.push('bomb sent');
          res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
          res.end(BOMB);
        });
        return;
      }
      if (caller === 'flood') return json(completion({ tool_calls: Array.from({ length: 1000 }, (_, i) => toolCall(i, '{}')) }));
      return json(completion({ content: 'Hello.' }));
    });
  });
  await new Promise<void>((r) => hostile.listen(0, '127.0.0.1', r));
  hostileUrl = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
  tp = await usePlatform({ SSRF_ALLOWLIST: '127.0.0.1' } as never);
  attacker = await tp.createOrg('attacker');
  bystander = await tp.createOrg('bystander');
});

afterAll(async () => {
  hostile.closeAllConnections();
  await new Promise<void>((r) => hostile.close(() => r()));
});

const api = (key: string, method: string, path: string, body?: unknown) => tp.request(method, path, { key, ...(body !== undefined ? { body } : {}) });

async function agent(key: string, baseUrl: string): Promise<string> {
  const tool = await api(key, 'post', '/v1/tools', { type: 'function', name: 'lookup', url: 'https://tools.example.com/lookup' });
  expect(tool.status).toBe(201);
  const m = await api(key, 'post', '/v1/models', { name: 'm', model: 'm', provider: 'openai', base_url: baseUrl, system_prompt: 'Help.', tool_ids: [tool.body.id] });
  expect(m.status).toBe(201);
  const a = await api(key, 'post', '/v1/agents', { name: 'a', llm_id: m.body.id });
  expect(a.status).toBe(201);
  return a.body.id as string;
}

async function start(agentId: string, say: string, expectations: unknown[] = []): Promise<string> {
  const s = await api(attacker.key, 'post', '/v1/test-scenarios', {
    name: say,
    script: [{ say }],
    tool_mocks: [{ tool: 'lookup', result: 'ok' }],
    expectations,
  });
  expect(s.status, JSON.stringify(s.body)).toBe(201);
  const run = await api(attacker.key, 'post', `/v1/agents/${agentId}/test-runs`, { scenario_ids: [s.body.id] });
  expect(run.status, JSON.stringify(run.body)).toBe(201);
  return run.body.id as string;
}

async function ended(runId: string) {
  for (;;) {
    const res = await api(attacker.key, 'get', `/v1/test-runs/${runId}`);
    expect(res.status).toBe(200);
    if (res.body.status === 'completed') return res.body;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("a tenant's model server against agent tests", () => {
  it("another org's GET /v1/agents answers while a hostile pattern is checked and a gzip bomb is on its way; each attacked run ends clearly", async () => {
    const theirs = await agent(bystander.key, 'https://models.example.com/v1');
    const mine = await agent(attacker.key, hostileUrl);
    const patternRun = await start(mine, 'pattern', [{ type: 'tool_called', tool: 'lookup', arguments: { name: { matches: '^(a+)+$' } } }]);
    const bombRun = await start(mine, 'bomb');

    // The model's last answer is sent: the control plane now checks the pattern against ~16,000 characters.
    await patternChecking;
    const listed = await api(bystander.key, 'get', '/v1/agents');
    expect(listed.status).toBe(200);
    expect(listed.body.items.map((a: { id: string }) => a.id)).toEqual([theirs]);
    order.push('bystander answered');
    releaseBomb();

    const pattern = await ended(patternRun);
    expect(pattern.results[0]).toMatchObject({ status: 'failed' });
    expect(pattern.results[0].expectations[0]).toMatchObject({ passed: false, reason: expect.stringContaining('which does not match /^(a+)+$/') });

    const bomb = await ended(bombRun);
    order.push('bomb run ended');
    expect(bomb.results[0]).toMatchObject({ status: 'error' });
    expect(bomb.results[0].error).toContain(`larger than ${MODEL_ANSWER_MAX_BYTES / 1024} KiB once decoded`);
    expect(order).toEqual(['bystander answered', 'bomb sent', 'bomb run ended']);
  });

  it('an answer with more tool calls than an answer may carry ends the run with the reason', async () => {
    const mine = await agent(attacker.key, hostileUrl);
    const run = await ended(await start(mine, 'flood'));
    expect(run.results[0]).toMatchObject({ status: 'error', tool_calls: [] });
    expect(run.results[0].error).toContain(`1000 tool calls; at most ${TOOL_CALLS_PER_ANSWER_MAX} are taken from one answer`);
  });

  it("refuses a pattern RE2 cannot run in linear time, with the spec's detail shape", async () => {
    const res = await api(attacker.key, 'post', '/v1/test-scenarios', {
      name: 'lookbehind',
      script: [{ say: 'x' }],
      expectations: [{ type: 'tool_called', tool: 'lookup', arguments: { name: { matches: '(a)\\1' } } }],
    });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        loc: ['body', 'expectations', 0, 'arguments', 'name', 'matches'],
        msg: expect.stringMatching(/^Unsupported regular expression: patterns run in linear time/),
        type: 'value_error',
        input: '(a)\\1',
      },
    ]);
    const long = await api(attacker.key, 'post', '/v1/test-scenarios', {
      name: 'long',
      script: [{ say: 'x' }],
      expectations: [{ type: 'tool_called', tool: 'lookup', arguments: { name: { matches: 'a'.repeat(501) } } }],
    });
    expect(long.status).toBe(422);
    expect(long.body.detail[0]).toMatchObject({ loc: ['body', 'expectations', 0, 'arguments', 'name', 'matches'], type: 'string_too_long' });
  });
});
