import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AgentServer, ServerOptions, initializeLogger, type JobRequest } from '@livekit/agents';
import { createLogger } from '../../shared/logger.ts';
import {
  AcceptedJobs,
  DRAIN_AFTER_LAUNCHES_AGENTS_VERSION,
  DrainAfterLaunchesVersionError,
  assertDrainAfterLaunchesTarget,
  installDrainAfterLaunches,
  installLaunchTracking,
} from './drain-after-launches.ts';
import { installedAgentsVersion } from './session/agents-release.ts';
import { jobRequestFunc } from './job-request.ts';

const log = createLogger('drain-after-launches-test', 'silent');

/** agents-js's own AgentServer, never started: its drain announces the worker full, then joins its (no) processes. */
function server(): { server: AgentServer; full: () => boolean } {
  const s = new AgentServer(new ServerOptions({ agent: 'unused.ts', wsURL: 'ws://127.0.0.1:9', apiKey: 'k', apiSecret: 's' }));
  let full = false;
  s.event.on('worker_msg', (msg: { message?: { case?: string } }) => {
    if (msg.message?.case === 'updateWorker') full = true;
  });
  return { server: s, full: () => full };
}

/** A job offer as agents-js hands it to the requestFunc: accept() only answers (the launch follows apart). */
function offer(id: string) {
  const seen: string[] = [];
  const req = {
    id,
    job: { id, metadata: '' },
    room: { name: `call-${id}` },
    accept: async () => void seen.push('accept'),
    reject: async () => void seen.push('reject'),
  } as unknown as JobRequest;
  return { req, seen };
}

/** A pool whose launchJob waits for `launch(id)`, as agents-js's waits for a process to start. */
function pool() {
  const waiting = new Map<string, () => void>();
  class Pool {
    async launchJob(info: { job: { id: string } }): Promise<void> {
      await new Promise<void>((resolve) => waiting.set(info.job.id, resolve));
    }
  }
  return { Pool, launch: (id: string) => waiting.get(id)?.() };
}

beforeAll(() => initializeLogger({ pretty: false, level: 'error' }));

const undo: (() => void)[] = [];
afterEach(() => {
  for (const u of undo.splice(0).reverse()) u();
});

describe('drain after launches', () => {
  it('is pinned to the agents-js release it was checked against', () => {
    expect(installedAgentsVersion()).toBe(DRAIN_AFTER_LAUNCHES_AGENTS_VERSION);
    expect(() => assertDrainAfterLaunchesTarget('9.9.9')).toThrow(DrainAfterLaunchesVersionError);
  });

  it("waits for a job accepted before the drain to be launched before agents-js's drain starts, and refuses new offers meanwhile", async () => {
    const jobs = new AcceptedJobs();
    const waits: number[] = [];
    const { Pool, launch } = pool();
    undo.push(installLaunchTracking(Pool, jobs));
    undo.push(installDrainAfterLaunches(AgentServer, jobs, { maxWaitMs: 600_000, onWait: (n) => waits.push(n) }));
    const requestFunc = jobRequestFunc({ inboundRoomStatus: async () => ({ answered_elsewhere: false }) } as never, log, jobs);
    const first = offer('AJ_1');
    await requestFunc(first.req);
    expect(first.seen).toEqual(['accept']);
    expect(jobs.pending).toBe(1);
    // Its assignment came: the launch waits for a process.
    const launching = new Pool().launchJob({ job: { id: 'AJ_1' } });

    const { server: s, full } = server();
    let drained = false;
    const draining = s.drain().then(() => (drained = true));
    await new Promise((r) => setImmediate(r));
    // agents-js's drain has not started: it would close the process the accepted job is waiting for.
    expect(full()).toBe(false);
    expect(drained).toBe(false);
    expect(waits).toEqual([1]);

    // A new offer meanwhile goes to another worker.
    const second = offer('AJ_2');
    await requestFunc(second.req);
    expect(second.seen).toEqual(['reject']);

    launch('AJ_1');
    await launching;
    await draining;
    expect(full()).toBe(true);
    expect(jobs.pending).toBe(0);
  });

  it('drains at once when no job is being launched, and after maxWaitMs when a launch never comes', async () => {
    const jobs = new AcceptedJobs();
    const timeouts: number[] = [];
    undo.push(installDrainAfterLaunches(AgentServer, jobs, { maxWaitMs: 50, onTimeout: (n) => timeouts.push(n) }));
    const a = server();
    await a.server.drain();
    expect(a.full()).toBe(true);
    expect(timeouts).toEqual([]);

    // An assignment that never comes.
    jobs.accepted('AJ_lost');
    const b = server();
    await b.server.drain();
    expect(b.full()).toBe(true);
    expect(timeouts).toEqual([1]);
  });

  it('settles a launch that failed, and forgets a job whose launch never came', async () => {
    const jobs = new AcceptedJobs({ forgetAfterMs: 20 });
    class Failing {
      async launchJob(_info: { job: { id: string } }): Promise<void> {
        throw new Error('no process');
      }
    }
    undo.push(installLaunchTracking(Failing, jobs));
    jobs.accepted('AJ_1');
    await expect(new Failing().launchJob({ job: { id: 'AJ_1' } })).rejects.toThrow('no process');
    expect(jobs.pending).toBe(0);
    jobs.accepted('AJ_2');
    expect(await jobs.launched(600_000)).toBe(true);
    expect(jobs.pending).toBe(0);
  });
});
