// The queue of test runs: one job per run. Its own queue, so a long suite never holds up call analysis,
// webhooks or dialling, and AGENT_TEST_JOBS_PER_PROCESS bounds the runs one process works on.
import type { Job, QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import { executeRun } from './runner.ts';

export const RUN_QUEUE = 'agent-tests.run';

export function agentTestQueues(services: Services): QueueDef<never>[] {
  return [
    {
      name: RUN_QUEUE,
      // A run of 200 scenarios can take a while; a process that dies mid-run has its job retried, which
      // re-queues the scenarios left running (runner.ts, executeRun).
      options: { retryLimit: 3, retryDelay: 10, expireInSeconds: 6 * 3600 },
      work: { batchSize: 1, localConcurrency: services.config.AGENT_TEST_JOBS_PER_PROCESS },
      handler: async (jobs: Job<{ run_id: string }>[]) => {
        for (const job of jobs) await executeRun(services, job.data.run_id);
      },
    },
  ];
}
