// Runs bench:realtime's floor agent (floor-agent.ts) as an agents-js worker: its own agent name, dispatched by the
// benchmark through LiveKit's API (no control plane), agents-js's default process pool. `node floor-worker.ts start`.
// LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET, FLOOR_AGENT_NAME and WORKER_HEALTH_PORT from the environment.
import { fileURLToPath } from 'node:url';
import { ServerOptions, cli } from '@livekit/agents';

cli.runApp(
  new ServerOptions({
    agent: fileURLToPath(new URL('./floor-agent.ts', import.meta.url)),
    agentName: process.env.FLOOR_AGENT_NAME!,
    // agents-js's default load (the machine's CPU) would refuse jobs on a busy shared machine; the media worker's
    // jobs are not refused either (its load counts calls: LOAD_INCLUDES_CPU=false).
    loadFunc: async () => 0,
    port: Number(process.env.WORKER_HEALTH_PORT),
    wsURL: process.env.LIVEKIT_URL!,
    apiKey: process.env.LIVEKIT_API_KEY!,
    apiSecret: process.env.LIVEKIT_API_SECRET!,
  }),
);
