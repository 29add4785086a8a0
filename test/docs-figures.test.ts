// Docs cite only what a committed results file holds (issue 24). docs/benchmarks.md states the convention at
// its top; this file holds the docs to it, and the results files to the history they claim to come from.
//
// Sections. A heading opens a section that runs to the next heading of the same or a higher level; the text
// under the file's title, before its first `##`, is its preamble. A section names its results in its first
// paragraph, which starts `Results:` and lists `bench/results/<name>.json` (the file as it is) or
// `bench/results/<name>.json@<commit>` (the file as committed in <commit>: an earlier run). A subsection
// without a Results paragraph of its own takes its parent's. `Results: not measured in a committed run` says
// a section has none, so it may hold no figure.
//
// Figure-bearing lines. Outside fenced code, and with inline code (commands and settings such as
// `npm run bench:inbound -- 100 4` or `MAX_CONCURRENT_CALLS=3`) and link targets removed, a line bears a
// figure when a number on it is followed, at most two words later, by a unit: a time (ms, s, minutes...), a
// rate (anything per second: req/s, /s), a share (%), a size (KB, MiB...), a multiple (x, ×, times) or a count
// of what the benchmarks count (calls, sessions, turns, requests...). "3,500 authenticated requests/s" is a
// figure, and so is a number whose unit wraps to the next line. A table row with a number in it bears figures
// too (its units sit in the header). Digits inside a word (p50, v2v, G.711, v1-mini) are not numbers.
//
// The rule: every figure-bearing line names an existing results file itself or sits in a section that does.
// operations.md is a runbook whose numbers are mostly settings, defaults and alert thresholds, which nothing
// measures: the sections in SETTINGS_SECTIONS hold only those and are exempt, except for a line that reads
// as a measurement (measured, benchmark, p50, a rate per second...). Any other section of it is checked.
//
// Cited figures (issue 55). A figure can name the value it states: the figure is a link whose target is the results
// file with the value's path as its fragment, `[821 ms](bench/results/first-audio.json#web.p50_ms)` (relative to the
// doc, as any link). The path is dot-separated: an object's key, an array's index, or `key=value` for the element
// of an array whose `key` is `value` (`results.name=vap.p50`); a key with spaces or brackets is percent-encoded
// (`first%20page`). A scale may follow: `#…p50_ms/1000` for a figure written in seconds, `#…share*100` for a
// percentage, `*-1` for a difference whose sign the text writes. The link's text holds exactly one number, which
// must equal the value as written: rounded to the decimals it shows (`0.82 s` matches 0.8249), never more than that. Every cited
// figure in README.md and docs/ is compared with its file. A figure outside a citation fails: anywhere in the
// README; in the current and baseline columns (and the prose) of docs/benchmarks.md's summary table; and in the
// guides and decision records on a line that reads as a measurement (operations.md's test), where settings and
// defaults need no source.
import { beforeAll, describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { CITATION, NUMBER, citations, matchesAsWritten, prose, valueAt, writtenNumber } from './support/doc-figures.ts';

const root = path.resolve(import.meta.dirname, '..');
const DOCS = ['docs/benchmarks.md', 'docs/operations.md'];
// Docs whose commit references are checked against the history (decisions.md cites benchmark runs too).
const DECISION_RECORDS = readdirSync(path.join(root, 'docs/decisions'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/decisions/${f}`);
const GUIDES = readdirSync(path.join(root, 'docs/guides'))
  .filter((f) => f.endsWith('.md'))
  .map((f) => `docs/guides/${f}`);
const COMMIT_DOCS = [...DOCS, 'docs/decisions.md', ...DECISION_RECORDS];

const SETTINGS_SECTIONS: Record<string, string[]> = {
  'docs/operations.md': [
    'What runs',
    'Egress',
    'Scaling media workers',
    'Draining a worker or a node',
    'A control-plane replica that dies mid-job',
    'Rotating keys',
    'Carrier cost: rates, destinations and spend caps',
    'Backup and restore of PostgreSQL',
    'Dashboards and metrics',
    'Traces',
    'Alerts',
    'Outbound and inbound abuse limits (issue 50, second security pass)',
    'Supervising live calls (issue 52)',
  ],
};

// Results files whose recorded commit is not in the history, so the code that ran cannot be known and the
// figures must be re-run. Listed, not edited: a results file's commit is a record. An entry stops passing once
// its file names a commit in the history (re-run), so the list only shrinks. A doc citing one of them must
// say, in its Results paragraph, that the commit is not in the history.
const AWAITING_RERUN: Record<string, string> = {
  // The branch that ran it was lost; the code it measured reached main in 8c96d75. A re-run takes about 23 minutes.
  'bench/results/turn-taking-flux.json': 'cf4981ab5c0913eaafc873665aad6c52b44fe540',
  // Its run's commits did not reach main; the code it ran reached main in 8c96d75. A re-run takes about 22 minutes.
  'bench/results/faults.json': 'f6031ce6b8ac189d829193056bb08d6cbf4c1043',
};

// Times, rates (anything per second), shares, sizes, multiples, and the things the benchmarks count.
const UNITS = ['ms', 's', 'sec(?:ond)?s?', 'min(?:ute)?s?', 'hours?', 'days?', '%', '[KMG]i?B', String.raw`[\w-]*/s`, 'x', '×', 'times']
  .concat(['calls?', 'sessions?', 'turns?', 'requests?', 'deliveries', 'transactions?', 'rows', 'trials?', 'tokens?', 'pages?', 'events?'])
  .concat(['cores?', 'CPU-seconds?']);
// Up to two words may sit between the number and its unit ("3,500 authenticated requests/s").
const FIGURE = new RegExp(`${NUMBER}\\s*(?:[A-Za-z-]+\\s+){0,2}(?:${UNITS.join('|')})(?![\\w/])`, 'g');
const BARE_NUMBER = new RegExp(NUMBER + String.raw`(?![\w])`);
const MEASUREMENT = /\b(measured|measures|measurement|benchmarks?|bench:\w+|p50|p95|p99|median|throughput)\b|\/s\b/i;
const RESULTS_REF = /bench\/results\/([\w.-]+\.json)(?:@([0-9a-f]{7,40}))?/g;
const NOT_MEASURED = /^Results:\s*not measured in a committed run/;

interface Section {
  title: string;
  level: number;
  parent: Section | null;
  // The Results paragraph's text, null when the section has none of its own.
  results: string | null;
}
interface DocLine {
  n: number;
  text: string;
  // The next line of the same paragraph, if any: a figure's unit may wrap onto it.
  next: string;
  section: Section;
}

function parse(doc: string): DocLine[] {
  const lines = readFileSync(path.join(root, doc), 'utf8').split('\n');
  const out: DocLine[] = [];
  let section: Section = { title: '(preamble)', level: 1, parent: null, results: null };
  let fenced = false;
  let firstParagraph: 'before' | 'in' | 'done' = 'before';
  for (const [i, text] of lines.entries()) {
    if (/^\s*```/.test(text)) {
      fenced = !fenced;
      firstParagraph = 'done';
      continue;
    }
    if (fenced) continue;
    const heading = /^(#{1,6})\s+(.*)$/.exec(text);
    if (heading) {
      const level = heading[1]!.length;
      if (level === 1) {
        section = { title: '(preamble)', level: 1, parent: null, results: null };
      } else {
        let parent: Section | null = section;
        while (parent && parent.level >= level) parent = parent.parent;
        section = { title: heading[2]!.trim(), level, parent, results: null };
      }
      firstParagraph = 'before';
      out.push({ n: i + 1, text, next: '', section });
      continue;
    }
    // The first paragraph of a section is its Results paragraph when it starts `Results:`.
    if (firstParagraph === 'before' && text.trim() !== '') firstParagraph = text.startsWith('Results:') ? 'in' : 'done';
    else if (firstParagraph === 'in' && text.trim() === '') firstParagraph = 'done';
    if (firstParagraph === 'in') section.results = section.results === null ? text : `${section.results} ${text}`;
    out.push({ n: i + 1, text, next: '', section });
  }
  for (const [i, line] of out.entries()) {
    const following = out[i + 1];
    if (following && following.n === line.n + 1 && following.text.trim() !== '' && !/^\s*[|#]/.test(following.text)) line.next = following.text;
  }
  return out;
}

function isFigureBearing(line: DocLine): boolean {
  const p = prose(line.text);
  // A figure that starts on this line, its unit on this line or the next.
  const joined = `${p} ${prose(line.next)}`;
  for (const m of joined.matchAll(FIGURE)) if (m.index < p.length) return true;
  // A table row (not its separator) with a number in any cell.
  return /^\s*\|/.test(line.text) && !/^\s*\|[\s:|-]*$/.test(line.text) && BARE_NUMBER.test(p);
}

function refs(text: string): { file: string; commit: string | null }[] {
  return [...text.matchAll(RESULTS_REF)].map((m) => ({ file: `bench/results/${m[1]!}`, commit: m[2] ?? null }));
}

/** The Results paragraph that covers a section: its own, else its nearest ancestor's. */
function resultsOf(section: Section): string | null {
  for (let s: Section | null = section; s; s = s.parent) if (s.results !== null) return s.results;
  return null;
}

function isSettingsSection(doc: string, section: Section): boolean {
  const names = SETTINGS_SECTIONS[doc] ?? [];
  for (let s: Section | null = section; s; s = s.parent) if (names.includes(s.title)) return true;
  return false;
}

function git(args: string[]): string {
  return execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}
function gitOk(args: string[]): boolean {
  try {
    git(args);
    return true;
  } catch {
    return false;
  }
}
/** In the history of this checkout: the commit exists and HEAD descends from it. */
function inHistory(sha: string): boolean {
  return gitOk(['cat-file', '-e', `${sha}^{commit}`]) && gitOk(['merge-base', '--is-ancestor', sha, 'HEAD']);
}

/** Every string a results file records under a key naming a commit, at any depth (voice.json has sections). */
function commitsIn(json: unknown): string[] {
  const found: string[] = [];
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) for (const x of v) walk(x);
    else if (v && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) {
        if (/commit/i.test(k) && typeof x === 'string') found.push(x);
        else walk(x);
      }
  };
  walk(json);
  return [...new Set(found)];
}

let tracked: Set<string>;

beforeAll(() => {
  // Without a full history this file cannot tell a missing commit from a missing clone: say so, never pass.
  let inside = false;
  try {
    inside = git(['rev-parse', '--is-inside-work-tree']) === 'true';
  } catch {
    inside = false;
  }
  if (!inside) throw new Error(`docs-figures: ${root} is not a git checkout; these checks need the repository's history`);
  if (git(['rev-parse', '--is-shallow-repository']) === 'true')
    throw new Error('docs-figures: the clone is shallow; fetch the whole history (git fetch --unshallow) to check commits');
  tracked = new Set(git(['ls-files', 'bench/results']).split('\n').filter(Boolean));
});

/** Why a results reference is not a committed results file, or null when it is. */
function badRef(ref: { file: string; commit: string | null }): string | null {
  if (ref.commit === null) return tracked.has(ref.file) ? null : `${ref.file} is not a committed results file`;
  if (!inHistory(ref.commit)) return `${ref.file}@${ref.commit}: commit not in the history`;
  if (!gitOk(['cat-file', '-e', `${ref.commit}:${ref.file}`])) return `${ref.file}@${ref.commit}: no such file in that commit`;
  return null;
}

describe('docs cite only what a results file holds', () => {
  it.each(DOCS)('every figure-bearing line of %s names a committed results file, or its section does', (doc) => {
    const problems: string[] = [];
    for (const line of parse(doc)) {
      if (!isFigureBearing(line)) continue;
      if (isSettingsSection(doc, line.section) && !MEASUREMENT.test(`${line.text} ${line.next}`)) continue;
      const where = `${doc}:${line.n} (${line.section.title})`;
      // A results file named on the line vouches for it if it is a committed one. (A file named on any other
      // line is prose, e.g. where a run that was never committed would write.)
      const own = refs(line.text);
      if (own.length > 0) {
        for (const ref of own) {
          const bad = badRef(ref);
          if (bad) problems.push(`${where}: ${bad}`);
        }
        continue;
      }
      const covering = resultsOf(line.section);
      if (covering === null) problems.push(`${where}: figures, and no results file named on the line or in a Results paragraph: ${line.text.trim()}`);
      else if (NOT_MEASURED.test(covering)) problems.push(`${where}: figures in a section not measured in a committed run: ${line.text.trim()}`);
      else if (refs(covering).length === 0) problems.push(`${where}: the Results paragraph names no bench/results file`);
    }
    expect(problems).toEqual([]);
  });

  it.each(DOCS)('every Results paragraph of %s names committed results files, and says so when their commit is missing', (doc) => {
    const problems: string[] = [];
    const seen = new Set<Section>();
    for (const line of parse(doc)) {
      const s = line.section;
      if (s.results === null || seen.has(s)) continue;
      seen.add(s);
      const named = refs(s.results);
      if (named.length === 0 && !NOT_MEASURED.test(s.results)) problems.push(`${doc} (${s.title}): Results names no bench/results file`);
      for (const ref of named) {
        const bad = badRef(ref);
        if (bad) problems.push(`${doc} (${s.title}): ${bad}`);
        if (ref.commit === null && ref.file in AWAITING_RERUN && !/not in the history/.test(s.results))
          problems.push(`${doc} (${s.title}): ${ref.file} records a commit not in the history; its Results paragraph must say so`);
      }
    }
    expect(problems).toEqual([]);
  });

  it.each(COMMIT_DOCS)('every commit %s names is in the history', (doc) => {
    const text = readFileSync(path.join(root, doc), 'utf8');
    const missing: string[] = [];
    for (const m of text.matchAll(/\b[0-9a-f]{7,40}\b/g)) {
      const token = m[0];
      const before = text.slice(Math.max(0, m.index - 12), m.index);
      // A hex word with a letter and a digit, or digits alone right after "commit" or a results file's "@".
      const isCommit = (/[a-f]/.test(token) && /\d/.test(token)) || /(commits?\s+`?|@)$/.test(before);
      if (isCommit && !inHistory(token)) missing.push(token);
    }
    expect(missing, `${doc} names commits that are not in the history`).toEqual([]);
  });

  it('every commit a results file records is in the history (or the file awaits a re-run)', () => {
    const problems: string[] = [];
    for (const file of tracked) {
      if (!file.endsWith('.json')) continue;
      const commits = commitsIn(JSON.parse(readFileSync(path.join(root, file), 'utf8')));
      if (commits.length === 0) problems.push(`${file}: records no commit`);
      for (const sha of commits) {
        if (inHistory(sha)) continue;
        if (AWAITING_RERUN[file] === sha) continue;
        problems.push(`${file}: records commit ${sha}, which is not in the history; re-run it (do not edit the commit)`);
      }
    }
    for (const [file, sha] of Object.entries(AWAITING_RERUN)) {
      const json: unknown = tracked.has(file) ? JSON.parse(readFileSync(path.join(root, file), 'utf8')) : null;
      if (json === null || !commitsIn(json).includes(sha) || inHistory(sha))
        problems.push(`${file}: listed as awaiting a re-run of ${sha.slice(0, 7)}, which it no longer records: drop it from AWAITING_RERUN`);
    }
    expect(problems).toEqual([]);
  });

  it('every earlier results file a doc cites records commits in the history', () => {
    const problems: string[] = [];
    for (const doc of DOCS)
      for (const ref of refs(readFileSync(path.join(root, doc), 'utf8'))) {
        if (ref.commit === null || badRef(ref)) continue;
        const json: unknown = JSON.parse(git(['show', `${ref.commit}:${ref.file}`]));
        for (const sha of commitsIn(json)) if (!inHistory(sha)) problems.push(`${doc}: ${ref.file}@${ref.commit} records commit ${sha}, not in the history`);
      }
    expect(problems).toEqual([]);
  });
});

// ---- Cited figures: each compared with the value at its path in its results file ----

const CITING_DOCS = ['README.md', 'docs/benchmarks.md', 'docs/operations.md', 'docs/security.md', 'docs/console.md', ...DECISION_RECORDS, ...GUIDES];

/** Lines of a doc (outside fenced code) bearing figures that are not inside a citation. */
function uncitedFigures(doc: string, onlyMeasurements: boolean, within?: (section: Section) => boolean): string[] {
  const out: string[] = [];
  for (const line of parse(doc)) {
    if (within && !within(line.section)) continue;
    if (/^#{1,6}\s/.test(line.text)) continue;
    const bare = prose(line.text.replace(CITATION, ' '));
    if (onlyMeasurements && !MEASUREMENT.test(bare)) continue;
    const figures = [...bare.matchAll(FIGURE)].map((m) => m[0]);
    const table = /^\s*\|/.test(line.text) && !/^\s*\|[\s:|-]*$/.test(line.text);
    if (table) {
      // A table's cells: every cell with a number is cited (its units sit in the header).
      // CITATION is global (it is used to find every citation), so its test() would carry lastIndex from one cell to the next.
      const cited = new RegExp(CITATION.source);
      for (const cell of line.text.split('|').slice(1, -1)) if (!cited.test(cell) && BARE_NUMBER.test(prose(cell))) figures.push(cell.trim());
    }
    if (figures.length > 0) out.push(`${doc}:${line.n}: ${figures.join(' | ')}`);
  }
  return out;
}

const inSummary = (s: Section): boolean => {
  for (let x: Section | null = s; x; x = x.parent) if (x.title === 'Summary') return true;
  return false;
};

describe('cited figures equal the values in their results files', () => {
  it('every doc that cites figures is one this file reads', () => {
    let everywhere: string[] = [];
    try {
      everywhere = git(['grep', '-l', '-E', String.raw`\]\([^)]*bench/results/[^)#]*#`, '--', '*.md']).split('\n').filter(Boolean);
    } catch {
      // git grep exits 1 when nothing matches.
    }
    expect(everywhere.filter((d) => !CITING_DOCS.includes(d))).toEqual([]);
  });

  it.each(CITING_DOCS)('every figure %s cites matches its results file, rounded as written', (doc) => {
    const problems: string[] = [];
    const files = new Map<string, unknown>();
    for (const c of citations(doc)) {
      const where = `${doc}:${c.line} [${c.text}](…${c.file}#${c.path})`;
      if (!tracked.has(c.file)) {
        problems.push(`${where}: ${c.file} is not a committed results file`);
        continue;
      }
      if (!files.has(c.file)) files.set(c.file, JSON.parse(readFileSync(path.join(root, c.file), 'utf8')));
      const value = valueAt(files.get(c.file), c.path);
      const written = writtenNumber(c.text);
      if (typeof value === 'string') problems.push(`${where}: ${value}`);
      else if (written === null) problems.push(`${where}: the link's text must hold exactly one number`);
      else if (!matchesAsWritten(written, value)) problems.push(`${where}: the file holds ${value}`);
    }
    expect(problems).toEqual([]);
  });

  it('the README states no figure without its citation', () => {
    expect(uncitedFigures('README.md', false)).toEqual([]);
  });

  it("docs/benchmarks.md's summary table cites every figure of its current and baseline columns", () => {
    const rows = parse('docs/benchmarks.md').filter((l) => inSummary(l.section) && /^\s*\|/.test(l.text));
    expect(rows.length, 'docs/benchmarks.md has a "## Summary" table').toBeGreaterThan(2);
    const cells = (text: string) => text.split('|').slice(1, -1).map((c) => c.trim());
    const header = cells(rows[0]!.text);
    const measured = header.flatMap((h, i) => (/^(current|baseline)/i.test(h) ? [i] : []));
    expect(measured.length, 'the table has its "Current figure" and "Baseline" columns').toBe(2);
    const problems: string[] = [];
    for (const row of rows.slice(2)) {
      for (const i of measured) {
        const rest = prose((cells(row.text)[i] ?? '').replace(CITATION, ' '));
        if (BARE_NUMBER.test(rest)) problems.push(`docs/benchmarks.md:${row.n}: "${header[i]!}" holds a number with no citation: ${rest.trim()}`);
      }
    }
    // Prose in the section outside the table cites its figures too.
    problems.push(...uncitedFigures('docs/benchmarks.md', false, inSummary).filter((l) => !rows.some((r) => l.startsWith(`docs/benchmarks.md:${r.n}:`))));
    expect(problems).toEqual([]);
  });

  it.each(GUIDES)('%s cites every measured figure', (doc) => {
    expect(uncitedFigures(doc, true)).toEqual([]);
  });

  it.each(DECISION_RECORDS)('%s cites every measured figure', (doc) => {
    expect(uncitedFigures(doc, true)).toEqual([]);
  });
});

describe('the citation rules themselves', () => {
  it('reads paths, selectors and scales, and compares as written', () => {
    const json = { web: { p50_ms: 821.4 }, results: [{ name: 'bare', p50: 2 }, { name: 'vap', p50: 3.25 }], share: 0.1234 };
    expect(valueAt(json, 'web.p50_ms')).toBe(821.4);
    expect(valueAt(json, 'results.name=vap.p50')).toBe(3.25);
    expect(valueAt(json, 'results.0.p50')).toBe(2);
    expect(valueAt(json, 'web.p50_ms/1000')).toBeCloseTo(0.8214);
    expect(valueAt(json, 'share*100')).toBeCloseTo(12.34);
    expect(valueAt(json, 'web.p95_ms')).toMatch(/no value/);
    expect(valueAt(json, 'results')).toMatch(/not a number/);
    expect(valueAt({ 'first page (all)': { p50: 1.5 } }, 'first%20page%20%28all%29.p50')).toBe(1.5);
    expect(writtenNumber('3,500 requests/s')).toEqual({ value: 3500, decimals: 0 });
    expect(writtenNumber('0.82 s')).toEqual({ value: 0.82, decimals: 2 });
    expect(writtenNumber('821 to 900 ms')).toBeNull();
    expect(matchesAsWritten({ value: 821, decimals: 0 }, 821.4)).toBe(true);
    expect(matchesAsWritten({ value: 0.82, decimals: 2 }, 0.8214)).toBe(true);
    expect(matchesAsWritten({ value: 822, decimals: 0 }, 821.4)).toBe(false);
    expect(matchesAsWritten({ value: 0.8, decimals: 1 }, 0.86)).toBe(false);
  });
});
