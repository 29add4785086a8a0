// Only the carrier reaches an agent, over the real SIP bridge. The simulated carrier's calls come from
// 127.0.0.1; SIPp on 127.0.0.2 plays a stranger on the internet. A stranger's INVITE to a purchased number
// (any caller ID) matches no number's trunk (their address is not the carrier's), so it meets the catch-all
// trunk, whose digest credentials nobody holds: the bridge refuses it with a final 407 before any room, agent
// job, control-plane request, call row or charge exists. The same INVITE from the carrier's address is
// answered by the agent. Then 200 INVITEs from the stranger to random numbers: all refused, no room, no agent
// job, and not one request reaches the control plane's internal API (so its rate limit is untouched).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomInt, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RoomServiceClient } from 'livekit-server-sdk';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { SipPhone } from '../support/sip-phone.ts';
import { ackRefusal } from '../support/sipp-agent.ts';
import { FIRST_MESSAGE } from '../support/greetings.ts';
import { untilEvery } from '../support/e2e.ts';
import { freeTcpUdpPort } from '../../scripts/stack/ports.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';

const STRANGER = '127.0.0.2';
let stack: TestStack;
let llm: FakeOpenAI;
let sql: Sql;
let rooms: RoomServiceClient;
let number: { id: string; phone_number: string };

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250);

/** Requests the control plane served, by route (its Prometheus histogram's counts). */
async function served(): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${stack.ports.controlPlaneMetrics}/metrics`)).text();
  const counts = new Map<string, number>();
  for (const m of text.matchAll(/^vap_http_request_duration_seconds_count\{([^}]*)\} (\d+)/gm)) {
    const route = /route="([^"]*)"/.exec(m[1]!)?.[1] ?? '';
    counts.set(route, (counts.get(route) ?? 0) + Number(m[2]));
  }
  return counts;
}
/** Internal API requests about calls and rooms (the worker's heartbeat goes on regardless). */
const internal = (c: Map<string, number>) => [...c].filter(([route]) => route.startsWith('/internal/') && !route.endsWith('/heartbeat')).reduce((n, [, v]) => n + v, 0);

/** Agent jobs the worker was offered (agents-js logs each job request). */
const jobRequests = () => (readFileSync(stack.services.find((s) => s.name === 'worker')!.log, 'utf8').match(/received job request/g) ?? []).length;

const callsTo = (to: string) => sql<{ id: string; status: string }[]>`select id, status from calls where to_number = ${to}`;

/**
 * `count` INVITEs from `from` (any caller ID) at the bridge, one per number in `numbers` (in turn), from
 * SIPp bound to the stranger's address; each final answer is ACKed. Returns the final statuses seen.
 */
async function strangerInvites(numbers: string[], count: number): Promise<{ finals: Map<number, number>; exit: number | null; log: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'vap-stranger-'));
  try {
    writeFileSync(path.join(dir, 'numbers.csv'), ['SEQUENTIAL', ...numbers.map((n) => `${n};`)].join('\n') + '\n');
    const finals = [401, 403, 404, 480, 486, 487, 488, 500, 503, 603];
    writeFileSync(
      path.join(dir, 'stranger.xml'),
      `<?xml version="1.0" encoding="ISO-8859-1" ?>
<!DOCTYPE scenario SYSTEM "sipp.dtd">
<scenario name="stranger">
  <send retrans="500">
    <![CDATA[
INVITE sip:[field0]@[remote_ip]:[remote_port] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:+15550100199@[local_ip]:[local_port]>;tag=[pid]T[call_number]
To: <sip:[field0]@[remote_ip]:[remote_port]>
Call-ID: [call_id]
CSeq: 1 INVITE
Contact: <sip:+15550100199@[local_ip]:[local_port]>
Max-Forwards: 70
Content-Type: application/sdp
Content-Length: [len]

v=0
o=x 1 1 IN IP4 [local_ip]
s=-
c=IN IP4 [local_ip]
t=0 0
m=audio 40000 RTP/AVP 0
a=rtpmap:0 PCMU/8000
    ]]>
  </send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="183" optional="true"/>
${finals.map((c) => `  <recv response="${c}" optional="true" next="ack"/>`).join('\n')}
  <recv response="407"/>
  <label id="ack"/>
${ackRefusal('sip:[field0]@[remote_ip]:[remote_port]')}
</scenario>
`,
    );
    const port = await freeTcpUdpPort(STRANGER);
    const args = [stack.sipAddress!, '-sf', 'stranger.xml', '-inf', 'numbers.csv', '-i', STRANGER, '-p', String(port), '-m', String(count), '-r', '20', '-l', '40'];
    args.push('-cid_str', `${randomUUID()}-%u@stranger`, '-nostdin', '-timeout', '240s', '-timeout_error', '-recv_timeout', '30000', '-trace_msg', '-message_file', 'messages.log');
    const sipp = spawn('sipp', args, { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir });
    let stderr = '';
    sipp.stderr!.on('data', (d) => (stderr += String(d)));
    const exit = await new Promise<number | null>((r) => sipp.once('exit', r));
    const log = readFileSync(path.join(dir, 'messages.log'), 'utf8');
    const seen = new Map<number, number>();
    for (const m of log.matchAll(/^SIP\/2\.0 (\d{3}) /gm)) {
      const code = Number(m[1]);
      if (code >= 200) seen.set(code, (seen.get(code) ?? 0) + 1);
    }
    return { finals: seen, exit, log: `${stderr}\n${log.slice(-3000)}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder(() => ({ text: 'Sorry, we are closed on Sundays.' }));
  ({ stack, sql } = await fixture.start({
    org: 'sip-security',
    worker: true,
    sip: true,
    // The carrier is 127.0.0.1 only; 127.0.0.2 is a stranger.
    env: { SSRF_ALLOWLIST: '127.0.0.1,localhost', SIMULATED_CARRIER_SOURCE_ADDRESSES: '127.0.0.1/32', WORKER_SILENCE_SECONDS: '15', DISPATCH_TIMEOUT_SECONDS: '30', SIP_RINGING_TIMEOUT_SECONDS: '90' },
  }));
  rooms = new RoomServiceClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'You are a receptionist.' });
  const agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, first_message: FIRST_MESSAGE });
  const bought = await api('POST', '/v1/phone-numbers', { agent_id: agentId, area_code: '415' });
  expect(bought.status, JSON.stringify(bought.body)).toBe(200);
  number = bought.body;
}, 240_000);

afterAll(async () => {
  await fixture.stop();
  await llm?.close();
});

describe.skipIf(!sipBridgeVersion())('only the carrier reaches an agent', () => {
  it('an INVITE to a purchased number from a stranger is refused by the bridge: no room, job, request or call', { timeout: 120_000 }, async () => {
    const before = await served();
    const jobs = jobRequests();
    const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: number.phone_number, from: '+15550100199', localAddress: STRANGER, timeoutSeconds: 60 });
    try {
      await phone.waitFor('a final refusal', () => phone.finalStatus || phone.answered, 60_000);
      expect(phone.answered).toBe(false);
      expect(phone.finalStatus, phone.messages.slice(-2000)).toBe(407);
    } finally {
      await phone.close();
    }
    expect(await rooms.listRooms()).toEqual([]);
    expect(await callsTo(number.phone_number)).toEqual([]);
    expect(jobRequests()).toBe(jobs);
    const after = await served();
    expect(internal(after)).toBe(internal(before));
  });

  it('the same INVITE from the carrier\'s address is answered by the agent, and the call is recorded', { timeout: 240_000 }, async () => {
    const before = await served();
    const jobs = jobRequests();
    const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: number.phone_number, from: '+15550100199' });
    try {
      await phone.waitFor('an answer or a refusal', () => phone.answered || phone.finalStatus, 120_000);
      expect(phone.answered, phone.messages.slice(-2000)).toBe(true);
      await phone.hangUp();
    } finally {
      await phone.close();
    }
    const [call] = await callsTo(number.phone_number);
    expect(call).toBeTruthy();
    await until('the call to complete', async () => (await callsTo(number.phone_number)).find((c) => c.id === call!.id && c.status === 'completed'), 90_000);
    await until('the room to close', async () => (await rooms.listRooms()).length === 0, 90_000);
    // The measures the stranger tests rely on do move for a real call: a job, and internal API requests.
    expect(jobRequests()).toBeGreaterThan(jobs);
    expect((await served()).get('/internal/v1/calls/inbound')).toBe((before.get('/internal/v1/calls/inbound') ?? 0) + 1);
  });

  it('200 INVITEs from a stranger to random numbers: all refused, zero agent jobs, zero rooms, no internal API request', { timeout: 300_000 }, async () => {
    const before = await served();
    const jobs = jobRequests();
    const callsBefore = (await sql<{ n: number }[]>`select count(*)::int as n from calls`)[0]!.n;
    // Random US numbers, and the purchased number among them.
    const numbers = [number.phone_number, ...Array.from({ length: 49 }, () => `+1${randomInt(2, 10)}${String(randomInt(0, 1e9)).padStart(9, '0')}`)];
    const run = await strangerInvites(numbers, 200);
    expect(run.finals.get(407), run.log).toBe(200);
    expect([...run.finals.keys()]).toEqual([407]);
    expect(run.exit, run.log).toBe(0);
    expect(await rooms.listRooms()).toEqual([]);
    expect(jobRequests()).toBe(jobs);
    const after = await served();
    expect(internal(after)).toBe(internal(before));
    expect((await sql<{ n: number }[]>`select count(*)::int as n from calls`)[0]!.n).toBe(callsBefore);
  });
});
