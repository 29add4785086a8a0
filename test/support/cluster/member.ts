// One process of the one-machine cluster that a fault can kill, stop or start again: the spawn spec is kept, so a
// restart runs the same command with the same ports and configuration, logging to the same file.
import path from 'node:path';
import { REPO_ROOT } from '../../../scripts/stack/supervisor.ts';
import { Service } from '../../../scripts/stack/process.ts';
import { waitReady } from '../../../scripts/stack/readiness.ts';

export interface MemberSpec {
  /** Unique in the cluster: `worker-2`, `livekit-1`, `control-plane-1`... */
  name: string;
  command: string;
  args: string[];
  env: Record<string, string | undefined>;
  /** Passes once the process does its job. */
  ready: () => Promise<boolean>;
  /** How long a SIGTERM may take before SIGKILL, when the cluster stops it. */
  graceMs?: number;
  /** The ports it listens on, by use (`health`, `metrics`, `sip`...). */
  ports?: Record<string, number>;
}

export class Member {
  readonly spec: MemberSpec;
  readonly logPath: string;
  service: Service | null = null;

  constructor(spec: MemberSpec, logDir: string) {
    this.spec = spec;
    this.logPath = path.join(logDir, `${spec.name}.log`);
  }

  get name(): string {
    return this.spec.name;
  }

  get pid(): number | undefined {
    return this.service?.pid;
  }

  get running(): boolean {
    return this.service?.running ?? false;
  }

  port(use: string): number {
    const p = this.spec.ports?.[use];
    if (p === undefined) throw new Error(`${this.name} has no ${use} port`);
    return p;
  }

  /** Spawns it (again) and waits until it is ready. */
  async start(timeoutMs = 90_000): Promise<void> {
    if (this.running) return;
    const s = this.spec;
    this.service = new Service({
      name: s.name,
      command: s.command,
      args: s.args,
      env: s.env,
      cwd: REPO_ROOT,
      logPath: this.logPath,
      graceMs: s.graceMs ?? 5000,
    });
    await waitReady(this.service, s.name, s.ready, timeoutMs);
  }

  /** kill -9 of the process and everything it started (its process group), as a crashed machine loses them. */
  async kill9(): Promise<void> {
    if (!this.service) return;
    this.service.signalGroup('SIGKILL');
    await this.service.exited;
  }

  /** SIGTERM to the process only (it stops its own children in order); resolves at once. */
  term(): void {
    this.service?.child.kill('SIGTERM');
  }

  /** Resolves with the exit code once the process has exited. */
  async exited(): Promise<number | null> {
    return this.service ? this.service.exited : null;
  }

  /** A clean stop: SIGTERM, then SIGKILL of the group after the grace period. */
  async stop(): Promise<void> {
    await this.service?.stop();
  }

  /** The log's end, for failure messages. */
  tail(lines = 30): string {
    return this.service?.tail(lines) ?? '';
  }
}
