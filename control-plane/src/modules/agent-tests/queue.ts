// The run queue's name and its one way in: every run job is sent in its organisation's pg-boss group, so the
// queue's group concurrency (AGENT_TEST_RUNS_PER_ORG, jobs.ts) bounds the runs one organisation has in progress
// across all processes, and its queued runs cannot take every process's slots from other organisations.
import type { SendOptions } from 'pg-boss';
import { sendInTx } from '../../jobs/boss.ts';
import type { Db } from '../../db/types.ts';
import type { Services } from '../../services.ts';

export const RUN_QUEUE = 'agent-tests.run';

/** Queues a run's job in the caller's transaction (a new run), or now (`db` null: a run giving its slot back). */
export async function enqueueRun(services: Pick<Services, 'boss'>, db: Db | null, run: { id: string; org_id: string }, options: SendOptions = {}): Promise<void> {
  const opts: SendOptions = { singletonKey: run.id, group: { id: run.org_id }, ...options };
  if (db) await sendInTx(services.boss, db, RUN_QUEUE, { run_id: run.id }, opts);
  else await services.boss.send(RUN_QUEUE, { run_id: run.id }, opts);
}
