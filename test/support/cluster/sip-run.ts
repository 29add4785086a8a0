// The callers of a run with phones: two phone callers and a web caller in flight, new calls alternating between
// phone and web. The number is bought from the simulated carrier for the run's agent.
import type { Dialer } from './callers.ts';
import { webDialer, type FaultEnv, type RunOptions } from './fault-run.ts';
import { SipCaller, buyNumber } from './sip-caller.ts';

const numbers = new WeakMap<FaultEnv, Promise<string>>();

export async function phoneRun(env: FaultEnv): Promise<RunOptions> {
  const bridge = env.cluster.sipAddress;
  if (!bridge) throw new Error('the cluster runs no SIP bridge');
  if (!numbers.has(env)) numbers.set(env, buyNumber(env.api, env.agentId));
  const number = await numbers.get(env)!;
  const phone: Dialer = () => SipCaller.dial(env.api, bridge, number, env.voices.question);
  const web = webDialer(env);
  return { inFlight: [phone, phone, web], newCalls: [phone, web] };
}
