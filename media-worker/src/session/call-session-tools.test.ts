// The real AgentSession (as call-session.test.ts): function tools and knowledge retrieval in a turn.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { contentText, pendingToolResult } from '../../../test/support/fake-openai.ts';
import { baseConfig, startCall, waitUntil } from './harness.test-support.ts';
import { api, finish, llm, userSays } from './call-session.test-support.ts';

describe('call session (voice loop)', () => {
  it('calls function tools (signed), and survives their timeout and error', async () => {
    const secret = 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64');
    const received: { path: string; verified: boolean; body: any }[] = [];
    const held: http.ServerResponse[] = [];
    const toolServer = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let verified = false;
        try {
          new Webhook(secret).verify(body, req.headers as Record<string, string>);
          verified = true;
        } catch {
          verified = false;
        }
        received.push({ path: req.url ?? '', verified, body: JSON.parse(body) });
        if (req.url === '/weather') {
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"forecast":"sunny"}');
        } else if (req.url === '/slow') {
          // Never answers while the call lasts: the tool's 300 ms timeout must fire.
          held.push(res);
        } else {
          res.writeHead(500).end('boom');
        }
      });
    });
    await new Promise<void>((r) => toolServer.listen(0, '127.0.0.1', r));
    // Tool calls go through the SSRF guard: the loopback tool server must be allowlisted, as in development.
    process.env.SSRF_ALLOWLIST = '127.0.0.1';
    const base = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;
    const fn = (name: string, path: string) => ({
      type: 'function' as const,
      name,
      description: `The ${name} tool`,
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      url: `${base}${path}`,
      method: 'POST' as const,
      headers: { 'x-api-key': 'k1' },
      timeout_ms: 300,
      signing_secret: secret,
    });
    const order = ['get_weather', 'slow_lookup', 'broken_lookup'];
    let turn = 0;
    llm.setResponder((req) => {
      const tool = pendingToolResult(req);
      if (tool) return { text: `Tool said ${contentText(tool).slice(0, 60)}` };
      return { toolCalls: [{ name: order[turn++ % 3]!, arguments: { city: 'Paris' } }] };
    });
    const config = baseConfig({
      call: { id: 'call_tools' },
      tools: [fn('get_weather', '/weather'), fn('slow_lookup', '/slow'), fn('broken_lookup', '/broken')],
    });
    const h = await startCall(config, { llmUrl: llm.url });
    try {
      for (const phrase of ['What is the weather in Paris', 'Look it up please', 'Try once more']) {
        const outputs = () => h.call.messages().filter((m) => m.tool_call).length;
        const before = outputs();
        await userSays(h, phrase, { waitReply: false });
        await waitUntil(() => outputs() > before, 20_000, 'tool output');
        await waitUntil(() => h.call.messages().at(-1)?.role === 'agent' && !h.call.messages().at(-1)?.tool_call, 20_000, 'spoken answer');
        // The answer has played out before the next question.
        await waitUntil(() => !h.out.playing && h.call.session.agentState === 'listening', 20_000, 'answer played');
      }
    } finally {
      for (const res of held) res.writeHead(200).end('{}');
      await new Promise<void>((r) => toolServer.close(() => r()));
    }
    const report = await finish(h);
    const calls = report.messages.filter((m) => m.tool_call).map((m) => m.tool_call!);
    expect(calls.map((c) => [c.name, c.is_error])).toEqual([
      ['get_weather', false],
      ['slow_lookup', true],
      ['broken_lookup', true],
    ]);
    expect(calls[0]!.output).toContain('sunny');
    expect(calls[1]!.output).toMatch(/did not answer in time/);
    expect(calls[2]!.output).toMatch(/returned an error/);
    expect(received.every((r) => r.verified)).toBe(true);
    expect(received[0]!.body).toMatchObject({ call_id: 'call_tools', name: 'get_weather', arguments: { city: 'Paris' } });
    // Every failure was still answered aloud.
    expect(report.messages.filter((m) => m.role === 'agent' && m.content.startsWith('Tool said')).length).toBe(3);
  }, 90_000);

  it('retrieves knowledge before the LLM turn and puts it in the prompt', async () => {
    api.search = (_callId, _query) => ({ chunks: [{ content: 'The restaurant opens at noon on Sundays.', score: 0.9, source_id: 'src_1' }] });
    llm.setResponder(() => ({ text: 'We open at noon.' }));
    const config = baseConfig({ call: { id: 'call_kb' }, knowledge: { knowledge_base_ids: ['kb_1'], mode: 'retrieve' } });
    const h = await startCall(config, { llmUrl: llm.url, api });
    const before = llm.requests.length;
    await userSays(h, 'When do you open on Sunday');
    const report = await finish(h);
    expect(api.searches.at(-1)).toMatchObject({ callId: 'call_kb', top_k: 4 });
    expect(api.searches.at(-1)!.query.length).toBeGreaterThan(0);
    const req = llm.requests[before]!;
    expect(req.messages.map(contentText).join('\n')).toContain('The restaurant opens at noon on Sundays.');
    expect(report.end_reason).toBe('user_hangup');
  }, 60_000);
});
