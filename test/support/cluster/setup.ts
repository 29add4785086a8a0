// Everything a fault run needs around the cluster: the speech stand-ins, a webhook receiver, the cluster itself,
// an organisation with its key, the agent, and a webhook endpoint for the call events. The e2e files and
// `npm run bench:faults` start it the same way.
import { createSql } from '../../../control-plane/src/db/connect.ts';
import { createOrgWithKey } from '../../../control-plane/src/modules/workspace/orgs.ts';
import { apiClient } from '../e2e.ts';
import { Receiver } from '../webhook-receiver.ts';
import { startCluster, type Cluster } from './cluster.ts';
import { createClusterAgent, startVoices } from './callers.ts';
import type { FaultEnv } from './fault-run.ts';

export const CALL_EVENTS = ['call.started', 'call.ended', 'call.failed'];

/** Settings of the runs: the reaper and the job supervisor act within seconds, so a run sees them act. */
export const FAULT_RUN_ENV: Record<string, string> = {
  SSRF_ALLOWLIST: '127.0.0.1,localhost',
  REAP_DELAY_SECONDS: '1',
  WORKER_SILENCE_SECONDS: '15',
  DISPATCH_TIMEOUT_SECONDS: '30',
  JOBS_SUPERVISE_INTERVAL_SECONDS: '5',
  // The post-call analysis is work the runs do not measure: off, call.ended goes at once.
  ANALYSIS_MODE: 'off',
  JOB_INIT_TIMEOUT_MS: '60000',
  // A loaded machine can take a while to start an agent's job: a phone call rings until then.
  SIP_RINGING_TIMEOUT_SECONDS: '90',
};

export type FaultSetup = FaultEnv & { stop(): Promise<void> };

export async function startFaultEnv(opts: { sip?: boolean; log?: (line: string) => void } = {}): Promise<FaultSetup> {
  const voices = await startVoices();
  const receiver = await new Receiver().start();
  let cluster: Cluster | null = null;
  const stop = async () => {
    await cluster?.stop();
    await receiver.close();
    await voices.close();
  };
  try {
    cluster = await startCluster({ sip: opts.sip ?? false, env: { ...voices.env, ...FAULT_RUN_ENV }, ...(opts.log ? { onProgress: opts.log } : {}) });
    const sql = createSql(cluster.postgres.url, { max: 1 });
    const org = await createOrgWithKey(sql, 'faults');
    await sql.end();
    const c = cluster;
    const api = apiClient(
      () => c.apiUrl,
      () => org.api_key,
    );
    const agentId = await createClusterAgent(api, voices.llm.url);
    const hook = await api('POST', '/v1/webhooks', { name: 'faults', url: receiver.url('/hooks'), events: CALL_EVENTS });
    if (hook.status !== 201) throw new Error(`webhook: ${hook.status} ${JSON.stringify(hook.body)}`);
    return { cluster, api, agentId, voices, receiver, ...(opts.log ? { log: opts.log } : {}), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
