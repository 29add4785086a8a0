// The README's ten-minute tour, read as the tests that run it see it. Each code block of the tour follows a marker
// `<!-- tour: <id> (run by <test files>) -->`; an end-to-end test runs a block by asking for it here by id, so the
// command it runs is the README's text, not a copy. test/readme-tour.test.ts holds every block to a marker and
// every marker to the files it names.
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const README = path.resolve(import.meta.dirname, '../../README.md');
const TOUR_HEADING = '## A ten-minute tour';

export interface TourBlock {
  /** The marker's id, null when the block has no marker. */
  id: string | null;
  /** The test files the marker names. */
  runBy: string[];
  lang: string;
  code: string;
}

/** The tour section of the README: from its heading to the next `## `. */
export function tourSection(text = readFileSync(README, 'utf8')): string {
  const start = text.indexOf(`\n${TOUR_HEADING}\n`);
  if (start < 0) throw new Error(`README has no "${TOUR_HEADING}" section`);
  const end = text.indexOf('\n## ', start + 1 + TOUR_HEADING.length);
  return text.slice(start + 1, end < 0 ? undefined : end + 1);
}

/** Every fenced block of the tour, with the marker on the line before it (blank lines between allowed). */
export function tourBlocks(text?: string): TourBlock[] {
  const lines = tourSection(text).split('\n');
  const blocks: TourBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\w*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const close = lines.indexOf('```', i + 1);
    if (close < 0) throw new Error('README tour: a code block is not closed');
    let j = i - 1;
    while (j >= 0 && lines[j]!.trim() === '') j--;
    const marker = j >= 0 ? /^<!-- tour: ([\w-]+)(?: \(run by ([^)]*)\))? -->$/.exec(lines[j]!) : null;
    blocks.push({
      id: marker?.[1] ?? null,
      runBy: (marker?.[2] ?? '')
        .split(/,|\band\b/)
        .map((s) => s.trim())
        .filter(Boolean),
      lang: open[1]!,
      code: lines.slice(i + 1, close).join('\n') + '\n',
    });
    i = close;
  }
  return blocks;
}

/** The tour's block marked `id`: the commands a test runs. */
export function tourBlock(id: string): string {
  const block = tourBlocks().find((b) => b.id === id);
  if (!block) throw new Error(`README tour has no block marked "${id}"`);
  return block.code;
}
