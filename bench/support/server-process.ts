// Starts bench/http-server.ts in a process of its own (a server under test for bench:http and bench:lists), its
// stdout (the request log) to a file; resolves with the port it announces on fd 3.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import path from 'node:path';

export function startServer(mode: string, url: string, orgId: string, logFile: string): Promise<{ child: ChildProcess; port: number }> {
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, [path.join(import.meta.dirname, '..', 'http-server.ts'), mode, url, orgId], { stdio: ['ignore', log, 'inherit', 'pipe'] });
  closeSync(log);
  return new Promise((resolve, reject) => {
    (child.stdio[3] as NodeJS.ReadableStream).on('data', (d: Buffer) => {
      const m = /ready (\d+)/.exec(d.toString());
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
  });
}
