// Parsing an uploaded document outside the control plane's process: one child process per document
// (parse-child.ts), with a V8 heap cap (--max-old-space-size), a resident-memory cap watched from here
// (buffers live outside the V8 heap), and a wall-clock limit, each enforced with SIGKILL. A zip bomb, a
// huge PDF or a pathological CSV can then cost at most one child: the API's memory and event loop are not
// touched. Why a process rather than a worker thread: docs/decisions/024-knowledge-bases.md, "Parsing knowledge documents in a child process".
import { fork, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import client from 'prom-client';
import type { ParseReply, ParseRequest } from './parse-child.ts';

const CHILD = fileURLToPath(new URL('./parse-child.ts', import.meta.url));
const RSS_POLL_MS = 50;

export interface SandboxOptions {
  /** Cap of the child's V8 heap and of its resident memory. */
  memoryMb: number;
  timeoutMs: number;
}

export type SandboxFailure = 'limit' | 'invalid' | 'memory' | 'timeout' | 'crash';

/** A document that could not be parsed; `reason` says whether it was over a limit, unreadable, or the parser died. */
export class SandboxError extends Error {
  override name = 'SandboxError';
  readonly reason: SandboxFailure;
  constructor(reason: SandboxFailure, message: string) {
    super(message);
    this.reason = reason;
  }
}

const live = new Set<ChildProcess>();
/** Pids of the parsing processes running now (tests check that none is left behind). */
export const liveParses = (): number[] => [...live].map((c) => c.pid!).filter(Boolean);
// A control plane that exits takes its parsers with it (a crash is covered by the child's 'disconnect').
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

export const parseMetrics = {
  runs: new client.Counter({
    name: 'vap_kb_parse_total',
    help: 'Knowledge documents parsed in a sandbox process, by outcome (ok, limit, invalid, memory, timeout, crash)',
    labelNames: ['outcome'],
    registers: [],
  }),
  active: new client.Gauge({
    name: 'vap_kb_parse_active',
    help: 'Knowledge parsing processes running in this process',
    registers: [],
    collect() {
      this.set(live.size);
    },
  }),
};

/** Adds the parse metrics to a platform's registry (once: tests start several platforms in one process). */
export function registerParseMetrics(registry: client.Registry): void {
  if (!registry.getSingleMetric('vap_kb_parse_total')) registry.registerMetric(parseMetrics.runs);
  if (!registry.getSingleMetric('vap_kb_parse_active')) registry.registerMetric(parseMetrics.active);
}

/** Resident memory of a process in bytes, from /proc (Linux); null where that is not available. */
async function rssOf(pid: number): Promise<number | null> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb ? Number(kb) * 1024 : null;
  } catch {
    return null;
  }
}

export function parseInSandbox(req: ParseRequest, o: SandboxOptions): Promise<Extract<ParseReply, { ok: true }>> {
  return new Promise((resolve, reject) => {
    const child = fork(CHILD, [], {
      // Only our flags (not the parent's), and an empty environment: the parser never sees a platform secret.
      execArgv: [`--max-old-space-size=${o.memoryMb}`],
      env: {},
      serialization: 'advanced',
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    });
    live.add(child);
    let reply: ParseReply | null = null;
    let killedFor: 'memory' | 'timeout' | null = null;
    let stderr = '';
    const kill = (why: 'memory' | 'timeout') => {
      if (killedFor || child.exitCode !== null || child.signalCode !== null) return;
      killedFor = why;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => kill('timeout'), o.timeoutMs);
    let watching = true;
    const watch = async () => {
      while (watching) {
        const rss = await rssOf(child.pid!);
        if (rss === null) return; // gone, or no /proc: the heap cap still holds
        if (rss > o.memoryMb * 1048576) {
          kill('memory');
          return;
        }
        await new Promise((r) => setTimeout(r, RSS_POLL_MS));
      }
    };
    if (child.pid) void watch();
    child.stderr!.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    child.on('message', (m: ParseReply) => {
      reply = m;
    });
    let settled = false;
    const settle = (code: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      watching = false;
      clearTimeout(timer);
      live.delete(child);
      let err: SandboxError | null = null;
      if (reply?.ok) {
        parseMetrics.runs.inc({ outcome: 'ok' });
        resolve(reply);
        return;
      }
      if (reply) err = new SandboxError(reply.limit ? 'limit' : 'invalid', reply.message);
      else if (killedFor === 'timeout') err = new SandboxError('timeout', `parsing took longer than ${Math.round(o.timeoutMs / 1000)} s`);
      // V8 aborts when the heap cap is reached; the RSS watch kills for memory outside the heap.
      else if (killedFor === 'memory' || /heap out of memory|allocation failed/i.test(stderr)) {
        err = new SandboxError('memory', `parsing needed more than ${o.memoryMb} MB of memory`);
      } else err = new SandboxError('crash', `the parser stopped unexpectedly (${signal ?? `exit code ${code}`})`);
      parseMetrics.runs.inc({ outcome: err.reason });
      reject(err);
    };
    child.once('close', settle);
    // A process that could not be started never closes; a failed send ends in 'close' (it is killed below).
    child.on('error', () => {
      if (!child.pid) settle(null, null);
    });
    child.send(req, (e) => {
      if (e) child.kill('SIGKILL'); // it died before reading: reported from 'close'
    });
  });
}
