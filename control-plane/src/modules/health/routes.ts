import { defineRoute, reply } from '../../http/route.ts';
import type { Services } from '../../services.ts';
import { Health, Readiness } from '../../../../schemas/health.ts';
import { ping } from './queries.ts';
import { liveWorkers } from '../workers/queries.ts';

type Check = { status: 'ok' | 'error' | 'disabled'; required: boolean; latency_ms?: number; error?: string; workers?: number };

/** Runs one check within the readiness timeout: a hung dependency is an error, never a hung probe. */
async function timed(fn: () => Promise<unknown>, timeoutMs: number): Promise<{ status: 'ok' | 'error'; latency_ms?: number; error?: string }> {
  const start = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([fn(), new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)))]);
    return { status: 'ok', latency_ms: Math.round((performance.now() - start) * 10) / 10 };
  } catch (err) {
    return { status: 'error', error: (err as Error).message };
  } finally {
    clearTimeout(timer);
  }
}

type Readiness = { ok: boolean; checks: Record<string, Check> };

async function checkReadiness(services: Services): Promise<Readiness> {
  const { config } = services;
  const required = new Set(config.READY_REQUIRED_CHECKS.split(',').filter(Boolean));
  const t = config.READY_CHECK_TIMEOUT_MS;
  const boss = services.boss;
  // The probe names a room that never exists: the cheapest authenticated call of the RoomService API.
  const [database, jobs, livekit, workers] = await Promise.all([
    timed(() => ping(services.sql), t),
    boss ? timed(() => boss.getQueues(), t) : Promise.resolve({ status: 'disabled' as const }),
    timed(() => services.livekit.rooms.listRooms(['vap-readiness-probe']), t),
    (async (): Promise<Omit<Check, 'required'>> => {
      let n = 0;
      const r = await timed(async () => (n = await liveWorkers(services.sql, config.AGENT_NAME, config.WORKER_HEARTBEAT_FRESH_SECONDS)), t);
      if (r.status === 'error') return r;
      return n > 0 ? { ...r, workers: n } : { status: 'error', workers: 0, error: `no media worker registered as "${config.AGENT_NAME}" in the last ${config.WORKER_HEARTBEAT_FRESH_SECONDS} s` };
    })(),
  ]);
  const checks: Record<string, Check> = {};
  for (const [name, c] of Object.entries({ database, jobs, livekit, workers })) checks[name] = { ...c, required: required.has(name) };
  return { ok: Object.values(checks).every((c) => !c.required || c.status !== 'error'), checks };
}

// The probe needs no authentication, so a flood of it must not become a flood of database queries: requests
// share the round of checks in flight, and its result for READY_CACHE_MS after it ends.
const lastRound = new WeakMap<Services, { ended: number | null; result: Promise<Readiness> }>();
function readiness(services: Services): Promise<Readiness> {
  const last = lastRound.get(services);
  if (last && (last.ended === null || performance.now() - last.ended < services.config.READY_CACHE_MS)) return last.result;
  const round: { ended: number | null; result: Promise<Readiness> } = { ended: null, result: checkReadiness(services) };
  lastRound.set(services, round);
  void round.result.finally(() => (round.ended = performance.now())).catch(() => {});
  return round.result;
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
    description:
      'Checks each dependency and reports it: `database`, `jobs` (the job queue), `livekit` (the LiveKit server API) and ' +
      '`workers` (media workers registered under this deployment\'s agent name, from their heartbeats). Answers 503 when a ' +
      'check listed in `READY_REQUIRED_CHECKS` (default `database,jobs`) fails; the others are reported with `required: false`. ' +
      'Concurrent requests share one round of checks, and its result is reused for `READY_CACHE_MS` (1 s by default).',
    responses: { 200: { description: 'Ready', schema: Readiness }, 503: { description: 'Not ready', schema: Readiness } },
    handler: async ({ services }) => {
      const { ok, checks } = await readiness(services);
      return reply(ok ? 200 : 503, { status: ok ? 'ok' : 'error', checks });
    },
  }),
];
