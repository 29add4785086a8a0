// Worker settings from the environment, checked at start-up.
import { DEV_LIVEKIT_API_KEY, DEV_LIVEKIT_API_SECRET, devLivekitCredentialsError } from '../../shared/livekit-credentials.ts';

export interface WorkerConfig {
  agentName: string;
  controlPlaneUrl: string;
  workerToken: string;
  livekitUrl: string;
  livekitApiKey: string;
  livekitApiSecret: string;
  maxConcurrentCalls: number;
  loadThreshold: number;
  /** Whether machine CPU use counts in the load reported to LiveKit (LOAD_INCLUDES_CPU, default true). */
  loadIncludesCpu: boolean;
  drainTimeoutMs: number;
  healthHost: string;
  healthPort: number;
  metricsHost: string;
  metricsPort: number;
  /** V8's largest young-generation semi-space in each job process, MB (JOB_MAX_SEMI_SPACE_MB; 0 = V8's own). */
  jobMaxSemiSpaceMb: number;
  /** How long a new job process may take to start and prewarm (JOB_INIT_TIMEOUT_MS; agents-js's default 10 s). */
  jobInitTimeoutMs: number;
  /** Job processes kept started and prewarmed ahead of calls (JOB_IDLE_PROCESSES; unset: agents-js's min(cores, 4)). */
  jobIdleProcesses: number | undefined;
  /** Longest wait, after a call takes a prewarmed process, before its replacement is forked (FORK_DEFER_MS; 0 = at once). */
  forkDeferMs: number;
  /** A call's first ms in which no replacement is forked, unless capacity needs it (FORK_QUIET_MS; 0 = off). */
  forkQuietMs: number;
  /** Each idle job process keeps a local STT helper loaded for its call (PREWARM_LOCAL_STT, default true). */
  prewarmLocalStt: boolean;
}

function int(env: NodeJS.ProcessEnv, name: string, def: number, min = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name} must be a number >= ${min}`);
  return n;
}

export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const workerToken = env.WORKER_TOKEN ?? '';
  if (workerToken.length < 32) throw new Error('WORKER_TOKEN must be set (at least 32 characters)');
  const livekitApiKey = env.LIVEKIT_API_KEY || DEV_LIVEKIT_API_KEY;
  const livekitApiSecret = env.LIVEKIT_API_SECRET || DEV_LIVEKIT_API_SECRET;
  const devLivekit = devLivekitCredentialsError(env.NODE_ENV, livekitApiKey, livekitApiSecret);
  if (devLivekit) throw new Error(devLivekit);
  const loadThreshold = int(env, 'LOAD_THRESHOLD', 0.7, 0.05);
  if (loadThreshold > 1) throw new Error('LOAD_THRESHOLD must be between 0.05 and 1');
  return {
    agentName: env.AGENT_NAME || 'vap-agent',
    controlPlaneUrl: env.CONTROL_PLANE_URL || `http://127.0.0.1:${env.PORT || 8080}`,
    workerToken,
    livekitUrl: env.LIVEKIT_URL || 'ws://127.0.0.1:7880',
    livekitApiKey,
    livekitApiSecret,
    maxConcurrentCalls: int(env, 'MAX_CONCURRENT_CALLS', 10, 1),
    loadThreshold,
    // Off on machines shared with other work (the local stack, tests): there machine CPU says nothing about
    // this worker's room to take calls, and counting it would stop dispatch on a busy laptop.
    loadIncludesCpu: !['0', 'false', 'off', 'no'].includes((env.LOAD_INCLUDES_CPU ?? 'true').toLowerCase()),
    drainTimeoutMs: int(env, 'DRAIN_TIMEOUT_MS', 30 * 60 * 1000, 1000),
    healthHost: env.WORKER_HEALTH_HOST || '127.0.0.1',
    healthPort: int(env, 'WORKER_HEALTH_PORT', 8081, 0),
    metricsHost: env.METRICS_HOST || '127.0.0.1',
    metricsPort: int(env, 'WORKER_METRICS_PORT', int(env, 'METRICS_PORT', 9465, 0), 0),
    jobMaxSemiSpaceMb: int(env, 'JOB_MAX_SEMI_SPACE_MB', 4, 0),
    // A CPU-starved node (or a shared test machine) can need longer to load the VAD model in a new process.
    jobInitTimeoutMs: int(env, 'JOB_INIT_TIMEOUT_MS', 10_000, 1000),
    jobIdleProcesses: env.JOB_IDLE_PROCESSES ? int(env, 'JOB_IDLE_PROCESSES', 0, 0) : undefined,
    // The replacement waits for the call's first audio and for no call to be in its first seconds, at most this long.
    forkDeferMs: int(env, 'FORK_DEFER_MS', 6000, 0),
    // The job's start window (start-timeline.ts): a replacement's module loading stays out of it.
    forkQuietMs: int(env, 'FORK_QUIET_MS', 3000, 0),
    // ~40 MB and no CPU per idle process; off where no agent uses `transcriber: local`.
    prewarmLocalStt: !['0', 'false', 'off', 'no'].includes((env.PREWARM_LOCAL_STT ?? 'true').toLowerCase()),
  };
}

/**
 * The Node flags for job processes (agents-js forks them with the worker's execArgv). A call allocates
 * audio frames fast and briefly, and V8 answers by growing its young generation towards 16-32 MB
 * semi-spaces, which shows as a one-off RSS step of ~55 MB per call that never returns; a 4 MB cap kept
 * the RSS growth of a 30-minute call under 12 MB with no measurable latency cost (docs/benchmarks.md).
 * A flag already given wins.
 */
export function jobExecArgv(execArgv: readonly string[], maxSemiSpaceMb: number): string[] {
  if (maxSemiSpaceMb <= 0 || execArgv.some((a) => a.startsWith('--max-semi-space-size'))) return [...execArgv];
  return [...execArgv, `--max-semi-space-size=${maxSemiSpaceMb}`];
}
