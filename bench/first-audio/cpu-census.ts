// Who used the machine's cores over a window (bench:firstaudio: a call's first 3 s), by kind of process: the
// call's own job process, the worker's other job processes (a standby agent joining, a replacement loading its
// modules), the worker, LiveKit, the SIP bridge, the control plane and its database, the benchmark's own client.
// A loop stall in which the job's thread waited for a core (start-timeline.ts, runq_ms) is explained by what ran
// instead. Read from /proc (Linux): each process's user and system time, in clock ticks (10 ms).
import { readFileSync, readdirSync } from 'node:fs';

const TICK_MS = 10;

/** Processes or threads by id -> [label (a process's kind, a thread's group), ticks used, start time in ticks since boot]. */
type Usage = Map<number, [string, number, number]>;

export interface Snapshot {
  at: number;
  /** pid -> [kind, ticks used, start time]. */
  procs: Usage;
  /** For the processes of the kinds asked for (`threadsOf`): pid -> their threads by tid, labelled by group. */
  threads: Map<number, Usage>;
}

/** The kind of a process, from its parent and command line; null to leave it out. */
export type Classifier = (pid: number, ppid: number, cmdline: string) => string | null;

/** [ticks used (user + system), start time (ticks since boot), parent pid, command name (a thread's: its name)]. */
function stat(pid: number, tid?: number): [number, number, number, string] | null {
  try {
    const s = readFileSync(tid === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${tid}/stat`, 'utf8');
    // The fields after the command name (which may hold spaces and parentheses), from the third: state is fields[0].
    const fields = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return [Number(fields[11]) + Number(fields[12]), Number(fields[19]), Number(fields[1]), s.slice(s.indexOf('(') + 1, s.lastIndexOf(')'))];
  } catch {
    return null;
  }
}

/**
 * A thread's name as a group: the kernel keeps 15 characters of it, and pools number their threads. The process's
 * first thread is its event loop (Node's main thread).
 */
function threadGroup(pid: number, tid: number, name: string): string {
  if (tid === pid) return 'main (event loop)';
  return name.replace(/[\s_-]*\d+$/, '') || 'unnamed';
}

function threads(pid: number): Usage {
  const out: Usage = new Map();
  let tids: number[];
  try {
    tids = readdirSync(`/proc/${pid}/task`).map(Number);
  } catch {
    return out;
  }
  for (const tid of tids) {
    const st = stat(pid, tid);
    if (st) out.set(tid, [threadGroup(pid, tid, st[3]), st[0], st[1]]);
  }
  return out;
}

/** `threadsOf`: the kinds whose processes are also read thread by thread. */
export function snapshot(classify: Classifier, threadsOf: (kind: string) => boolean = () => false): Snapshot | null {
  let pids: number[];
  try {
    pids = readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .map(Number);
  } catch {
    return null;
  }
  const procs: Usage = new Map();
  const byThread = new Map<number, Usage>();
  for (const pid of pids) {
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
    } catch {
      continue;
    }
    const st = stat(pid);
    const kind = st && classify(pid, st[2], cmdline);
    if (kind) procs.set(pid, [kind, st[0], st[1]]);
    if (kind && threadsOf(kind)) byThread.set(pid, threads(pid));
  }
  return { at: Date.now(), procs, threads: byThread };
}

/**
 * CPU ms per label between two readings. A process or thread that started in between counts from its start; one
 * that ended in between is lost (its last ticks are not readable), which undercounts a window's short-lived ones.
 */
function usedBetween(before: Usage, after: Usage): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [id, [label, ticks, start]] of after) {
    const prev = before.get(id);
    const used = prev && prev[2] === start ? ticks - prev[1] : ticks;
    out[label] = (out[label] ?? 0) + used * TICK_MS;
  }
  return out;
}

/** CPU ms per kind of process between two snapshots. */
export function cpuBetween(a: Snapshot, b: Snapshot): Record<string, number> {
  return usedBetween(a.procs, b.procs);
}

/**
 * CPU ms of one process's threads between two snapshots, by thread group (the groups that used any): which of its
 * own threads competed with its event loop for the cores. Empty when the later snapshot did not read its threads.
 */
export function threadCpuBetween(a: Snapshot, b: Snapshot, pid: number): Record<string, number> {
  const after = b.threads.get(pid);
  if (!after) return {};
  return Object.fromEntries(Object.entries(usedBetween(a.threads.get(pid) ?? new Map(), after)).filter(([, ms]) => ms > 0));
}

/** Sums of per-window records, and the mean per window. */
export function censusSummary(windows: Record<string, number>[]): { windows: number; mean_ms: Record<string, number> } {
  const sum: Record<string, number> = {};
  for (const w of windows) for (const [k, v] of Object.entries(w)) sum[k] = (sum[k] ?? 0) + v;
  const mean = Object.fromEntries(
    Object.entries(sum)
      .sort((x, y) => y[1] - x[1])
      .map(([k, v]) => [k, Math.round(v / Math.max(1, windows.length))]),
  );
  return { windows: windows.length, mean_ms: mean };
}
