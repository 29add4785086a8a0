// A job process's heap, collected in full while it waits for its call. Prewarm (the modules, the VAD, the
// recogniser) and a standby agent's join leave garbage in the old generation, and the heap near the size at which
// V8 starts its next major collection, so nearly every call ran one in its first second, marking that garbage
// too: up to ~100 ms of incremental marking on the job's loop, single steps up to 37 ms and final pauses up to
// 44 ms, as the greeting starts (bench:firstaudio with the job processes under --trace-gc; docs/decisions/029-first-audio.md). Collected while the job waits, the call starts on a compact heap: V8 still collects once early
// in the call (it sets the next limit a few MB over what survives an idle collection), but in steps of a few ms.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let collect: (() => void) | null | undefined;

/**
 * Runs a full, synchronous collection of this process's heap; false where no collector could be had. The process
 * is not started with --expose-gc (agents-js forks it): the flag set at run time gives one to a new context, and
 * the job's own context keeps no `gc` global.
 */
export function settleHeap(): boolean {
  if (collect === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      collect = runInNewContext('gc') as () => void;
    } catch {
      collect = null;
    }
  }
  if (typeof collect !== 'function') return false;
  collect();
  return true;
}
