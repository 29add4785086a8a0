// Memory over a long call. agents-js reads its input audio with `readStream(stream, signal)`
// (utils.ts), which calls `ThrowsPromise.race([reader.read(), abortPromise])` once per frame against one
// abort promise that lives as long as the session. `Promise.race` adds a reaction to every input promise
// and never removes it, so the never-settling abort promise collects one reaction per frame, each holding
// the race's result: every input frame of the call stays reachable (about 200 KB/s per session at 48 kHz;
// the same Node issue as nodejs/node#17469).
//
// The fix: replace `ThrowsPromise.race` (a plain static of a class, shared by the ESM and CJS builds of
// agents) with a race that subscribes to each input promise once, through a small subscriber set, and
// unsubscribes when the race settles. Same semantics as Promise.race; nothing retained after settling.
//
// Upstream: livekit/agents-js issue #2046 (readStream retains every chunk) and its fix, pull request #2047
// (a per-iteration abort promise in readStream), open at the time of writing; the same pattern in plugins is
// #1950/#1957 and #2053/#2544. No public API reaches the STT input pump, so the patch stays until a release
// carries the fix. It is installed in one place (the CallSession constructor, before its AgentSession
// exists), and only on the agents-js release it was checked against: any other version fails loudly, so an
// upgrade makes someone check whether the fix is upstream (then delete this file) or still needed (then
// re-check utils.js's readStream and bump PATCHED_AGENTS_VERSION). The unit tests fail on a mismatch too.
import { ThrowsPromise } from '@livekit/throws-transformer/throws';
import { PinnedReleaseError, installedAgentsVersion } from './agents-release.ts';

/** The @livekit/agents release whose readStream (dist/utils.js) this patch was checked against. */
export const PATCHED_AGENTS_VERSION = '1.9.0';

export class RaceFixVersionError extends PinnedReleaseError {
  constructor(installed: string) {
    super('race-fix.ts', PATCHED_AGENTS_VERSION, installed, 'readStream still races reads against one long-lived abort promise (agents-js #2046/#2047)', 'PATCHED_AGENTS_VERSION');
  }
}

/** Throws RaceFixVersionError unless the installed agents-js is the patched release. */
export function assertRaceFixTarget(version = installedAgentsVersion()): void {
  if (version !== PATCHED_AGENTS_VERSION) throw new RaceFixVersionError(version);
}

interface Subscriber {
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}
interface Watch {
  settled: boolean;
  subscribers: Set<Subscriber>;
}

const watches = new WeakMap<object, Watch>();

const isThenable = (v: unknown): v is PromiseLike<unknown> =>
  (typeof v === 'object' || typeof v === 'function') && v !== null && typeof (v as PromiseLike<unknown>).then === 'function';

function watch(p: PromiseLike<unknown>): Watch {
  const w = watches.get(p);
  if (w) return w;
  const created: Watch = { settled: false, subscribers: new Set() };
  watches.set(p, created);
  p.then(
    (v) => {
      created.settled = true;
      for (const s of created.subscribers) s.resolve(v);
      created.subscribers.clear();
    },
    (e: unknown) => {
      created.settled = true;
      for (const s of created.subscribers) s.reject(e);
      created.subscribers.clear();
    },
  );
  return created;
}

export function leakFreeRace<T>(values: Iterable<T>): Promise<Awaited<T>> {
  return new Promise<Awaited<T>>((resolve, reject) => {
    const joined: Watch[] = [];
    const self: Subscriber = {
      resolve: (v) => {
        for (const w of joined) w.subscribers.delete(self);
        resolve(v as Awaited<T>);
      },
      reject: (e) => {
        for (const w of joined) w.subscribers.delete(self);
        reject(e);
      },
    };
    for (const v of values) {
      if (!isThenable(v)) {
        // As Promise.race: a plain value wins on the next tick unless an earlier entry already won.
        Promise.resolve(v).then(self.resolve, self.reject);
        continue;
      }
      const w = watch(v);
      if (w.settled) {
        // Settled already: a one-off reaction runs at once and is dropped, so it retains nothing.
        v.then(self.resolve, self.reject);
      } else {
        w.subscribers.add(self);
        joined.push(w);
      }
    }
  });
}

let installed = false;

/** Installs the patch (once per process; CallSession calls it before its AgentSession exists). */
export function installRaceFix(): void {
  if (installed) return;
  assertRaceFixTarget();
  installed = true;
  (ThrowsPromise as unknown as { race: typeof leakFreeRace }).race = leakFreeRace;
}

export const raceFixInstalled = () => installed;
