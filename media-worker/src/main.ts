// Worker entry: `node media-worker/src/main.ts start` (production: drains on SIGTERM) or `dev`.
// Registers with LiveKit under AGENT_NAME (explicit dispatch only), reports load, serves /metrics and
// /health on its own listener.
import { fileURLToPath } from 'node:url';
import { AgentServer, ServerOptions, cli } from '@livekit/agents';
import { createLogger } from '../../shared/logger.ts';
import { jobExecArgv, loadWorkerConfig } from './config.ts';
import { CpuSampler, combineLoad } from './load.ts';
import { WorkerMetrics, startMetricsServer } from './metrics.ts';
import { Heartbeat } from './heartbeat.ts';
import { assertRaceFixTarget } from './session/race-fix.ts';
import { assertPromptPauseTarget } from './session/prompt-pause.ts';
import { assertRoomSessionHostTarget } from './session/room-session-host.ts';
import { assertEarlyTrackTarget } from './session/early-track.ts';
import { assertReleaseSpeechTarget } from './session/release-speech.ts';
import { assertFfiLogsTarget } from '../../shared/ffi-logs.ts';
import { assertForkAfterGreetingTarget, installForkAfterGreeting, loadProcPool } from './fork-after-greeting.ts';
import { jobRequestFunc } from './job-request.ts';
import { AcceptedJobs, assertDrainAfterLaunchesTarget, installDrainAfterLaunches, installLaunchTracking } from './drain-after-launches.ts';
import { InternalApiClient } from '../../shared/internal-api.ts';
import { shareCompileCache } from './compile-cache.ts';

const log = createLogger('media-worker');
const cfg = loadWorkerConfig();
// Refuse to start on an agents-js release the patches were not checked against (race-fix.ts, prompt-pause.ts),
// rather than fail each call in its job process.
assertRaceFixTarget();
assertPromptPauseTarget();
assertRoomSessionHostTarget();
assertEarlyTrackTarget();
assertReleaseSpeechTarget();
assertFfiLogsTarget();
assertForkAfterGreetingTarget();
assertDrainAfterLaunchesTarget();

let server: AgentServer | null = null;
let lastLoad = 0;
const cpu = new CpuSampler();
const heartbeat = new Heartbeat({ baseUrl: cfg.controlPlaneUrl, token: cfg.workerToken, agentName: cfg.agentName, log });

const metrics: WorkerMetrics = new WorkerMetrics({ activeCalls: () => activeCalls(), load: () => lastLoad, defaultMetrics: true });
/** Jobs serving a call: standby agents still waiting for one are not calls (voice_standby_agents counts them). */
function activeCalls(): number {
  const jobs = server?.activeJobs ?? [];
  // A standby job that ended without saying so is forgotten with its job.
  for (const id of metrics.standbyJobs) if (!jobs.some((j) => j.job.id === id)) metrics.standbyJobs.delete(id);
  return jobs.length - metrics.standbyJobs.size;
}
// A call's replacement job process is forked once its greeting has played and no call is in its first seconds
// (fork-after-greeting.ts).
const procPool = await loadProcPool();
const forks = installForkAfterGreeting(procPool, { maxDeferMs: cfg.forkDeferMs, quietMs: cfg.forkQuietMs });
metrics.onFirstAudio = (jobId) => forks.release(jobId);
metrics.onCallStarting = (jobId) => forks.callStarting(jobId);
const metricsServer = await startMetricsServer(metrics, cfg.metricsHost, cfg.metricsPort);
const port = (metricsServer.address() as { port: number }).port;
// Job processes inherit the environment and push their observations here.
process.env.VAP_METRICS_PUSH_URL = `http://127.0.0.1:${port}/observe`;
log.info({ host: cfg.metricsHost, port }, 'metrics listening');

// LiveKit's key/secret/url come from LIVEKIT_* env, read by the CLI.
process.env.LIVEKIT_URL ??= cfg.livekitUrl;
process.env.LIVEKIT_API_KEY ??= cfg.livekitApiKey;
process.env.LIVEKIT_API_SECRET ??= cfg.livekitApiSecret;

// Job processes reuse V8's compiled code for the modules every one of them loads (compile-cache.ts).
shareCompileCache();

// Job processes are forked with this process's execArgv (agents-js ipc/job_proc_executor).
process.execArgv.splice(0, process.execArgv.length, ...jobExecArgv(process.execArgv, cfg.jobMaxSemiSpaceMb));

// A drain first launches the jobs already accepted (drain-after-launches.ts): agents-js's assignment wait (7.5 s)
// and a process's start, at most.
const accepted = new AcceptedJobs();
installLaunchTracking(procPool, accepted);
installDrainAfterLaunches(AgentServer, accepted, {
  maxWaitMs: 7_500 + cfg.jobInitTimeoutMs,
  onWait: (pending) => log.info({ pending }, 'draining: launching the jobs accepted before the drain'),
  onTimeout: (pending) => log.warn({ pending }, 'draining: accepted jobs not launched in time; draining anyway'),
});
process.once('SIGTERM', () => heartbeat.drain());
process.once('SIGTERM', () => log.info({ active_calls: server?.activeJobs.length ?? 0 }, 'draining: finishing calls in progress, taking no new ones'));

cli.runApp(
  new ServerOptions({
    agent: fileURLToPath(new URL('./worker.ts', import.meta.url)),
    agentName: cfg.agentName,
    // A number's rule's job for a call a standby agent already has is rejected before it takes a process.
    requestFunc: jobRequestFunc(new InternalApiClient({ baseUrl: cfg.controlPlaneUrl, token: cfg.workerToken }), log, accepted),
    loadFunc: async (worker: AgentServer) => {
      server = worker;
      lastLoad = combineLoad(cfg.loadIncludesCpu ? cpu.sample() : 0, worker.activeJobs.length, cfg.maxConcurrentCalls);
      heartbeat.tick(worker.id, activeCalls(), lastLoad);
      return lastLoad;
    },
    loadThreshold: cfg.loadThreshold,
    drainTimeout: cfg.drainTimeoutMs,
    initializeProcessTimeout: cfg.jobInitTimeoutMs,
    ...(cfg.jobIdleProcesses !== undefined ? { numIdleProcesses: cfg.jobIdleProcesses } : {}),
    host: cfg.healthHost,
    port: cfg.healthPort,
    wsURL: cfg.livekitUrl,
    apiKey: cfg.livekitApiKey,
    apiSecret: cfg.livekitApiSecret,
  }),
);
