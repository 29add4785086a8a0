// The installed version of a package whose exports hide its package.json (the pinned patches check it).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** The version of `name` that this process loads; its entry point sits in dist/, one level below package.json. */
export function installedPackageVersion(name: string): string {
  const entry = createRequire(import.meta.url).resolve(name);
  const pkg = JSON.parse(readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')) as { name: string; version: string };
  if (pkg.name !== name) throw new Error(`unexpected package beside ${entry}: ${pkg.name}`);
  return pkg.version;
}
