// Tells the control plane that this worker is registered with LiveKit and taking calls, so /health/ready can
// report whether any worker is there (LiveKit has no API that lists agent workers). Driven by the agents
// server's load updates, which run only while the worker's connection to LiveKit is open.
import { InternalApiClient } from '../../shared/internal-api.ts';
import type { Logger } from '../../shared/logger.ts';

export const HEARTBEAT_INTERVAL_MS = 10_000;

export class Heartbeat {
  #last = 0;
  #inFlight = false;
  #draining = false;
  #workerId: string | null = null;
  #drainPending = false;
  #activeCalls = 0;
  #load = 0;
  readonly #api: InternalApiClient;
  readonly #agentName: string;
  readonly #log: Logger;

  constructor(opts: { baseUrl: string; token: string; agentName: string; log: Logger }) {
    this.#api = new InternalApiClient({ baseUrl: opts.baseUrl, token: opts.token, timeoutMs: 5_000 });
    this.#agentName = opts.agentName;
    this.#log = opts.log;
  }

  drain(): void {
    this.#draining = true;
    this.#last = 0;
    // At once, not at the next load update: the control plane releases this worker's standby agents on it, and
    // the drain waits for them until then.
    // (One in flight carries the old state: the drain's follows it.)
    this.#drainPending = true;
    if (this.#workerId && !this.#inFlight) this.tick(this.#workerId, this.#activeCalls, this.#load);
  }

  /** Called on every load update; sends at most one heartbeat per interval, never blocks or throws. */
  tick(workerId: string, activeCalls: number, load: number, now = Date.now()): void {
    if (workerId !== 'unregistered') [this.#workerId, this.#activeCalls, this.#load] = [workerId, activeCalls, load];
    if (workerId === 'unregistered' || this.#inFlight || now - this.#last < HEARTBEAT_INTERVAL_MS) return;
    this.#last = now;
    this.#inFlight = true;
    if (this.#draining) this.#drainPending = false;
    this.#api
      .request('POST', `/workers/${encodeURIComponent(workerId)}/heartbeat`, { agent_name: this.#agentName, active_calls: activeCalls, load, draining: this.#draining })
      .catch((err: unknown) => this.#log.warn({ err: (err as Error).message }, 'worker heartbeat failed'))
      .finally(() => {
        this.#inFlight = false;
        if (this.#draining && this.#drainPending && this.#workerId) {
          this.#last = 0;
          this.tick(this.#workerId, this.#activeCalls, this.#load);
        }
      });
  }
}
