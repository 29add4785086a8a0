import { defineRoute, reply } from '../../http/route.ts';
import { Health, Readiness } from '../../../../schemas/health.ts';

async function timed(fn: () => Promise<unknown>) {
  const start = performance.now();
  try {
    await fn();
    return { status: 'ok' as const, latency_ms: Math.round((performance.now() - start) * 10) / 10 };
  } catch (err) {
    return { status: 'error' as const, error: (err as Error).message };
  }
}

export const healthRoutes = [
  defineRoute({
    method: 'get',
    path: '/health',
    root: true,
    auth: 'none',
    operationId: 'health',
    tag: 'health',
    summary: 'Liveness',
    description: 'Answers 200 while the process serves HTTP. No dependencies are checked.',
    responses: { 200: { description: 'Alive', schema: Health } },
    handler: async () => ({ status: 'ok' }),
  }),
  defineRoute({
    method: 'get',
    path: '/health/ready',
    root: true,
    auth: 'none',
    operationId: 'readiness',
    tag: 'health',
    summary: 'Readiness',
    description: 'Checks the database and the job queue. 503 when either fails.',
    responses: { 200: { description: 'Ready', schema: Readiness }, 503: { description: 'Not ready', schema: Readiness } },
    handler: async ({ services }) => {
      const database = await timed(() => services.sql`select 1`);
      const boss = services.boss;
      const jobs = boss ? await timed(() => boss.getQueues()) : { status: 'disabled' as const };
      const ok = database.status === 'ok' && jobs.status !== 'error';
      return reply(ok ? 200 : 503, { status: ok ? 'ok' : 'error', checks: { database, jobs } });
    },
  }),
];
