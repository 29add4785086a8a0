// A multi-node vap cluster on one machine (issue 49, section 2), started from the project's own pieces:
//   - one Redis; two LiveKit nodes on it (LiveKit's own multi-node mode: rooms spread over the nodes, signalling
//     relayed between them through Redis);
//   - HAProxy (Debian's) in front of the two LiveKit nodes and of two control-plane replicas;
//   - one PostgreSQL (embedded, its own port and folder, so it can be restarted);
//   - the SIP bridge, optional; three media workers (one prewarmed job process each).
// Clients, workers, the SIP bridge and the control planes reach LiveKit through HAProxy, and LiveKit's webhooks and
// the workers' reports reach the control planes through it, as they would through a Kubernetes Service.
// Each process is a Member: a fault can kill it, stop it or start it again with the same ports and configuration.
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { REPO_ROOT, liveLogDirs, sipBridgeVersion, toolsBinDir } from '../../../scripts/stack/supervisor.ts';
import { renderTemplate } from '../../../scripts/stack/render.ts';
import { PortPicker, freeUdpRange } from '../../../scripts/stack/ports.ts';
import { httpOk, redisPing, tcpOpen } from '../../../scripts/stack/readiness.ts';
import { Member } from './member.ts';
import { ClusterPostgres } from './postgres.ts';
import { renderHaproxyConfig } from './haproxy.ts';

export interface ClusterOptions {
  livekitNodes?: number;
  controlPlanes?: number;
  workers?: number;
  sip?: boolean;
  /** Extra environment for the control planes and the workers. */
  env?: Record<string, string>;
  /** Extra environment for the workers only. */
  workerEnv?: Record<string, string>;
  logLevel?: string;
  onProgress?: (line: string) => void;
}

export interface Cluster {
  dir: string;
  logDir: string;
  /** The control plane through HAProxy. */
  apiUrl: string;
  /** LiveKit's signalling through HAProxy (ws://). */
  livekitUrl: string;
  apiKey: string;
  apiSecret: string;
  workerToken: string;
  /** `127.0.0.1:<port>` when the SIP bridge runs. */
  sipAddress?: string;
  postgres: ClusterPostgres;
  redis: Member;
  livekit: Member[];
  haproxy: Member;
  sip: Member | null;
  controlPlanes: Member[];
  workers: Member[];
  members(): Member[];
  stop(): Promise<void>;
}

function baseEnv(): Record<string, string | undefined> {
  return { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, TZ: process.env.TZ };
}

export function haproxyBinary(): string | null {
  for (const p of ['/usr/sbin/haproxy', '/usr/bin/haproxy']) if (existsSync(p)) return p;
  return null;
}

/** What the cluster needs that setup builds or installs; empty when it can start. */
export function clusterPrerequisites(opts: { sip?: boolean } = {}): string[] {
  const bin = toolsBinDir();
  const missing: string[] = [];
  if (!existsSync(path.join(bin, 'server'))) missing.push('livekit-server (scripts/setup.sh)');
  if (opts.sip && !sipBridgeVersion()) missing.push('livekit-sip (scripts/setup.sh)');
  if (!haproxyBinary()) missing.push('haproxy (Debian package, scripts/setup.sh)');
  return missing;
}

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const progress = opts.onProgress ?? (() => {});
  const logLevel = opts.logLevel ?? 'info';
  const bin = toolsBinDir();
  const dir = mkdtempSync(path.join(tmpdir(), 'vap-cluster-'));
  // The embedded PostgreSQL runs as an unprivileged user when we are root: it must enter this folder.
  chmodSync(dir, 0o711);
  const logDir = path.join(dir, 'logs');
  mkdirSync(logDir, { recursive: true });
  liveLogDirs.add(logDir);
  const pick = new PortPicker();
  const apiKey = `API${randomBytes(6).toString('hex')}`;
  const apiSecret = randomBytes(32).toString('base64url');
  const workerToken = randomBytes(24).toString('base64url');
  const lb = { api: await pick.tcp(), livekit: await pick.tcp() };
  const apiUrl = `http://127.0.0.1:${lb.api}`;
  const livekitUrl = `ws://127.0.0.1:${lb.livekit}`;
  const all: Member[] = [];
  let postgres: ClusterPostgres | null = null;
  const member = (spec: ConstructorParameters<typeof Member>[0]) => {
    const m = new Member(spec, logDir);
    all.push(m);
    return m;
  };
  const stop = async () => {
    liveLogDirs.delete(logDir);
    // Users of a service go before it.
    for (const prefix of ['worker', 'control-plane', 'sip', 'haproxy', 'livekit', 'redis']) {
      await Promise.all(all.filter((m) => m.name.startsWith(prefix)).map((m) => m.stop()));
    }
    await postgres?.stop().catch(() => {});
    if (process.env.VAP_STACK_KEEP_LOGS !== '1') rmSync(dir, { recursive: true, force: true });
  };
  const killAll = () => all.forEach((m) => m.service?.killNow());
  process.once('exit', killAll);

  try {
    const redisPort = await pick.tcp();
    const redis = member({
      name: 'redis',
      command: 'redis-server',
      args: ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
      env: baseEnv(),
      ready: () => redisPing(redisPort),
      graceMs: 3000,
      ports: { redis: redisPort },
    });
    progress(`redis on ${redisPort}`);
    await redis.start();
    const redisAddress = `127.0.0.1:${redisPort}`;

    const pgPort = await pick.tcp();
    progress(`postgresql on ${pgPort}`);
    postgres = await ClusterPostgres.start(path.join(dir, 'data'), pgPort);

    const livekit: Member[] = [];
    const template = readFileSync(path.join(REPO_ROOT, 'deploy/livekit.yaml'), 'utf8');
    for (let i = 1; i <= (opts.livekitNodes ?? 2); i++) {
      const ports = { http: await pick.tcp(), rtcTcp: await pick.tcp(), rtcUdp: await pick.udp() };
      const yaml = path.join(dir, `livekit-${i}.yaml`);
      writeFileSync(
        yaml,
        renderTemplate(template, {
          LIVEKIT_PORT: ports.http,
          LIVEKIT_BIND: '127.0.0.1',
          LIVEKIT_RTC_TCP_PORT: ports.rtcTcp,
          LIVEKIT_RTC_UDP_PORT: ports.rtcUdp,
          LIVEKIT_NODE_IP: '127.0.0.1',
          REDIS_ADDRESS: redisAddress,
          LIVEKIT_LOG_LEVEL: logLevel,
          LIVEKIT_API_KEY: apiKey,
          LIVEKIT_WEBHOOK_URL: `${apiUrl}/internal/livekit/webhook`,
        }),
      );
      const m = member({
        name: `livekit-${i}`,
        command: path.join(bin, 'server'),
        args: ['--config', yaml],
        env: { ...baseEnv(), LIVEKIT_KEYS: `${apiKey}: ${apiSecret}` },
        ready: () => httpOk(`http://127.0.0.1:${ports.http}`),
        ports,
      });
      livekit.push(m);
      progress(`livekit node ${i} on ${ports.http}`);
      await m.start();
    }

    const cpPorts: { http: number; metrics: number }[] = [];
    for (let i = 0; i < (opts.controlPlanes ?? 2); i++) cpPorts.push({ http: await pick.tcp(), metrics: await pick.tcp() });
    const haproxyCfg = path.join(dir, 'haproxy.cfg');
    writeFileSync(
      haproxyCfg,
      renderHaproxyConfig(
        lb,
        cpPorts.map((p) => p.http),
        livekit.map((m) => m.port('http')),
      ),
    );
    const haproxy = member({
      name: 'haproxy',
      command: haproxyBinary() ?? 'haproxy',
      args: ['-db', '-f', haproxyCfg],
      env: baseEnv(),
      ready: async () => (await tcpOpen(lb.api)) && (await httpOk(`http://127.0.0.1:${lb.livekit}`)),
      graceMs: 2000,
      ports: lb,
    });
    progress(`haproxy: api ${lb.api}, livekit ${lb.livekit}`);
    await haproxy.start();

    let sip: Member | null = null;
    let sipAddress: string | undefined;
    if (opts.sip) {
      const ports = { sip: await pick.tcpUdp(), health: await pick.tcp() };
      const [rtpStart, rtpEnd] = await freeUdpRange(100);
      const yaml = path.join(dir, 'sip.yaml');
      writeFileSync(
        yaml,
        renderTemplate(readFileSync(path.join(REPO_ROOT, 'deploy/sip.yaml'), 'utf8'), {
          REDIS_ADDRESS: redisAddress,
          SIP_PORT: ports.sip,
          SIP_RTP_PORT_START: rtpStart,
          SIP_RTP_PORT_END: rtpEnd,
          SIP_HEALTH_PORT: ports.health,
          SIP_IP: '127.0.0.1',
          SIP_LOG_LEVEL: logLevel,
        }),
      );
      sip = member({
        name: 'sip',
        command: path.join(bin, 'livekit-sip'),
        args: ['--config', yaml],
        env: { ...baseEnv(), LIVEKIT_API_KEY: apiKey, LIVEKIT_API_SECRET: apiSecret, LIVEKIT_WS_URL: livekitUrl },
        ready: async () => (await httpOk(`http://127.0.0.1:${ports.health}/`)) && (await tcpOpen(ports.sip)),
        ports,
      });
      progress(`sip bridge on ${ports.sip}`);
      await sip.start();
      sipAddress = `127.0.0.1:${ports.sip}`;
    }

    const appEnv: Record<string, string | undefined> = {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: logLevel,
      DATABASE_URL: postgres.url,
      LIVEKIT_URL: livekitUrl,
      LIVEKIT_PUBLIC_URL: livekitUrl,
      LIVEKIT_API_KEY: apiKey,
      LIVEKIT_API_SECRET: apiSecret,
      WORKER_TOKEN: workerToken,
      CONTROL_PLANE_URL: apiUrl,
      STANDBY_AGENTS: '0',
      ...opts.env,
    };
    const controlPlanes = cpPorts.map((ports, i) =>
      member({
        name: `control-plane-${i + 1}`,
        command: process.execPath,
        args: ['control-plane/src/main.ts'],
        env: { SHUTDOWN_TIMEOUT_MS: '5000', ...appEnv, HOST: '127.0.0.1', PORT: String(ports.http), METRICS_PORT: String(ports.metrics) },
        ready: () => httpOk(`http://127.0.0.1:${ports.http}/health/ready`),
        graceMs: 8000,
        ports,
      }),
    );
    // One after the other: the first applies any migration, the second finds none to apply.
    for (const m of controlPlanes) {
      progress(`${m.name} on ${m.port('http')}`);
      await m.start();
    }

    const workers: Member[] = [];
    for (let i = 1; i <= (opts.workers ?? 3); i++) {
      const ports = { health: await pick.tcp(), metrics: await pick.tcp() };
      workers.push(
        member({
          name: `worker-${i}`,
          command: process.execPath,
          args: [path.join(REPO_ROOT, 'media-worker/src/main.ts'), 'start'],
          env: {
            DRAIN_TIMEOUT_MS: '120000',
            LOAD_INCLUDES_CPU: 'false',
            JOB_IDLE_PROCESSES: '1',
            ...appEnv,
            ...opts.workerEnv,
            WORKER_HEALTH_PORT: String(ports.health),
            WORKER_METRICS_PORT: String(ports.metrics),
          },
          ready: () => httpOk(`http://127.0.0.1:${ports.health}/`),
          graceMs: 130_000,
          ports,
        }),
      );
    }
    // Started together: each one's start-up is mostly waiting on its own job process.
    progress(`${workers.length} media workers`);
    await Promise.all(workers.map((w) => w.start()));

    return {
      dir,
      logDir,
      apiUrl,
      livekitUrl,
      apiKey,
      apiSecret,
      workerToken,
      ...(sipAddress ? { sipAddress } : {}),
      postgres,
      redis,
      livekit,
      haproxy,
      sip,
      controlPlanes,
      workers,
      members: () => all,
      async stop() {
        process.off('exit', killAll);
        await stop();
      },
    };
  } catch (err) {
    process.off('exit', killAll);
    await stop();
    throw err;
  }
}
