// Job processes share Node's compile cache (V8's code for each module, on disk). Every job process compiles the
// same modules when it is forked, beside the live calls (a call's replacement loads while the next call starts):
// importing the job module took 2.4 s of user CPU without the cache and 1.9 s with it on a 2-core machine.
//
// Node writes the cache when a process exits, with the code of every function compiled by then, the call's own
// included. So the first job processes after the cache was emptied (a new machine or pod) spend a second or more
// at their exit writing it, and their call is counted until they are gone. Writing it at the end of the prewarm
// instead (module.flushCompileCache) was tried and not kept: the cache then held only the start-up's code, Node
// writes a module's entry once per process, and every later call compiled its own path lazily as it started
// (docs/decisions/029-first-audio.md).
import os from 'node:os';
import path from 'node:path';

/**
 * Gives the processes forked from here the shared cache: under the temp folder unless the operator set
 * NODE_COMPILE_CACHE (Node's own; NODE_DISABLE_COMPILE_CACHE turns it off). Job processes inherit the environment.
 */
export function shareCompileCache(env: NodeJS.ProcessEnv = process.env): string {
  return (env.NODE_COMPILE_CACHE ??= path.join(os.tmpdir(), 'vap-node-compile-cache'));
}
