// The queue of test runs: one job per run. Its own queue, so a long suite never holds up call analysis,
// webhooks or dialling, and AGENT_TEST_JOBS_PER_PROCESS bounds the runs one process works on. Jobs are sent in
// their organisation's group (queue.ts): AGENT_TEST_RUNS_PER_ORG of one organisation's runs at once, across
// processes, so its queued runs wait in the queue rather than in every process's slots.
import type { Job, QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import { executeRun } from './runner.ts';
import { RUN_QUEUE } from './queue.ts';

export { RUN_QUEUE };

export function agentTestQueues(services: Services): QueueDef<never>[] {
  return [
    {
      name: RUN_QUEUE,
      // A run of 200 scenarios can take a while; a process that dies mid-run has its job retried, which
      // re-queues the scenarios left running (runner.ts, executeRun).
      options: { retryLimit: 3, retryDelay: 10, expireInSeconds: 6 * 3600 },
      // A run that gave its slot back is re-sent for later (runner.ts): NOTIFY fires at its insert, before it is
      // due, so poll for it (the default with NOTIFY is 30 s).
      work: {
        batchSize: 1,
        localConcurrency: services.config.AGENT_TEST_JOBS_PER_PROCESS,
        groupConcurrency: services.config.AGENT_TEST_RUNS_PER_ORG,
        notifyPollingIntervalSeconds: 2,
      },
      handler: async (jobs: Job<{ run_id: string }>[]) => {
        for (const job of jobs) await executeRun(services, job.data.run_id);
      },
    },
  ];
}
