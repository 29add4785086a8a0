// Outbound calls (docs/benchmarks.md, "Outbound calls"): from POST /v1/calls to the INVITE arriving at the
// callee's user agent, and the outbound calls per second the control plane sustains, with a same-run baseline:
// CreateSIPParticipant called directly on the same trunk (LiveKit and the SIP bridge alone, no API, no job).
// Real parts: the supervisor's Redis, LiveKit server and SIP bridge; an embedded PostgreSQL; the control plane
// in this process (pg-boss dial jobs, the simulated carrier's edge). The callee is a minimal SIP user agent on a
// UDP socket here that timestamps each INVITE and answers 486 at once (the call then fails `busy`, which frees
// its concurrency slot).
// Usage: node bench/outbound.ts [samples] [burst]   (npm run bench:outbound)
import dgram from 'node:dgram';
import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { SipClient } from 'livekit-server-sdk';
import { nearestRank, startBenchDatabase } from './support/bench-database.ts';
import { benchPlatformConfig } from './support/bench-platform.ts';
import { insertBareAgent } from '../test/support/bare-agent.ts';
import { startPlatform } from '../control-plane/src/platform.ts';
import { createOrgWithKey } from '../control-plane/src/modules/workspace/orgs.ts';
import { startSimulatedEdge } from '../control-plane/src/modules/phone-numbers/carriers/simulated-edge.ts';
import { createLogger } from '../shared/logger.ts';
import { startStack } from '../scripts/stack/supervisor.ts';
import { freeUdpRange } from '../scripts/stack/ports.ts';

const SAMPLES = Number(process.argv[2] ?? 100);
const BURST = Number(process.argv[3] ?? 200);
const FROM = '+14155550100';

const pct = nearestRank;
const summary = (xs: number[]) => ({ samples: xs.length, p50_ms: pct(xs, 50), p95_ms: pct(xs, 95), max_ms: pct(xs, 100) });

/** The callee: timestamps INVITEs by dialled number and answers 486 Busy Here. */
function startUa(): Promise<{ port: number; arrivals: Map<string, number>; close(): void }> {
  const sock = dgram.createSocket('udp4');
  const arrivals = new Map<string, number>();
  sock.on('message', (buf, rinfo) => {
    const at = performance.now();
    const text = buf.toString();
    if (!text.startsWith('INVITE ')) return;
    const num = /^INVITE sips?:(\+?[0-9]+)@/.exec(text)?.[1];
    if (num && !arrivals.has(num)) arrivals.set(num, at);
    const head = text.split('\r\n\r\n')[0]!.split('\r\n');
    const keep = head.filter((l) => /^(via|from|to|call-id|cseq|v|f|t|i):/i.test(l)).map((l) => (/^(to|t):/i.test(l) && !/;tag=/i.test(l) ? `${l};tag=ua${Math.random().toString(36).slice(2, 8)}` : l));
    sock.send(['SIP/2.0 486 Busy Here', ...keep, 'Content-Length: 0', '', ''].join('\r\n'), rinfo.port, rinfo.address);
  });
  return new Promise((resolve) => sock.bind(0, '127.0.0.1', () => resolve({ port: sock.address().port, arrivals, close: () => sock.close() })));
}

// The SIP bridge takes an RTP port pair per call and holds it a while after the call: give it a wide range.
const [rtpStart, rtpEnd] = await freeUdpRange(2000);
const stack = await startStack({
  freePorts: true,
  ports: { sipRtpStart: rtpStart, sipRtpEnd: rtpEnd },
  redis: 'own',
  sip: true,
  controlPlane: false,
  worker: false,
  env: {},
  logLevel: 'error',
});
const db = await startBenchDatabase('outbound');
const ua = await startUa();
const edge = await startSimulatedEdge({ listen: '127.0.0.1:0', routes: [{ prefix: '', target: { host: '127.0.0.1', port: ua.port } }], noAnswerMs: 5000 });
let platform: Awaited<ReturnType<typeof startPlatform>> | null = null;
try {
  const config = benchPlatformConfig(db, {
    LIVEKIT_URL: stack.livekitUrl,
    LIVEKIT_API_KEY: stack.apiKey,
    LIVEKIT_API_SECRET: stack.apiSecret,
    WORKER_TOKEN: stack.workerToken,
    OUTBOUND_RING_TIMEOUT_SECONDS: 10,
    // No media worker here: the dial job must not wait for an agent to join (see docs/benchmarks.md).
    OUTBOUND_AGENT_WAIT_SECONDS: 0,
  });
  platform = await startPlatform(config, { log: createLogger('bench', 'silent') });
  const sql = platform.services.sql;
  const org = await createOrgWithKey(sql, 'bench');
  await sql`update orgs set max_concurrent_calls = 100000, max_calls_per_day = 1000000, daily_spend_cap_cents = 1000000000 where id = ${org.org_id}`;
  const agentId = await insertBareAgent(sql, org.org_id);
  const sip = new SipClient(stack.livekitHttpUrl, stack.apiKey, stack.apiSecret);
  const trunk = await sip.createSipOutboundTrunk('bench', `127.0.0.1:${edge.address.port}`, [FROM]);
  await sql`insert into phone_numbers (org_id, phone_number, provider, agent_id, outbound_trunk_id) values (${org.org_id}, ${FROM}, 'simulated', ${agentId}, ${trunk.sipTrunkId})`;

  let n = 0;
  const nextNumber = () => `+1555${String(1_000_000 + n++).padStart(7, '0')}`;
  const waitInvite = async (num: string, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    while (!ua.arrivals.has(num)) {
      if (Date.now() > deadline) throw new Error(`no INVITE for ${num}`);
      await new Promise((r) => setTimeout(r, 1));
    }
    return ua.arrivals.get(num)!;
  };
  const post = async (num: string) => {
    const res = await fetch(`${platform!.url}/v1/calls`, {
      method: 'POST',
      headers: { authorization: `Bearer ${org.api_key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ agent_id: agentId, to_number: num }),
    });
    if (res.status !== 201) throw new Error(`POST /v1/calls answered ${res.status}: ${await res.text()}`);
    await res.arrayBuffer();
  };

  // Warm-up: both paths, a few calls each.
  for (let i = 0; i < 5; i++) {
    const a = nextNumber();
    await post(a);
    await waitInvite(a);
    const b = nextNumber();
    await sip.createSipParticipant(trunk.sipTrunkId, b, `bench-direct-${b}`, { participantIdentity: 'callee' }).catch(() => {});
    await waitInvite(b);
  }

  // 1. Latency, interleaved so both see the same load: API -> job -> LiveKit -> INVITE, and LiveKit alone.
  const viaApi: number[] = [];
  const direct: number[] = [];
  const accepted: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const a = nextNumber();
    const t0 = performance.now();
    await post(a);
    accepted.push(performance.now() - t0);
    viaApi.push((await waitInvite(a)) - t0);
    const b = nextNumber();
    const t1 = performance.now();
    // Without waitUntilAnswered the request returns once the bridge has taken the call; the INVITE is the mark.
    void sip.createSipParticipant(trunk.sipTrunkId, b, `bench-direct-${b}`, { participantIdentity: 'callee' }).catch(() => {});
    direct.push((await waitInvite(b)) - t1);
  }

  // 2. Throughput: BURST calls posted by 20 clients at once; calls/s from the first POST to the last INVITE.
  const burst = Array.from({ length: BURST }, nextNumber);
  const start = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < burst.length) await post(burst[next++]!);
    }),
  );
  const postedIn = performance.now() - start;
  const last = Math.max(...(await Promise.all(burst.map((b) => waitInvite(b, 120_000)))));
  const dialledIn = last - start;

  const results = {
    invite_latency: { via_api: summary(viaApi), baseline_direct_create_sip_participant: summary(direct) },
    post_response: summary(accepted),
    throughput: {
      calls: BURST,
      clients: 20,
      accepted_per_second: Math.round((BURST / postedIn) * 1000 * 10) / 10,
      dialled_per_second: Math.round((BURST / dialledIn) * 1000 * 10) / 10,
    },
  };
  const commit = execSync('git rev-parse HEAD').toString().trim();
  const machine = { cores: cpus().length, cpu: cpus()[0]?.model, load_average: loadavg().map((l) => Math.round(l * 100) / 100) };
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(
    'bench/results/outbound.json',
    JSON.stringify({ at: new Date().toISOString(), commit, machine, command: `npm run bench:outbound -- ${SAMPLES} ${BURST}`, results }, null, 2) + '\n',
  );
  console.log(JSON.stringify(results, null, 2));
} finally {
  await platform?.close();
  await edge.close();
  ua.close();
  await db.stop();
  await stack.stop();
}
