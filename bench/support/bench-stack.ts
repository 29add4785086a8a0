// How the voice benches start their stack and make their agent: the stack on free ports with its own Redis, the
// control plane (in development mode, tenant URLs on this machine allowed) and the worker, progress on stderr; a
// stand-in model on the fake LLM and an agent on it.
import { startStack, type RunningStack, type StackOptions } from '../../scripts/stack/supervisor.ts';
import { api } from './room-call.ts';

/** `opts` over the benches' defaults: no SIP, a worker, 'warn' logs; `opts.env` is added to the benches' env. */
export function startBenchStack(opts: Omit<StackOptions, 'freePorts' | 'redis' | 'controlPlane' | 'onProgress'> = {}): Promise<RunningStack> {
  return startStack({
    freePorts: true,
    redis: 'own',
    sip: false,
    controlPlane: true,
    worker: true,
    logLevel: 'warn',
    ...opts,
    env: { NODE_ENV: 'development', SSRF_ALLOWLIST: '127.0.0.1,localhost', ...opts.env },
    onProgress: (m) => process.stderr.write(`${m}\n`),
  });
}

/** A model on the fake LLM at `llmUrl` that answers in one short sentence; its id. */
export async function createBenchModel(stack: RunningStack, key: string, llmUrl: string): Promise<string> {
  const model = await api(stack, key, 'POST', '/v1/models', { name: 'stand-in', model: 'fake-model', base_url: llmUrl, system_prompt: 'Answer in one short sentence.' });
  if (model.status !== 201) throw new Error(`POST /v1/models answered ${model.status}: ${JSON.stringify(model.body)}`);
  return model.body.id as string;
}

/** POST /v1/agents with `body`; the agent's id. */
export async function createBenchAgent(stack: RunningStack, key: string, body: Record<string, unknown>): Promise<string> {
  const agent = await api(stack, key, 'POST', '/v1/agents', body);
  if (agent.status !== 201) throw new Error(`POST /v1/agents answered ${agent.status}: ${JSON.stringify(agent.body)}`);
  return agent.body.id as string;
}
