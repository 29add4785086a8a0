// Starts the local stack — Redis, the LiveKit server, the SIP bridge, the control plane and the media worker —
// waits until each is ready, and stops them all (process groups) on stop() or when this process exits.
// Used by `npm start` (scripts/stack.ts) and by the tests (test/support/stack.ts).
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { renderTemplate } from './render.ts';
import { freeUdpRange, PortPicker } from './ports.ts';
import { Service } from './process.ts';
import { httpOk, redisPing, tcpOpen, waitReady } from './readiness.ts';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface StackPorts {
  /** LiveKit HTTP, WebSocket signalling and Twirp API. */
  livekit: number;
  /** LiveKit ICE over TCP. */
  rtcTcp: number;
  /** LiveKit WebRTC media, one muxed UDP port. */
  rtcUdp: number;
  redis: number;
  /** SIP signalling, UDP and TCP. */
  sip: number;
  sipRtpStart: number;
  sipRtpEnd: number;
  sipHealth: number;
  controlPlane: number;
  controlPlaneMetrics: number;
  /** The media worker's health server. */
  worker: number;
  workerMetrics: number;
}

/** Fixed ports of `npm start` (LiveKit's and SIP's usual ones). */
export const DEFAULT_PORTS: StackPorts = {
  livekit: 7880,
  rtcTcp: 7881,
  rtcUdp: 7882,
  redis: 6379,
  sip: 5060,
  sipRtpStart: 10000,
  sipRtpEnd: 10099,
  sipHealth: 7890,
  controlPlane: 8080,
  controlPlaneMetrics: 9464,
  worker: 8081,
  workerMetrics: 9465,
};

export interface StackOptions {
  /** Pick free ports for everything not given in `ports` (tests; two runs side by side). */
  freePorts?: boolean;
  ports?: Partial<StackPorts>;
  /**
   * `auto`: reuse the Redis answering on `ports.redis` (6379 by default), else start one.
   * `own`: always start one (isolation: LiveKit nodes and SIP bridges sharing a Redis form one cluster,
   * and Redis pub/sub ignores database numbers). A `host:port` uses that Redis.
   */
  redis?: string; // 'auto', 'own' or HOST:PORT
  /** `if-built` starts the bridge only when setup could build it. */
  sip?: boolean | 'if-built';
  controlPlane?: boolean;
  worker?: boolean;
  apiKey?: string;
  apiSecret?: string;
  /** Where LiveKit posts webhooks; defaults to the control plane's receiver when the control plane runs. */
  webhookUrl?: string | null;
  /** Extra environment for the control plane and the worker. */
  env?: Record<string, string>;
  /** Address LiveKit and SIP announce to clients. */
  nodeIp?: string;
  /** Rendered configs and logs. Default: a new temporary folder. */
  runDir?: string;
  toolsDir?: string;
  logLevel?: string;
  /** The SIP bridge's own level, where it differs (a benchmark reads its per-call lines). */
  sipLogLevel?: string;
  readyTimeoutMs?: number;
  /** Progress lines (the CLI prints them). */
  onProgress?: (message: string) => void;
  /** Aborts start-up (Ctrl-C while waiting): everything started so far is stopped. */
  signal?: AbortSignal;
}

export interface ServiceInfo {
  name: string;
  pid: number | undefined;
  log: string;
}

export interface RunningStack {
  /** ws:// URL for clients, agents and server SDKs. */
  livekitUrl: string;
  livekitHttpUrl: string;
  apiKey: string;
  apiSecret: string;
  redisAddress: string;
  /** True when this stack started its own Redis. */
  ownRedis: boolean;
  /** `127.0.0.1:<port>` when the SIP bridge runs. */
  sipAddress?: string;
  sipVersion?: string;
  /** The LiveKit server version (setup's stamp). */
  livekitVersion: string;
  controlPlaneUrl?: string;
  workerToken: string;
  ports: StackPorts;
  runDir: string;
  logDir: string;
  services: ServiceInfo[];
  /** Resolves when a service exits on its own (a crash), with its name and exit code. */
  crashed: Promise<{ name: string; code: number | null }>;
  stop(): Promise<void>;
}

/** Log folders of the stacks this process runs now: a failing test prints their tails (test/support/failure-logs.ts). */
export const liveLogDirs = new Set<string>();

export function toolsBinDir(toolsDir = process.env.VAP_TOOLS_DIR): string {
  return path.join(toolsDir ?? path.join(homedir(), '.local/share/vap/tools'), 'bin');
}

/** The version scripts/setup.sh built a tool at (its `<name>.version` stamp), or null when it is not built. */
export function toolVersion(name: 'server' | 'livekit-sip', toolsDir?: string): string | null {
  const bin = toolsBinDir(toolsDir);
  if (!existsSync(path.join(bin, name))) return null;
  try {
    return readFileSync(path.join(bin, `${name}.version`), 'utf8').trim() || 'unknown';
  } catch {
    return 'unknown';
  }
}

/** The SIP bridge version setup built, or null. */
export function sipBridgeVersion(toolsDir?: string): string | null {
  return toolVersion('livekit-sip', toolsDir);
}

async function choosePorts(opts: StackOptions, pick: PortPicker): Promise<StackPorts> {
  const given = opts.ports ?? {};
  if (!opts.freePorts) return { ...DEFAULT_PORTS, ...given };
  // The SIP bridge binds even RTP ports only, and keeps a finished call's port draining until no packet has
  // come for 30 s: 20 ports (10 calls per half-minute) ran out in the inbound e2e file, and the INVITE got a
  // 500. 100, like the fixed default range, holds 50.
  const [rtpStart, rtpEnd] = given.sipRtpStart && given.sipRtpEnd ? [given.sipRtpStart, given.sipRtpEnd] : await freeUdpRange(100);
  for (const port of Object.values(given)) if (typeof port === 'number') pick.take(port);
  return {
    livekit: given.livekit ?? (await pick.tcp()),
    rtcTcp: given.rtcTcp ?? (await pick.tcp()),
    rtcUdp: given.rtcUdp ?? (await pick.udp()),
    // Redis: probed at its usual port in `auto` mode; a stack that starts its own picks a free one then.
    redis: given.redis ?? DEFAULT_PORTS.redis,
    sip: given.sip ?? (await pick.tcpUdp()),
    sipRtpStart: rtpStart,
    sipRtpEnd: rtpEnd,
    sipHealth: given.sipHealth ?? (await pick.tcp()),
    controlPlane: given.controlPlane ?? (await pick.tcp()),
    controlPlaneMetrics: given.controlPlaneMetrics ?? (await pick.tcp()),
    worker: given.worker ?? (await pick.tcp()),
    workerMetrics: given.workerMetrics ?? (await pick.tcp()),
  };
}

/** Environment for the Go binaries: only what they need, so a stray LIVEKIT_CONFIG or REDIS_HOST can't leak in. */
function baseEnv(): Record<string, string | undefined> {
  return { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: process.env.TMPDIR, TZ: process.env.TZ };
}

/**
 * Removes the temporary run folders of stacks whose owning process is gone (a test process killed before
 * its clean-up; the kernel stopped the services, see process.ts). A folder with a `keep` file stays.
 */
function sweepStaleRunDirs(): void {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith('vap-stack-')) continue;
    const dir = path.join(tmpdir(), name);
    try {
      if (existsSync(path.join(dir, 'keep'))) continue;
      const pid = Number(readFileSync(path.join(dir, 'owner.pid'), 'utf8'));
      if (pid > 0 && !pidAlive(pid)) rmSync(dir, { recursive: true, force: true });
    } catch {
      // Not ours, or being created right now.
    }
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function startStack(opts: StackOptions = {}): Promise<RunningStack> {
  const progress = opts.onProgress ?? (() => {});
  const timeout = opts.readyTimeoutMs ?? 60_000;
  const bin = toolsBinDir(opts.toolsDir);
  if (!opts.runDir) sweepStaleRunDirs();
  const runDir = opts.runDir ?? mkdtempSync(path.join(tmpdir(), 'vap-stack-'));
  if (!opts.runDir) writeFileSync(path.join(runDir, 'owner.pid'), String(process.pid));
  // The embedded PostgreSQL's initdb runs as an unprivileged user when we are root: it must enter this folder.
  if (!opts.runDir) chmodSync(runDir, 0o711);
  const logDir = path.join(runDir, 'logs');
  mkdirSync(logDir, { recursive: true });
  // One picker for every port this stack chooses, the ones chosen later (Redis, PostgreSQL) too.
  const pick = new PortPicker();
  const ports = await choosePorts(opts, pick);
  const nodeIp = opts.nodeIp ?? '127.0.0.1';
  const apiKey = opts.apiKey ?? `API${randomBytes(6).toString('hex')}`;
  // LiveKit asks for secrets of at least 32 characters.
  const apiSecret = opts.apiSecret ?? randomBytes(32).toString('base64url');
  const workerToken = opts.env?.WORKER_TOKEN ?? process.env.WORKER_TOKEN ?? randomBytes(24).toString('base64url');
  const logLevel = opts.logLevel ?? 'info';

  const services: Service[] = [];
  liveLogDirs.add(logDir);
  const killAll = () => services.forEach((s) => s.killNow());
  process.on('exit', killAll);
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    liveLogDirs.delete(logDir);
    // Reverse order of start: the users of a service go before it.
    for (const group of [['worker', 'control-plane'], ['sip'], ['livekit'], ['redis']]) {
      await Promise.all(services.filter((s) => group.includes(s.name)).map((s) => s.stop()));
    }
    process.off('exit', killAll);
  };
  const start = (name: string, command: string, args: string[], env: Record<string, string | undefined>, graceMs = 5000) => {
    const s = new Service({ name, command, args, env, cwd: REPO_ROOT, logPath: path.join(logDir, `${name}.log`), graceMs });
    services.push(s);
    return s;
  };

  try {
    // Redis.
    let redisHost = '127.0.0.1';
    let redisPort = ports.redis;
    let ownRedis = false;
    const mode = opts.redis ?? 'auto';
    if (mode !== 'auto' && mode !== 'own') {
      const u = new URL(`redis://${mode}`);
      redisHost = u.hostname;
      redisPort = Number(u.port || 6379);
      if (!(await redisPing(redisPort, redisHost))) throw new Error(`no Redis answers at ${mode}`);
    } else if (mode === 'own' || !(await redisPing(redisPort, redisHost))) {
      if (opts.freePorts && opts.ports?.redis === undefined) redisPort = await pick.tcp();
      progress(`starting redis on ${redisHost}:${redisPort}`);
      const redis = start('redis', 'redis-server', ['--port', String(redisPort), '--bind', redisHost, '--save', '', '--appendonly', 'no', '--dir', runDir], baseEnv(), 3000);
      await waitReady(redis, 'redis', () => redisPing(redisPort, redisHost), timeout, opts.signal);
      ownRedis = true;
    } else {
      progress(`using the Redis running on ${redisHost}:${redisPort}`);
    }
    ports.redis = redisPort;
    const redisAddress = `${redisHost}:${redisPort}`;

    // LiveKit server.
    const server = path.join(bin, 'server');
    if (!existsSync(server)) throw new Error(`LiveKit server not found at ${server}; run scripts/setup.sh`);
    const controlPlaneUrl = opts.controlPlane ? `http://127.0.0.1:${ports.controlPlane}` : undefined;
    const webhookUrl = opts.webhookUrl === undefined ? (controlPlaneUrl ? `${controlPlaneUrl}/internal/livekit/webhook` : '') : (opts.webhookUrl ?? '');
    const livekitYaml = path.join(runDir, 'livekit.yaml');
    writeFileSync(
      livekitYaml,
      renderTemplate(readFileSync(path.join(REPO_ROOT, 'deploy/livekit.yaml'), 'utf8'), {
        LIVEKIT_PORT: ports.livekit,
        LIVEKIT_BIND: '127.0.0.1',
        LIVEKIT_RTC_TCP_PORT: ports.rtcTcp,
        LIVEKIT_RTC_UDP_PORT: ports.rtcUdp,
        LIVEKIT_NODE_IP: nodeIp,
        REDIS_ADDRESS: redisAddress,
        LIVEKIT_LOG_LEVEL: logLevel,
        LIVEKIT_API_KEY: apiKey,
        LIVEKIT_WEBHOOK_URL: webhookUrl,
      }),
    );
    progress(`starting livekit-server ${toolVersion('server', opts.toolsDir) ?? ''} on 127.0.0.1:${ports.livekit} (ICE TCP ${ports.rtcTcp}, UDP ${ports.rtcUdp})`);
    const livekit = start('livekit', server, ['--config', livekitYaml], { ...baseEnv(), LIVEKIT_KEYS: `${apiKey}: ${apiSecret}` });
    const livekitHttpUrl = `http://127.0.0.1:${ports.livekit}`;
    const livekitUrl = `ws://127.0.0.1:${ports.livekit}`;
    await waitReady(livekit, 'livekit', () => httpOk(livekitHttpUrl), timeout, opts.signal);

    // SIP bridge.
    let sipAddress: string | undefined;
    let sipVersion: string | undefined;
    const sipBin = path.join(bin, 'livekit-sip');
    const wantSip = opts.sip === true || (opts.sip === 'if-built' && existsSync(sipBin));
    if (wantSip) {
      if (!existsSync(sipBin)) throw new Error(`SIP bridge not found at ${sipBin}; run scripts/setup.sh`);
      sipVersion = sipBridgeVersion(opts.toolsDir) ?? undefined;
      const sipYaml = path.join(runDir, 'sip.yaml');
      writeFileSync(
        sipYaml,
        renderTemplate(readFileSync(path.join(REPO_ROOT, 'deploy/sip.yaml'), 'utf8'), {
          REDIS_ADDRESS: redisAddress,
          SIP_PORT: ports.sip,
          SIP_RTP_PORT_START: ports.sipRtpStart,
          SIP_RTP_PORT_END: ports.sipRtpEnd,
          SIP_HEALTH_PORT: ports.sipHealth,
          SIP_IP: nodeIp,
          SIP_LOG_LEVEL: opts.sipLogLevel ?? logLevel,
        }),
      );
      progress(`starting livekit-sip ${sipVersion} on ${nodeIp}:${ports.sip} (RTP ${ports.sipRtpStart}-${ports.sipRtpEnd})`);
      const sip = start('sip', sipBin, ['--config', sipYaml], {
        ...baseEnv(),
        LIVEKIT_API_KEY: apiKey,
        LIVEKIT_API_SECRET: apiSecret,
        LIVEKIT_WS_URL: livekitUrl,
      });
      await waitReady(sip, 'livekit-sip', async () => (await httpOk(`http://127.0.0.1:${ports.sipHealth}/`)) && (await tcpOpen(ports.sip, nodeIp)), timeout, opts.signal);
      sipAddress = `${nodeIp}:${ports.sip}`;
    }

    // Control plane and media worker share the LiveKit settings.
    const appEnv: Record<string, string | undefined> = {
      ...process.env,
      LIVEKIT_URL: livekitUrl,
      LIVEKIT_PUBLIC_URL: livekitUrl,
      LIVEKIT_API_KEY: apiKey,
      LIVEKIT_API_SECRET: apiSecret,
      WORKER_TOKEN: workerToken,
      ...(controlPlaneUrl ? { CONTROL_PLANE_URL: controlPlaneUrl } : {}),
      ...opts.env,
    };
    if (opts.controlPlane) {
      // With free ports and no DATABASE_URL, the embedded PostgreSQL gets a port and a folder of its own too.
      const embedded = opts.freePorts && !appEnv.DATABASE_URL ? { DATA_DIR: path.join(runDir, 'data'), EMBEDDED_PG_PORT: String(await pick.tcp()) } : {};
      progress(`starting control plane on ${controlPlaneUrl}`);
      const cp = start(
        'control-plane',
        process.execPath,
        ['control-plane/src/main.ts'],
        { SHUTDOWN_TIMEOUT_MS: '5000', LOG_LEVEL: logLevel, ...embedded, ...appEnv, HOST: '127.0.0.1', PORT: String(ports.controlPlane), METRICS_PORT: String(ports.controlPlaneMetrics) },
        8000,
      );
      await waitReady(cp, 'control plane', () => httpOk(`${controlPlaneUrl}/health/ready`), timeout, opts.signal);
    }
    if (opts.worker) {
      const main = path.join(REPO_ROOT, 'media-worker/src/main.ts');
      if (!existsSync(main)) throw new Error(`media worker not found at ${main}`);
      progress(`starting media worker (health on 127.0.0.1:${ports.worker}, metrics on ${ports.workerMetrics})`);
      // A stopping worker drains its calls (30 min in production); a local stack should stop promptly.
      const worker = start(
        'worker',
        process.execPath,
        [main, 'start'],
        { LOG_LEVEL: logLevel, DRAIN_TIMEOUT_MS: '5000', LOAD_INCLUDES_CPU: 'false', ...appEnv, WORKER_HEALTH_PORT: String(ports.worker), WORKER_METRICS_PORT: String(ports.workerMetrics) },
        8000,
      );
      await waitReady(worker, 'media worker', () => httpOk(`http://127.0.0.1:${ports.worker}/`), timeout, opts.signal);
    }

    return {
      livekitUrl,
      livekitHttpUrl,
      apiKey,
      apiSecret,
      redisAddress,
      ownRedis,
      ...(sipAddress ? { sipAddress } : {}),
      ...(sipVersion ? { sipVersion } : {}),
      livekitVersion: toolVersion('server', opts.toolsDir) ?? 'unknown',
      ...(controlPlaneUrl ? { controlPlaneUrl } : {}),
      workerToken,
      ports,
      runDir,
      logDir,
      services: services.map((s) => ({ name: s.name, pid: s.pid, log: s.logPath })),
      crashed: new Promise((resolve) => {
        for (const s of services) void s.exited.then((code) => !stopped && resolve({ name: s.name, code }));
      }),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
