// The worker's heartbeat: at most one per interval while registered, and one at once when it starts draining (the
// control plane releases a draining worker's standby agents on it, and the drain waits for them).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Heartbeat } from './heartbeat.ts';
import { createLogger } from '../../shared/logger.ts';

const received: { path: string; body: any }[] = [];
let server: http.Server;
let url = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      received.push({ path: req.url ?? '', body: JSON.parse(raw) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => server.close());

const until = async (pred: () => boolean) => {
  for (let i = 0; i < 200 && !pred(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(pred()).toBe(true);
};

describe('Heartbeat', () => {
  it('sends once per interval while registered, and at once on drain with the last figures', async () => {
    const hb = new Heartbeat({ baseUrl: url, token: 't', agentName: 'vap-agent', log: createLogger('test', 'silent') });
    hb.tick('unregistered', 0, 0, 1_000_000);
    hb.tick('AW_1', 2, 0.2, 1_000_000);
    hb.tick('AW_1', 3, 0.3, 1_000_001); // within the interval (and while the first is in flight): nothing sent
    hb.drain(); // sent once the one in flight has answered
    await until(() => received.length === 2);
    expect(received.map((r) => r.path)).toEqual(['/internal/v1/workers/AW_1/heartbeat', '/internal/v1/workers/AW_1/heartbeat']);
    expect(received[0]!.body).toEqual({ agent_name: 'vap-agent', active_calls: 2, load: 0.2, draining: false });
    expect(received[1]!.body).toEqual({ agent_name: 'vap-agent', active_calls: 3, load: 0.3, draining: true });
  });
});
