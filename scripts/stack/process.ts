// One supervised process: its own process group (so stopping it also stops what it started), output
// appended to a log file, and a parent-death signal so it never outlives a supervisor that was killed.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync } from 'node:fs';

const SETPRIV = '/usr/bin/setpriv';

export interface SpawnSpec {
  name: string;
  command: string;
  args: string[];
  env: Record<string, string | undefined>;
  cwd: string;
  logPath: string;
  /** How long SIGTERM may take before SIGKILL. */
  graceMs: number;
}

export class Service {
  readonly name: string;
  readonly logPath: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  exitCode: number | null | undefined = undefined;
  private readonly graceMs: number;

  constructor(spec: SpawnSpec) {
    this.name = spec.name;
    this.logPath = spec.logPath;
    this.graceMs = spec.graceMs;
    const out = openSync(spec.logPath, 'a');
    // setpriv (util-linux) sets PR_SET_PDEATHSIG before exec: the kernel signals the child when we die,
    // even by SIGKILL, when no exit handler can run.
    const [cmd, args] = existsSync(SETPRIV)
      ? [SETPRIV, ['--pdeathsig', 'TERM', '--', spec.command, ...spec.args]]
      : [spec.command, spec.args];
    try {
      this.child = spawn(cmd, args, { cwd: spec.cwd, env: spec.env, detached: true, stdio: ['ignore', out, out] });
    } finally {
      closeSync(out);
    }
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => {
        this.exitCode = code ?? (signal ? -1 : null);
        resolve(this.exitCode);
      });
      this.child.once('error', () => {
        this.exitCode = -1;
        resolve(-1);
      });
    });
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  get running(): boolean {
    return this.exitCode === undefined;
  }

  /**
   * SIGTERM to the leader only, so it can stop its own children in order (the control plane closes its
   * pools before its embedded PostgreSQL); SIGKILL to the whole group after that or after the grace period.
   */
  async stop(): Promise<void> {
    if (!this.running) return;
    try {
      this.child.kill('SIGTERM');
    } catch {
      // Already gone.
    }
    const timer = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), this.graceMs).unref());
    if ((await Promise.race([this.exited, timer])) === 'timeout') {
      this.signalGroup('SIGKILL');
      await this.exited;
    }
    // Whatever the leader left behind in its group goes too.
    this.signalGroup('SIGKILL');
  }

  /** Synchronous, for process exit handlers. */
  killNow(): void {
    this.signalGroup('SIGKILL');
  }

  signalGroup(signal: NodeJS.Signals): void {
    if (this.pid === undefined) return;
    try {
      process.kill(-this.pid, signal);
    } catch {
      // Already gone.
    }
  }

  /** The end of the log, for error messages. */
  tail(lines = 30): string {
    try {
      return readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  }
}
