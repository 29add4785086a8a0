// Runs the floor agent (floor-agent.ts) as a worker, with the media worker's agent name and process pool
// options, so the control plane dispatches to it as it would to the media worker. `node floor-worker.ts start`.
import { fileURLToPath } from 'node:url';
import { type AgentServer, ServerOptions, cli } from '@livekit/agents';
import { loadWorkerConfig } from '../../media-worker/src/config.ts';
import { CpuSampler, combineLoad } from '../../media-worker/src/load.ts';
import { Heartbeat } from '../../media-worker/src/heartbeat.ts';
import { createLogger } from '../../shared/logger.ts';

const cfg = loadWorkerConfig();
const cpu = new CpuSampler();
// As the media worker: the control plane keeps standby agents only for workers that report, and releases a
// draining worker's standby agents.
const heartbeat = new Heartbeat({ baseUrl: cfg.controlPlaneUrl, token: cfg.workerToken, agentName: cfg.agentName, log: createLogger('floor-worker') });
process.once('SIGTERM', () => heartbeat.drain());
cli.runApp(
  new ServerOptions({
    agent: fileURLToPath(new URL('./floor-agent.ts', import.meta.url)),
    agentName: cfg.agentName,
    // The media worker's load: agents-js's default (machine CPU) would stop dispatch on a busy machine.
    loadFunc: async (worker: AgentServer) => {
      const load = combineLoad(cfg.loadIncludesCpu ? cpu.sample() : 0, worker.activeJobs.length, cfg.maxConcurrentCalls);
      heartbeat.tick(worker.id, worker.activeJobs.length, load);
      return load;
    },
    loadThreshold: cfg.loadThreshold,
    initializeProcessTimeout: cfg.jobInitTimeoutMs,
    ...(cfg.jobIdleProcesses !== undefined ? { numIdleProcesses: cfg.jobIdleProcesses } : {}),
    host: cfg.healthHost,
    port: cfg.healthPort,
    wsURL: cfg.livekitUrl,
    apiKey: cfg.livekitApiKey,
    apiSecret: cfg.livekitApiSecret,
  }),
);
