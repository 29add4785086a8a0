// A control-plane process killed mid-dial leaves no lost or duplicate call, over the real stack: LiveKit, the SIP
// bridge, the simulated carrier's edge (in this process, so it outlives the control plane) and SIPp as a callee
// that rings a few seconds, then answers. The stack runs without its control plane: this file spawns
// control-plane/src/main.ts itself with a test pause point in the dial job (VAP_TEST_DIAL_PAUSE, honoured only
// under NODE_ENV=test), SIGKILLs it when the pause is logged, and starts a fresh one, whose pg-boss takes the
// job over once its heartbeat is stale. Two kill points:
//   - before-invite: `dialed_at` committed, CreateSIPParticipant not sent. The INVITE never left, so the resumed
//     job places the call, once;
//   - after-invite: the leg is in the room and ringing at the callee. The resumed job must not ring it again; it
//     follows the leg to whatever the leg became.
// Either way: exactly one INVITE at the callee, one call row, one call.started or call.failed, and a final
// status that agrees with the leg.
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SipClient } from 'livekit-server-sdk';
import { useStack, sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { createTestDatabase } from '../support/db.ts';
import { SipCallee } from '../support/sip-callee.ts';
import { apiClient, until } from '../support/e2e.ts';
import { freeTcpPort, freeTcpUdpPort } from '../../scripts/stack/ports.ts';
import { REPO_ROOT } from '../../scripts/stack/supervisor.ts';
import { createSql, type Sql } from '../../control-plane/src/db/connect.ts';
import { createOrgWithKey } from '../../control-plane/src/modules/workspace/orgs.ts';
import { startSimulatedEdge, type SimulatedEdge } from '../../control-plane/src/modules/phone-numbers/carriers/simulated-edge.ts';

const FROM = '+14155550100';
const TO_BEFORE = '+15550000011';
const TO_AFTER = '+15550000012';
const RING_MS = 6000;

let stack: TestStack;
let sql: Sql;
let dbUrl: string;
let dropDb: () => Promise<void>;
let key: string;
let agentId: string;
let edge: SimulatedEdge;
let calleeBefore: SipCallee;
let calleeAfter: SipCallee;
let cpPort: number;
let cp: ControlPlane | null = null;
let started = 0;

/** A control-plane process of our own, its log lines kept for the pause marker. */
class ControlPlane {
  readonly lines: string[] = [];
  readonly exited: Promise<number | null>;
  readonly proc: ChildProcess;
  constructor(proc: ChildProcess) {
    this.proc = proc;
    this.exited = new Promise((r) => proc.once('exit', (code) => r(code)));
    // Kept with the stack's logs (VAP_STACK_KEEP_LOGS=1 keeps them), one file per process.
    const log = path.join(stack.logDir, `control-plane-${++started}.log`);
    for (const stream of [proc.stdout!, proc.stderr!]) {
      createInterface({ input: stream }).on('line', (l) => {
        this.lines.push(l);
        appendFileSync(log, l + '\n');
      });
    }
  }

  static async start(pause: 'before-invite' | 'after-invite' | null): Promise<ControlPlane> {
    const env: Record<string, string | undefined> = {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      DATABASE_URL: dbUrl,
      HOST: '127.0.0.1',
      PORT: String(cpPort),
      METRICS_PORT: String(await freeTcpPort()),
      LIVEKIT_URL: stack.livekitUrl,
      LIVEKIT_PUBLIC_URL: stack.livekitUrl,
      LIVEKIT_API_KEY: stack.apiKey,
      LIVEKIT_API_SECRET: stack.apiSecret,
      WORKER_TOKEN: stack.workerToken,
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      OUTBOUND_RING_TIMEOUT_SECONDS: '20',
      // The resumed job is found as soon as its dead process misses its heartbeats, not at the next minute.
      JOBS_SUPERVISE_INTERVAL_SECONDS: '5',
      // No media worker here: the answered leg must not be reaped as a lost worker while the test looks at it.
      WORKER_SILENCE_SECONDS: '600',
      OUTBOUND_AGENT_WAIT_SECONDS: '0',
      DISPATCH_TIMEOUT_SECONDS: '600',
      // The control plane's own edge is not used (ours outlives the process); keep it off the shared default port.
      SIMULATED_CARRIER_TERMINATION_ADDRESS: `127.0.0.1:${await freeTcpUdpPort()}`,
      SHUTDOWN_TIMEOUT_MS: '3000',
      VAP_TEST_DIAL_PAUSE: pause ?? undefined,
    };
    if (!pause) delete env.VAP_TEST_DIAL_PAUSE;
    const proc = spawn(process.execPath, ['control-plane/src/main.ts'], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const c = new ControlPlane(proc);
    // Its own /health (a port still held by another process would make this one exit).
    await until('the control plane to serve', async () => {
      if (proc.exitCode !== null) throw new Error(`control plane exited ${proc.exitCode}\n${c.lines.slice(-30).join('\n')}`);
      return fetch(`http://127.0.0.1:${cpPort}/health`).then((r) => r.ok).catch(() => false);
    }, 60_000);
    return c;
  }

  /** Resolves once the dial job logged its pause at `point` for the call. */
  paused(point: string, callId: string): Promise<true> {
    return until(`the dial to pause ${point}`, async () =>
      this.lines.some((l) => l.includes('dial paused for a test') && l.includes(point) && l.includes(callId)) || null, 60_000);
  }

  async kill(): Promise<void> {
    this.proc.kill('SIGKILL');
    await this.exited;
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    this.proc.kill('SIGTERM');
    await Promise.race([this.exited, new Promise((r) => setTimeout(r, 8000))]);
    if (this.proc.exitCode === null && this.proc.signalCode === null) await this.kill();
  }
}

// The control plane here is this file's own process on cpPort, not the stack's.
const api = apiClient(() => `http://127.0.0.1:${cpPort}`, () => key);

beforeAll(async () => {
  [calleeBefore, calleeAfter] = await Promise.all([SipCallee.start('answer', { ringMs: RING_MS }), SipCallee.start('answer', { ringMs: RING_MS })]);
  edge = await startSimulatedEdge({
    listen: '127.0.0.1:0',
    routes: [
      { prefix: TO_BEFORE, target: { host: '127.0.0.1', port: calleeBefore.port } },
      { prefix: TO_AFTER, target: { host: '127.0.0.1', port: calleeAfter.port } },
    ],
    noAnswerMs: 30_000,
  });
  const db = await createTestDatabase();
  dbUrl = db.url;
  dropDb = db.drop;
  cpPort = await freeTcpPort();
  stack = await useStack({ controlPlane: false, worker: false, sip: true, webhookUrl: `http://127.0.0.1:${cpPort}/internal/livekit/webhook` });
  // A first control plane migrates the database; the org, agent and number are made through it.
  cp = await ControlPlane.start(null);
  sql = createSql(dbUrl, { max: 2 });
  const { api_key, org_id: orgId } = (await createOrgWithKey(sql, 'dial crash')) as { api_key: string; org_id: string };
  key = api_key;
  const model = await api('POST', '/v1/models', { name: 'm', model: 'fake-model', base_url: 'http://127.0.0.1:9/v1' });
  expect(model.status, JSON.stringify(model.body)).toBe(201);
  const agent = await api('POST', '/v1/agents', { name: 'Caller', llm_id: model.body.id, transcriber: { provider: 'local' }, tts: { provider: 'local', model: 'festival', voice_id: 'us-slt-hts' } });
  expect(agent.status, JSON.stringify(agent.body)).toBe(201);
  agentId = agent.body.id;
  const sip = new SipClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  const trunk = await sip.createSipOutboundTrunk('dial-crash', `${edge.address.host}:${edge.address.port}`, [FROM]);
  await sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id)
            values (${orgId}, ${FROM}, 'simulated', ${agentId}, ${trunk.sipTrunkId})`;
  await cp.stop();
  cp = null;
}, 240_000);

afterAll(async () => {
  await cp?.stop();
  await Promise.all([calleeBefore?.close(), calleeAfter?.close()]);
  await edge?.close();
  await sql?.end();
  await dropDb?.();
});

/** Places a call with the dial paused at `point`, kills the control plane there, starts a fresh one; returns the call id. */
async function crashAt(point: 'before-invite' | 'after-invite', to: string, callee: SipCallee): Promise<string> {
  await cp?.stop(); // the previous case's control plane
  cp = await ControlPlane.start(point);
  const created = await api('POST', '/v1/calls', { agent_id: agentId, to_number: to });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.id as string;
  // Once answered, the callee sends (silent) media, as a phone does: the bridge hangs up a leg with none.
  void callee.waitFor('the answer', () => callee.answered, 240_000).then(() => callee.startMedia(), () => {});
  await cp.paused(point, id);
  if (point === 'after-invite') await callee.waitFor('the INVITE', () => callee.invites.length === 1, 20_000);
  else expect(callee.invites).toHaveLength(0);
  await cp.kill();
  const [row] = await sql<{ status: string; dialed_at: Date | null }[]>`select status, dialed_at from calls where id = ${id}`;
  expect(row).toMatchObject({ status: 'initiated', dialed_at: expect.any(Date) });
  cp = await ControlPlane.start(null);
  return id;
}

/** Once the call's dial job is done: the counts that say nothing was lost or doubled, and what the call became. */
async function outcome(id: string, to: string) {
  await until('the dial job to finish', async () => {
    const [job] = await sql<{ state: string }[]>`select state from pgboss.job where name = 'calls.dial' and singleton_key = ${id}`;
    return job?.state === 'completed' || job?.state === 'failed' ? true : null;
  }, 180_000);
  const rows = await sql<{ id: string; status: string; end_reason: string | null; carrier_call_sid: string | null }[]>`
    select id, status, end_reason, carrier_call_sid from calls where to_number = ${to}`;
  const events = await sql<{ type: string }[]>`select type from events where call_id = ${id} and type in ('call.started', 'call.failed')`;
  return { rows, events: events.map((e) => e.type) };
}

describe.skipIf(!sipBridgeVersion())('a control plane killed mid-dial', () => {
  it('before the INVITE: the resumed job places the call once, and it is answered', { timeout: 300_000 }, async () => {
    const id = await crashAt('before-invite', TO_BEFORE, calleeBefore);
    const { rows, events } = await outcome(id, TO_BEFORE);
    expect(calleeBefore.invites).toHaveLength(1);
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ id, status: 'in_progress', carrier_call_sid: expect.stringMatching(/^SCL_/) });
    expect(events).toEqual(['call.started']);
    expect((await api('POST', `/v1/calls/${id}/stop`)).body).toMatchObject({ status: 'completed', end_reason: 'api_stop' });
    await calleeBefore.waitFor('the BYE', () => calleeBefore.hungUp, 20_000);
  });

  it('after the INVITE, while it rings: the leg outlives its dialler, is answered, and the resumed job follows it without ringing again', { timeout: 300_000 }, async () => {
    const id = await crashAt('after-invite', TO_AFTER, calleeAfter);
    const { rows, events } = await outcome(id, TO_AFTER);
    expect(calleeAfter.invites).toHaveLength(1);
    expect(rows).toHaveLength(1);
    // What the leg became, from the callee's side (its SIPp log), and the call agrees with it.
    expect(calleeAfter.messages).not.toMatch(/^CANCEL /m);
    expect(calleeAfter.answered).toBe(true);
    expect(rows[0]).toMatchObject({ id, status: 'in_progress', carrier_call_sid: expect.stringMatching(/^SCL_/) });
    expect(events).toEqual(['call.started']);
    expect((await api('POST', `/v1/calls/${id}/stop`)).body).toMatchObject({ status: 'completed', end_reason: 'api_stop' });
    await calleeAfter.waitFor('the BYE', () => calleeAfter.hungUp, 20_000);
  });
});
