// Hostile test (docs/security.md, issue 50): one organisation's unanswered inbound call whose check plays a long
// voicemail message must not hold every other organisation's unanswered calls behind it. The inbound-watch queue's
// own definition (work options and handler) runs on the real pg-boss, on a queue of its own name; the check of
// the first call blocks (as a message being played does) until the second call's check has run. With pg-boss's
// default of one job at a time the second never runs and the test fails (by its timeout).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestPlatform, type TestPlatform } from '../support/platform.ts';
import { inboundWatchQueues, type WatchJob, type WatchOutcome } from '../../control-plane/src/modules/phone-numbers/unanswered.ts';
import { registerQueue } from '../../control-plane/src/jobs/boss.ts';

let tp: TestPlatform;
beforeAll(async () => {
  tp = await startTestPlatform();
});
afterAll(() => tp?.close());

it("runs another organisation's unanswered-call check while one plays a long voicemail message", { timeout: 90_000 }, async () => {
  const services = tp.platform.services;
  let slowStarted!: () => void;
  const slowRunning = new Promise<void>((r) => (slowStarted = r));
  let otherDone!: () => void;
  const otherHandled = new Promise<void>((r) => (otherDone = r));
  const seen: string[] = [];
  const watch = async (job: WatchJob): Promise<WatchOutcome> => {
    seen.push(job.room);
    if (job.room === 'inbound-slow') {
      slowStarted();
      await otherHandled; // the voicemail message plays for as long as the other call's check takes to come
      return 'unavailable';
    }
    otherDone();
    return 'unavailable';
  };
  const [def] = inboundWatchQueues(services, watch);
  const name = `inbound-watch-test-${randomUUID()}`;
  await registerQueue(services.boss, { ...def!, name } as never);
  expect(def!.work?.localConcurrency).toBeGreaterThan(1);

  await services.boss.send(name, { room: 'inbound-slow', stage: 'primary' });
  await slowRunning;
  await services.boss.send(name, { room: 'inbound-other', stage: 'primary' });
  await otherHandled;
  expect(seen).toEqual(['inbound-slow', 'inbound-other']);
  await services.boss.offWork(name);
});
