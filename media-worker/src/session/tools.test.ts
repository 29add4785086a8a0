// Customer function tools go through the SSRF guard: private addresses are never reached, redirects are
// not followed, answers are read up to a size limit, and every failure is a ToolError the agent can say.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { llm } from '@livekit/agents';
import { buildTools, callFunctionTool, MAX_RESPONSE_BYTES, type CallActions } from './tools.ts';
import type { CallConfig, FunctionToolConfig } from '../../../schemas/internal.ts';

let server: http.Server;
let base: string;
const hits: string[] = [];
const savedAllowlist = process.env.SSRF_ALLOWLIST;

const tool = (url: string, extra: Partial<FunctionToolConfig> = {}): FunctionToolConfig =>
  ({ type: 'function', name: 'lookup', description: 'Look it up', parameters: {}, url, method: 'POST', headers: {}, timeout_ms: 2000, signing_secret: null, ...extra });

async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(llm.ToolError);
    return (err as Error).message;
  }
  throw new Error('the tool call did not fail');
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    if (req.url === '/redirect') res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
    else if (req.url === '/huge') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      // Far more than the limit; the client stops reading at MAX_RESPONSE_BYTES.
      const chunk = 'x'.repeat(64 * 1024);
      let sent = 0;
      const push = () => {
        while (sent < 64 && res.write(chunk)) sent++;
        if (sent < 64) res.once('drain', push);
        else res.end();
      };
      res.on('error', () => {});
      push();
    } else res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  if (savedAllowlist === undefined) delete process.env.SSRF_ALLOWLIST;
  else process.env.SSRF_ALLOWLIST = savedAllowlist;
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

describe('function tools through the SSRF guard', () => {
  it('never calls a private address: the agent gets a clear error and the server sees nothing', async () => {
    delete process.env.SSRF_ALLOWLIST;
    const before = hits.length;
    for (const url of [`${base}/ok`, 'http://10.0.0.7/internal', 'http://[::1]:9/x', 'http://169.254.169.254/latest/meta-data/', 'http://metadata.internal/x', 'http://localhost:1/x']) {
      expect(await failure(callFunctionTool(tool(url), {}, { callId: 'c1' }))).toMatch(/address the platform may not call/);
    }
    expect(hits.length).toBe(before);
  });

  it('calls an allowed host, does not follow redirects, and reads at most the size limit', async () => {
    process.env.SSRF_ALLOWLIST = '127.0.0.1';
    expect(await callFunctionTool(tool(`${base}/ok`), { q: 1 }, { callId: 'c1' })).toBe('{"ok":true}');
    expect(await failure(callFunctionTool(tool(`${base}/redirect`), {}, { callId: 'c1' }))).toMatch(/redirect \(HTTP 302\), which is not followed/);
    expect(hits.filter((h) => h.startsWith('/latest'))).toEqual([]);
    const big = await callFunctionTool(tool(`${base}/huge`), {}, { callId: 'c1' });
    expect(big.length).toBeLessThanOrEqual(MAX_RESPONSE_BYTES);
    expect(big.length).toBe(4000);
  });

  it('gives a clear error for an unreachable service instead of crashing', async () => {
    process.env.SSRF_ALLOWLIST = '127.0.0.1';
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    expect(await failure(callFunctionTool(tool(`http://127.0.0.1:${port}/x`), {}, { callId: 'c1' }))).toMatch(/could not be reached/);
  });
});

describe('the built-in do_not_call tool', () => {
  const run = (actions: Partial<CallActions>, args: unknown) => {
    const config = { call: { id: 'c1' }, tools: [{ type: 'do_not_call' }] } as unknown as CallConfig;
    const [t] = buildTools(config, { hangUp: () => {}, transfer: async () => {}, sendDtmf: async () => {}, addToDoNotCall: async () => {}, ...actions });
    return (t as unknown as { execute: (a: unknown, o: unknown) => Promise<string> }).execute(args, { toolCallId: 't1' });
  };

  it("lists the other party with the agent's reason, and says so", async () => {
    const reasons: (string | undefined)[] = [];
    const said = await run({ addToDoNotCall: async (r) => void reasons.push(r) }, { reason: 'asked to stop calling' });
    expect(said).toMatch(/do-not-call list/);
    expect(reasons).toEqual(['asked to stop calling']);
    await run({ addToDoNotCall: async (r) => void reasons.push(r) }, {});
    expect(reasons).toEqual(['asked to stop calling', undefined]);
  });

  it('a failure is a ToolError the agent can say, never a crash', async () => {
    const msg = await failure(run({ addToDoNotCall: async () => { throw new Error('unreachable'); } }, {}));
    expect(msg).toBe('The number could not be added to the do-not-call list.');
  });
});
