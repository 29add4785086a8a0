// Paths of the command-line tools that scripts/setup.sh installs (Go-built ones into $VAP_TOOLS_DIR/bin,
// Debian ones onto the PATH). A missing tool is a failed test with a way out, never a skipped one.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export function toolPath(name: string): string {
  const dir = process.env.VAP_TOOLS_DIR ?? path.join(os.homedir(), '.local/share/vap/tools');
  const own = path.join(dir, 'bin', name);
  if (existsSync(own)) return own;
  try {
    return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error(`${name} is not installed: run scripts/setup.sh (npm test runs it first)`);
  }
}
