// What keeps arriving while a fault strikes: new web calls, one after another (each is dialled, must be greeted,
// then hangs up), and API requests through the load balancer. Times are in seconds from the fault (negative:
// before it), so a run reads as a timeline.
import { nowMs } from '../rtc-client.ts';
import type { Caller, Dialer } from './callers.ts';

type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

export interface CallProbe {
  kind: 'web' | 'sip' | null;
  call_id: string | null;
  /** When it was dialled (nowMs). */
  at: number;
  /** Greeted: the first message was heard. */
  served: boolean;
  /** Dial to greeting, ms. */
  greeting_ms: number | null;
  error?: string;
}

export interface ApiProbe {
  at: number;
  status: number;
}

const sec = (t: number, from: number) => Math.round((t - from) / 100) / 10;

export class Probes {
  readonly calls: CallProbe[] = [];
  readonly api: ApiProbe[] = [];
  #running = true;
  #loops: Promise<void>[] = [];
  readonly #callers = new Set<Caller>();

  private readonly client: Api;
  /** The new calls' dialers, taken in turn. */
  private readonly dialers: Dialer[];
  private readonly opts: { greetingTimeoutMs?: number; gapMs?: number };

  constructor(client: Api, dialers: Dialer[], opts: { greetingTimeoutMs?: number; gapMs?: number } = {}) {
    this.client = client;
    this.dialers = dialers;
    this.opts = opts;
  }

  start(): this {
    this.#loops.push(this.#callLoop(), this.#apiLoop());
    return this;
  }

  async #callLoop(): Promise<void> {
    while (this.#running) {
      const started = nowMs();
      const probe: CallProbe = { kind: null, call_id: null, at: started, served: false, greeting_ms: null };
      const dial = this.dialers[this.calls.length % this.dialers.length]!;
      this.calls.push(probe);
      let caller: Caller | null = null;
      try {
        caller = await dial();
        this.#callers.add(caller);
        probe.kind = caller.kind;
        if (caller.kind === 'web') probe.call_id = caller.id;
        const greeted = await caller.greeting(this.opts.greetingTimeoutMs ?? 25_000);
        probe.call_id = caller.id;
        probe.served = true;
        probe.greeting_ms = Math.round(greeted - started);
      } catch (err) {
        probe.error = (err as Error).message.slice(0, 200);
      } finally {
        if (caller) {
          await caller.leave();
          this.#callers.delete(caller);
          // A phone call's record is found once answered: one that failed may still have one.
          if (caller.id) probe.call_id = caller.id;
        }
      }
      await new Promise((r) => setTimeout(r, this.opts.gapMs ?? 1000));
    }
  }

  async #apiLoop(): Promise<void> {
    while (this.#running) {
      const at = nowMs();
      let status = 0;
      try {
        status = (await this.client('GET', '/v1/agents?limit=1')).status;
      } catch {
        status = 0; // no answer at all (connection refused or reset)
      }
      this.api.push({ at, status });
      await new Promise((r) => setTimeout(r, 500));
    }
  }

  async stop(): Promise<void> {
    this.#running = false;
    await Promise.all(this.#loops);
    await Promise.all([...this.#callers].map((c) => c.leave()));
  }

  /** Seconds from the fault to the greeting of the first call dialled after it, when every later call was served too. */
  recoveredAfterS(faultAt: number): number | null {
    const after = this.calls.filter((c) => c.at >= faultAt && (c.served || c.error));
    let firstOfRun: CallProbe | null = null;
    for (const c of after) {
      if (!c.served) firstOfRun = null;
      else firstOfRun ??= c;
    }
    if (!firstOfRun) return null;
    return sec(firstOfRun.at + firstOfRun.greeting_ms!, faultAt);
  }

  summary(faultAt: number) {
    const after = this.calls.filter((c) => c.at >= faultAt);
    const apiAfter = this.api.filter((a) => a.at >= faultAt);
    const apiFailed = apiAfter.filter((a) => a.status !== 200);
    return {
      calls_before_fault: this.calls.length - after.length,
      calls_after_fault: after.length,
      calls_after_fault_served: after.filter((c) => c.served).length,
      calls_after_fault_failed: after
        .filter((c) => !c.served)
        .map((c) => ({ at_s: sec(c.at, faultAt), kind: c.kind, call_id: c.call_id, error: c.error ?? 'not greeted' })),
      greeting_ms_after_fault: after.filter((c) => c.served).map((c) => c.greeting_ms!),
      new_calls_served_again_after_s: this.recoveredAfterS(faultAt),
      api_requests_after_fault: apiAfter.length,
      api_failures_after_fault: apiFailed.length,
      api_failure_statuses: [...new Set(apiFailed.map((a) => a.status))],
      api_failure_window_s: apiFailed.length ? [sec(apiFailed[0]!.at, faultAt), sec(apiFailed.at(-1)!.at, faultAt)] : null,
      /** Every new call of the run, before the fault too (a call dialled just before it meets it). */
      calls: this.calls.map((c) => ({
        at_s: sec(c.at, faultAt),
        kind: c.kind,
        call_id: c.call_id,
        served: c.served,
        greeting_ms: c.greeting_ms,
        ...(c.error ? { error: c.error } : {}),
      })),
    };
  }

  /** Every call dialled, for the checks of their records and events. */
  callIds(): string[] {
    return this.calls.flatMap((c) => (c.call_id ? [c.call_id] : []));
  }
}
