// The container images' sizes (npm run bench:images; docs/operations.md, "Container images"). Makes the local
// base (scripts/local-base-image.sh), builds both Dockerfiles on it with podman as test/e2e/images.test.ts
// does (reusing an image built from the same inputs), and records each image's size, its layers, what the base
// is made of and the largest packages of node_modules. The base is the baseline: what vap adds is the rest.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildImage, imageSize, localBaseImage, podman } from '../test/support/containers.ts';
import { writeResults } from './support/results.ts';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
const MB = (bytes: number) => Math.round(bytes / 1e5) / 10;

interface Layer { created_by: string; mb: number }
function layers(image: string): Layer[] {
  const history = JSON.parse(podman(['history', '--format', 'json', image])) as { CreatedBy: string; size: number }[];
  return history.filter((h) => h.size > 0).reverse().map((h) => ({ created_by: h.CreatedBy.replace(/^\/bin\/sh -c (#\(nop\) )?/, '').slice(0, 120), mb: MB(h.size) }));
}

/** `du` in a container of the image: megabytes (10^6 bytes, as podman counts) of each path. */
function du(image: string, script: string): Record<string, number> {
  const out = podman(['run', '--rm', '--network', 'host', image, 'sh', '-c', script]);
  return Object.fromEntries(out.split('\n').filter(Boolean).map((l) => {
    const [kb, p] = l.split('\t');
    return [p!, MB(Number(kb) * 1024)];
  }));
}

const logDir = mkdtempSync(path.join(tmpdir(), 'vap-bench-images-'));
try {
  const base = await localBaseImage(logDir);
  const built = {
    'control-plane': await buildImage('deploy/docker/control-plane.Dockerfile', `vap/control-plane:${pkg.version}`, base, logDir),
    'media-worker': await buildImage('deploy/docker/media-worker.Dockerfile', `vap/media-worker:${pkg.version}`, base, logDir),
  };
  const images = [base, ...Object.values(built)].map((id, i) => ({
    image: i === 0 ? base : Object.keys(built)[i - 1]!,
    mb: MB(imageSize(id)),
    layers: layers(id),
  }));
  // The base: Node, npm, and Debian (everything else).
  const baseParts = du(base, 'du -sk --apparent-size /usr/local/bin/node /usr/local/lib/node_modules/npm');
  // node_modules by package (a scope counts as one), largest first.
  const modules = du(built['control-plane'], 'cd /app/node_modules && du -sk --apparent-size *');
  const top = Object.entries(modules).sort((a, b) => b[1] - a[1]).slice(0, 12);
  const debianPackages = Number(podman(['run', '--rm', '--network', 'host', base, 'sh', '-c', 'dpkg-query -W | wc -l']));
  for (const i of images) process.stdout.write(`${i.image}: ${i.mb} MB\n`);
  writeResults('images', {
    engine: podman(['--version']),
    base_image: { name: base, debian_packages: debianPackages, parts_mb: baseParts },
    images,
    node_modules_top_mb: Object.fromEntries(top),
  });
  rmSync(logDir, { recursive: true, force: true });
} catch (err) {
  process.stderr.write(`bench:images failed; build logs in ${logDir}\n`);
  throw err;
}
