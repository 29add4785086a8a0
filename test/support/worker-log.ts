// What e2e files read of a stack's media worker: the JSON lines of its log (worker.log in the stack's log folder),
// and whether a process it started is still alive.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface LogLine {
  msg: string;
  time: string;
  pid: number;
  call_id?: string | null;
  [k: string]: unknown;
}

/** Every JSON line of the worker's log so far. */
export function workerLog(logDir: string): LogLine[] {
  const out: LogLine[] = [];
  for (const line of readFileSync(path.join(logDir, 'worker.log'), 'utf8').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      out.push(JSON.parse(line) as LogLine);
    } catch {
      // a line cut by a concurrent write
    }
  }
  return out;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
