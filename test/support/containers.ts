// Podman for the image test (test/e2e/images.test.ts): whether it runs, the local base image, builds of the
// Dockerfiles, and containers on the host network whose output goes to a stack's log folder. Every podman
// command reads the containers.conf scripts/setup.sh writes (CONTAINERS_CONF), never the machine's own.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { REPO_ROOT } from '../../scripts/stack/supervisor.ts';
import { Service } from '../../scripts/stack/process.ts';

export const CONTAINERS_CONF = process.env.CONTAINERS_CONF ?? path.join(process.env.VAP_TOOLS_DIR ?? path.join(homedir(), '.local/share/vap/tools'), 'containers.conf');
/** Containers this module starts carry it, with the test process's pid as its value. */
const OWNER_LABEL = 'vap.test.owner';

const podmanEnv = () => ({ ...process.env, CONTAINERS_CONF });

function onPath(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/**
 * VAP_TEST_IMAGES=1 runs the image test (and fails where podman is missing), 0 skips it; unset, it runs as root
 * when podman and setup's containers.conf are there: scripts/setup.sh installs both, so CI runs it. Root:
 * debootstrap needs it, and containers.conf is set up for podman as root.
 */
export function imageTestDecision(
  env: NodeJS.ProcessEnv = process.env,
  probe = { podman: () => onPath('podman'), conf: () => existsSync(CONTAINERS_CONF), root: () => process.getuid?.() === 0 },
): { run: boolean; why: string } {
  if (env.VAP_TEST_IMAGES === '1') return { run: true, why: 'VAP_TEST_IMAGES=1' };
  if (env.VAP_TEST_IMAGES === '0') return { run: false, why: 'VAP_TEST_IMAGES=0' };
  if (!probe.root()) return { run: false, why: 'not root (debootstrap and podman as set up here need it)' };
  if (!probe.podman()) return { run: false, why: 'podman is not installed (scripts/setup.sh installs it)' };
  if (!probe.conf()) return { run: false, why: `no ${CONTAINERS_CONF} (scripts/setup.sh writes it)` };
  return { run: true, why: 'podman is installed' };
}

/** Runs a command to its end, its output into `logPath`; rejects with the log's end when it fails. */
export function run(command: string, args: string[], logPath: string, opts: { cwd?: string } = {}): Promise<void> {
  const out = openSync(logPath, 'a');
  return new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, { cwd: opts.cwd ?? REPO_ROOT, env: podmanEnv(), stdio: ['ignore', out, out] });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) return resolve();
      const tail = readFileSync(logPath, 'utf8').trimEnd().split('\n').slice(-40).join('\n');
      reject(new Error(`${command} ${args.join(' ')} failed (${signal ?? `code ${code}`}); log ${logPath}:\n${tail}`));
    });
  }).finally(() => closeSync(out));
}

/** podman with the project's containers.conf; its stdout, trimmed. */
export function podman(args: string[]): string {
  const r = spawnSync('podman', args, { env: podmanEnv(), encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`podman ${args.join(' ')} failed: ${r.stderr || r.error?.message}`);
  return r.stdout.trim();
}

/** Makes (or finds) the local base image; its name. */
export async function localBaseImage(logDir: string): Promise<string> {
  const log = path.join(logDir, 'base-image.log');
  await run('bash', ['scripts/local-base-image.sh'], log);
  // The script prints progress on stderr and the name last on stdout: both went to the log.
  const name = readFileSync(log, 'utf8').trim().split('\n').at(-1)!;
  if (!/^[\w./-]+:[\w.-]+$/.test(name)) throw new Error(`scripts/local-base-image.sh printed no image name (last line: ${name})`);
  return name;
}

/** Files of the build context a Dockerfile's COPY takes from (.dockerignore leaves tests out), under `dir`. */
function contextFiles(root: string, dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(path.join(root, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...contextFiles(root, rel));
    else if (e.isFile() && !e.name.endsWith('.test.ts')) out.push(rel);
  }
  return out.sort();
}

/**
 * What an image is built from: the base image, the Dockerfile, .dockerignore and every file its COPY
 * instructions take from the context. Two builds from the same inputs give the same image (npm ci installs
 * the lock file's exact versions), so a build whose key is on an image already is skipped: even with every
 * layer cached, podman re-reads the 600 MB of node_modules to check the cache, minutes on a busy machine.
 */
export function buildKey(dockerfile: string, baseImageId: string, root = REPO_ROOT): string {
  const text = readFileSync(path.join(root, dockerfile), 'utf8');
  const sources = [...text.matchAll(/^COPY\s+((?:--\S+\s+)*)(.+)\s+\S+$/gm)].filter((m) => !m[1]!.includes('--from=')).flatMap((m) => m[2]!.trim().split(/\s+/));
  const hash = createHash('sha256').update(baseImageId).update(text).update(readFileSync(path.join(root, '.dockerignore')));
  for (const src of sources) {
    const files = statSync(path.join(root, src)).isDirectory() ? contextFiles(root, src) : [src];
    for (const f of files) hash.update(`\0${f}\0`).update(readFileSync(path.join(root, f)));
  }
  return hash.digest('hex').slice(0, 32);
}

/**
 * Builds a Dockerfile on `baseImage` with host networking (npm ci reaches the npm registry, apt-get Debian's
 * package mirror), never pulling; tags it and returns its image id. An image built from the same inputs
 * (buildKey, its label vap.build.inputs) is reused; otherwise podman's layer cache still saves the npm ci.
 */
export async function buildImage(dockerfile: string, tag: string, baseImage: string, logDir: string): Promise<string> {
  const key = buildKey(dockerfile, podman(['image', 'inspect', '--format', '{{.Id}}', baseImage]));
  const built = podman(['images', '--quiet', '--no-trunc', '--filter', `label=vap.build.inputs=${key}`]).split('\n').filter(Boolean);
  if (built[0]) {
    podman(['tag', built[0], tag]);
    return built[0].replace(/^sha256:/, '');
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'vap-build-'));
  try {
    const iid = path.join(dir, 'iid');
    const log = path.join(logDir, `build-${path.basename(dockerfile, '.Dockerfile')}.log`);
    // The CA bundle this machine's Node trusts (a TLS-inspecting proxy's), for the build's npm ci only.
    const ca = process.env.NODE_EXTRA_CA_CERTS && existsSync(process.env.NODE_EXTRA_CA_CERTS) ? ['--secret', `id=build-ca,src=${process.env.NODE_EXTRA_CA_CERTS}`] : [];
    await run('podman', ['build', '--network', 'host', '--pull=never', '--layers', ...ca, '--build-arg', `NODE_IMAGE=${baseImage}`, '--label', `vap.build.inputs=${key}`, '-f', dockerfile, '--iidfile', iid, '-t', tag, '.'], log);
    return readFileSync(iid, 'utf8').trim().replace(/^sha256:/, '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The image's size in bytes, as podman reports it (all its layers, the base's too). */
export function imageSize(image: string): number {
  return Number(podman(['image', 'inspect', '--format', '{{.Size}}', image]));
}

export interface ContainerSpec {
  name: string;
  image: string;
  env: Record<string, string>;
  command?: string[];
  logDir: string;
  /** Writable paths on the read-only root, owned by the image's user (the chart's emptyDir volumes; podman 4.3
   * ignores a tmpfs's mode and uid, its U option chowns it). */
  writable?: string[];
}

/**
 * Starts a container on the host network the way the Helm chart runs the vap images (read-only root, a
 * writable /tmp, no capabilities, no privilege escalation, the image's own non-root user), attached, so its
 * output lands in `<logDir>/<name>.log` and stopping the Service stops it (podman passes the SIGTERM on).
 */
export function startContainer(spec: ContainerSpec): { service: Service; container: string } {
  const container = `vap-test-${process.pid}-${spec.name}`;
  const envArgs = Object.entries(spec.env).flatMap(([k, v]) => ['--env', `${k}=${v}`]);
  const args = [
    'run', '--rm', '--name', container, '--label', `${OWNER_LABEL}=${process.pid}`,
    '--network', 'host', '--read-only', '--cap-drop', 'all', '--security-opt', 'no-new-privileges',
    '--stop-timeout', '10', ...(spec.writable ?? []).flatMap((dir) => ['--tmpfs', `${dir}:rw,U`]),
    ...envArgs, spec.image, ...(spec.command ?? []),
  ];
  const service = new Service({ name: spec.name, command: 'podman', args, env: podmanEnv(), cwd: REPO_ROOT, logPath: path.join(spec.logDir, `${spec.name}.log`), graceMs: 15_000 });
  return { service, container };
}

/** Removes a container whatever its state (a no-op when it is gone). */
export function removeContainer(container: string): void {
  spawnSync('podman', ['rm', '--force', '--ignore', '--time', '5', container], { env: podmanEnv(), stdio: 'ignore' });
}

/** Removes the containers of earlier test processes that died before their clean-up. */
export function sweepStaleContainers(): void {
  let lines: string[];
  try {
    lines = podman(['ps', '--all', '--filter', `label=${OWNER_LABEL}`, '--format', `{{.Names}} {{index .Labels "${OWNER_LABEL}"}}`]).split('\n').filter(Boolean);
  } catch {
    return;
  }
  for (const line of lines) {
    const [name, pid] = line.split(' ');
    if (name && !pidAlive(Number(pid))) removeContainer(name);
  }
}

function pidAlive(pid: number): boolean {
  if (!(pid > 0)) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
