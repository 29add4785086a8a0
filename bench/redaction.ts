// Benchmark: the time of personal-data redaction (shared/pii.ts, findPii) and of an agent test's `matches`
// pattern (agent-tests/patterns.ts, RE2) against the length of the text, up to the caps of shared/text-caps.ts,
// on the hostile texts of issue 50 and on an ordinary transcript. Baselines, measured in the same run and
// interleaved with the rest (each round runs every case once): the old written-email pattern, which a
// backtracking engine runs in quadratic time on a run of local-part characters, and JavaScript's own engine on
// `^(a+)+$` (exponential: shown at 16-24 characters only).
//   npm run bench:redaction   [BENCH_SAMPLES=100]
import { RE2JS } from 're2js';
import { findPii } from '../shared/pii.ts';
import { MATCHED_TEXT_MAX, MESSAGE_CONTENT_MAX, TOOL_OUTPUT_MAX } from '../shared/text-caps.ts';
import { compilePattern, patternMatches } from '../control-plane/src/modules/agent-tests/patterns.ts';
import { nearestRank } from './support/bench-database.ts';
import { writeResults } from './support/results.ts';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 100);
const WARMUP = 3;
const LENGTHS = [1000, 2000, 4000, 8000, MESSAGE_CONTENT_MAX, TOOL_OUTPUT_MAX];
/** The quadratic baseline costs seconds above this; fewer samples there (recorded). */
const BASELINE_FULL_UP_TO = 4000;
const BASELINE_SAMPLES_ABOVE = 5;

const OLD_WRITTEN_EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b/g;
const TRANSCRIPT =
  'Agent: Bright Smiles dental, how can I help? Caller: Hi, I need to move my appointment, my number is 415 555 0123 and ' +
  'my email is john dot smith at example dot com. I was born on March 14 1985 and I live at 12 Main Street. ';

const fill = (unit: string, n: number) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
const redactionCases: Record<string, (n: number) => string> = {
  one_word: (n) => 'a'.repeat(n),
  digits_spoken: (n) => fill('1 ', n),
  cards: (n) => fill('4111 1111 1111 1111 ', n),
  phone_list: (n) => fill('415-555-0123, ', n),
  spoken_at: (n) => fill('at a dot ', n),
  spaces: (n) => `1${' '.repeat(n - 8)}Main St`,
  transcript: (n) => fill(TRANSCRIPT, n),
};

type Series = Record<string, Record<number, number[]>>;
const redaction: Series = {};
const baselineEmail: Record<number, number[]> = {};
const re2: Record<number, number[]> = {};
const nativeExp: Record<number, number[]> = {};
const re2Exp: Record<number, number[]> = {};
const EXP_LENGTHS = [16, 18, 20, 22, 24];

const time = (f: () => unknown) => {
  const t = performance.now();
  f();
  return performance.now() - t;
};
const push = (o: Record<number, number[]>, k: number, v: number) => (o[k] ??= []).push(v);

const texts = Object.fromEntries(Object.entries(redactionCases).map(([k, f]) => [k, Object.fromEntries(LENGTHS.map((n) => [n, f(n)]))])) as Record<string, Record<number, string>>;
const hostilePattern = compilePattern('^(a+)+$');
if (!('re' in hostilePattern)) throw new Error('the pattern should compile');
const patternTexts = Object.fromEntries(LENGTHS.filter((n) => n <= MATCHED_TEXT_MAX).map((n) => [n, `${'a'.repeat(n - 1)}!`]));

for (let i = 0; i < WARMUP + SAMPLES; i++) {
  const keep = i >= WARMUP;
  for (const [name, byLength] of Object.entries(texts)) {
    for (const n of LENGTHS) {
      const t = time(() => findPii(byLength[n]!));
      if (keep) push((redaction[name] ??= {}), n, t);
    }
  }
  for (const n of LENGTHS) {
    if (n > BASELINE_FULL_UP_TO && i >= WARMUP + BASELINE_SAMPLES_ABOVE) continue;
    const text = texts.one_word![n]!;
    const t = time(() => [...text.matchAll(OLD_WRITTEN_EMAIL)]);
    if (keep) push(baselineEmail, n, t);
  }
  for (const [n, text] of Object.entries(patternTexts)) {
    const t = time(() => patternMatches(hostilePattern.re, text));
    if (keep) push(re2, Number(n), t);
  }
  if (i < WARMUP + 20) {
    // Exponential: 20 samples are minutes enough at 24 characters.
    for (const n of EXP_LENGTHS) {
      const text = `${'a'.repeat(n)}!`;
      const native = /^(a+)+$/i;
      const tn = time(() => native.test(text));
      const tr = time(() => RE2JS.compile('^(a+)+$', RE2JS.CASE_INSENSITIVE).test(text));
      if (keep) {
        push(nativeExp, n, tn);
        push(re2Exp, n, tr);
      }
    }
  }
}

const summary = (xs: number[]) => ({ samples: xs.length, min_ms: nearestRank(xs, 0.01), p50_ms: nearestRank(xs, 50), p95_ms: nearestRank(xs, 95) });
const bySize = (o: Record<number, number[]>) => Object.fromEntries(Object.entries(o).map(([n, xs]) => [n, summary(xs)]));
/**
 * The exponent k of time ~ length^k, fitted (least squares, log-log) to the p50s from 4,000 characters up, where
 * times are well above the timer's resolution: 1 is linear growth, 2 quadratic. Also fitted to the fastest
 * sample of each length: on a shared machine a longer run is more often preempted, which bends the p50 upwards.
 */
const growth = (o: Record<number, number[]>, p = 50) => {
  const pts = Object.keys(o)
    .map(Number)
    .filter((n) => n >= 4000)
    .map((n) => [Math.log(n), Math.log(Math.max(0.05, nearestRank(o[n]!, p)))] as const);
  const mx = pts.reduce((a, [x]) => a + x, 0) / pts.length;
  const my = pts.reduce((a, [, y]) => a + y, 0) / pts.length;
  const k = pts.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / pts.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return Math.round(k * 100) / 100;
};

const results = {
  samples: SAMPLES,
  lengths: LENGTHS,
  caps: { message_content: MESSAGE_CONTENT_MAX, tool_output: TOOL_OUTPUT_MAX, matched_text: MATCHED_TEXT_MAX },
  note:
    'times in ms per call; growth = the exponent k of p50 ~ length^k fitted from 4,000 characters up (1 linear, 2 quadratic). ' +
    `The quadratic baseline has ${BASELINE_SAMPLES_ABOVE} samples above ${BASELINE_FULL_UP_TO} characters; the exponential ones 20 samples.`,
  redaction: Object.fromEntries(Object.entries(redaction).map(([k, o]) => [k, { growth: growth(o), growth_fastest: growth(o, 0.01), by_length: bySize(o) }])),
  baseline_old_email_pattern_one_word: { growth: growth(baselineEmail), growth_fastest: growth(baselineEmail, 0.01), by_length: bySize(baselineEmail) },
  matches_re2_hostile_pattern: { pattern: '^(a+)+$', growth: growth(re2), growth_fastest: growth(re2, 0.01), by_length: bySize(re2) },
  baseline_native_regexp_hostile_pattern: { pattern: '^(a+)+$', by_length: bySize(nativeExp) },
  re2_same_short_texts: { pattern: '^(a+)+$', by_length: bySize(re2Exp) },
};
writeResults('redaction', results);
for (const [k, v] of Object.entries(results.redaction)) console.log(k.padEnd(14), 'growth', v.growth, v.growth_fastest, JSON.stringify(v.by_length));
console.log('old email', results.baseline_old_email_pattern_one_word.growth, JSON.stringify(results.baseline_old_email_pattern_one_word.by_length));
console.log('re2', results.matches_re2_hostile_pattern.growth, JSON.stringify(results.matches_re2_hostile_pattern.by_length));
console.log('native exp', JSON.stringify(results.baseline_native_regexp_hostile_pattern.by_length));
console.log('re2 exp', JSON.stringify(results.re2_same_short_texts.by_length));
