// docs/decisions.md is an index generated from the records in docs/decisions/: one line each, numbered records
// (NNN-slug.md) first, then records added on branches (<branch>-<slug>.md), by name. Several engineers add records
// at once, so nobody edits the index by hand: `node scripts/decisions-index.ts` rewrites it, and
// test/decisions-index.test.ts fails until it matches the folder.
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
export const INDEX = path.join(root, 'docs/decisions.md');
export const FOLDER = path.join(root, 'docs/decisions');

const HEADER = `# Design decisions

Every place where \`service-interface.md\` says "not shown", or where the architecture sketch was changed, is decided
in a short record in [decisions/](decisions/): its context, the decision and its consequences. This index is
generated (\`node scripts/decisions-index.ts\`); add a record as \`docs/decisions/<branch>-<slug>.md\` with a \`# Title\`
and the sections \`## Context\`, \`## Decision\` and \`## Consequences\`, then run the script.
`;

export function recordFiles(): string[] {
  const files = readdirSync(FOLDER).filter((f) => f.endsWith('.md'));
  const numbered = files.filter((f) => /^\d{3}-/.test(f)).sort();
  const others = files.filter((f) => !/^\d{3}-/.test(f)).sort();
  return [...numbered, ...others];
}

export function titleOf(file: string): string {
  const first = readFileSync(path.join(FOLDER, file), 'utf8')
    .split('\n')
    .find((l) => l.startsWith('# '));
  if (!first) throw new Error(`docs/decisions/${file} has no "# Title" line`);
  return first.slice(2).trim();
}

export function renderIndex(): string {
  const numbered = recordFiles().filter((f) => /^\d{3}-/.test(f));
  const branch = recordFiles().filter((f) => !/^\d{3}-/.test(f));
  const line = (f: string) => `- [${/^\d{3}-/.test(f) ? `${f.slice(0, 3)}. ` : ''}${titleOf(f)}](decisions/${f})`;
  let out = `${HEADER}\n## Records\n\n${numbered.map(line).join('\n')}\n`;
  if (branch.length > 0) out += `\n## Records added since\n\n${branch.map(line).join('\n')}\n`;
  return out;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  writeFileSync(INDEX, renderIndex());
  console.log(`docs/decisions.md: ${recordFiles().length} records`);
}
