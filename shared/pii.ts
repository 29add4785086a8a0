// Personal data in call text, found and replaced by typed placeholders (`[card_number]`, `[ssn]`, `[email]`,
// `[phone]`, `[date_of_birth]`, `[address]`), for organisations and agents in `redact_pii` mode (shared/privacy.ts).
// Used by the media worker before anything leaves it and by the control plane at its ingest boundary.
//
// Transcripts come from speech-to-text, so every type is found in its written form ("4111 1111 1111 1111",
// "john@example.com") and its spoken one ("four one one one ...", "john at example dot com", "born on march
// fourteenth nineteen eighty five"). The npm libraries looked at (redact-pii, @redactpii/node, openredaction)
// match written forms only; docs/decisions.md ("Privacy") says why this is one module of our own.
//
// Errs towards redacting: a placeholder too many costs a word of a transcript, one too few leaks a card number.

export const PII_TYPES = ['card_number', 'ssn', 'email', 'phone', 'date_of_birth', 'address'] as const;
export type PiiType = (typeof PII_TYPES)[number];

export interface PiiMatch {
  type: PiiType;
  start: number;
  end: number;
}

// ---- Number words -------------------------------------------------------------------------------------------

const UNITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
const TEENS = ['ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
const ORDINAL_UNITS = ['', 'first', 'second', 'third', 'fourth', 'fifth', 'sixth', 'seventh', 'eighth', 'ninth'];
const ORDINAL_TEENS = ['tenth', 'eleventh', 'twelfth', 'thirteenth', 'fourteenth', 'fifteenth', 'sixteenth', 'seventeenth', 'eighteenth', 'nineteenth'];

/** The digits a single number word stands for ("four" -> "4", "eleven" -> "11", "oh" -> "0"), or null. */
function wordDigits(word: string): string | null {
  const w = word.toLowerCase();
  if (w === 'oh' || w === 'o') return '0';
  const u = UNITS.indexOf(w);
  if (u >= 0) return String(u);
  const t = TEENS.indexOf(w);
  if (t >= 0) return String(10 + t);
  const tens = TENS.indexOf(w);
  if (tens >= 2) return `${tens}0`;
  return null;
}

const alt = (words: string[]) => words.filter(Boolean).join('|');
const UNIT_WORD = alt(UNITS.slice(1));
const TENS_WORD = alt(TENS);
const TEEN_WORD = alt(TEENS);

// ---- Tokens ---------------------------------------------------------------------------------------------------

interface Token {
  text: string;
  lower: string;
  start: number;
  end: number;
}

const TOKEN_RE = /\d+(?![\p{L}\d])|[\p{L}\d][\p{L}\d'’]*|[^\s\p{L}\d]/gu;

function tokenize(text: string): Token[] {
  const out: Token[] = [];
  for (const m of text.matchAll(TOKEN_RE)) out.push({ text: m[0], lower: m[0].toLowerCase(), start: m.index, end: m.index + m[0].length });
  return out;
}

// ---- Digit runs (card numbers, SSNs, phone numbers) ---------------------------------------------------------

/** One piece of a run of digits: a written group ("4111") or a spoken number ("four", "forty one", "double five"). */
interface Piece {
  digits: string;
  start: number;
  end: number;
  spoken: boolean;
}

interface Run {
  pieces: Piece[];
  /** The separators between pieces, one fewer than the pieces ('' for whitespace alone). */
  seps: string[];
  /** Where the run's span begins: a leading "+" or "(" is part of a phone number. */
  start: number;
  plus: boolean;
}

const JOINERS = new Set(['-', '.', '/', '(', ')', ',', '–', '—']);
const SPOKEN_JOINERS = new Set(['dash', 'hyphen']);

/** Reads a number at token i: returns the piece and the index after it, or null. */
function readPiece(toks: Token[], i: number): { piece: Piece; next: number } | null {
  const t = toks[i];
  if (!t) return null;
  if (/^\d+$/.test(t.text)) return { piece: { digits: t.text, start: t.start, end: t.end, spoken: false }, next: i + 1 };
  // "double five", "triple zero"
  if ((t.lower === 'double' || t.lower === 'triple') && toks[i + 1]) {
    const d = wordDigits(toks[i + 1]!.lower) ?? (/^\d$/.test(toks[i + 1]!.text) ? toks[i + 1]!.text : null);
    if (d && d.length === 1) return { piece: { digits: d.repeat(t.lower === 'double' ? 2 : 3), start: t.start, end: toks[i + 1]!.end, spoken: true }, next: i + 2 };
  }
  const d = wordDigits(t.lower);
  if (d === null) return null;
  // "forty one", "forty-one": one number.
  if (TENS.indexOf(t.lower) >= 2) {
    let j = i + 1;
    if (toks[j]?.text === '-' && toks[j]!.start === t.end) j++;
    const u = toks[j] ? UNITS.indexOf(toks[j]!.lower) : -1;
    if (u >= 1) return { piece: { digits: `${d[0]}${u}`, start: t.start, end: toks[j]!.end, spoken: true }, next: j + 1 };
  }
  return { piece: { digits: d, start: t.start, end: t.end, spoken: true }, next: i + 1 };
}

const isOh = (t: Token | undefined) => t?.lower === 'oh' || t?.lower === 'o';

/** Every maximal run of numbers joined by spaces or light punctuation. */
function digitRuns(text: string, toks: Token[]): Run[] {
  const runs: Run[] = [];
  let i = 0;
  while (i < toks.length) {
    // "oh" is a zero only inside a run, never the start of one ("Oh, four one five..." is no 0415).
    const first = isOh(toks[i]) ? null : readPiece(toks, i);
    if (!first) {
      i++;
      continue;
    }
    const prev = toks[i - 1];
    const plus = prev?.text === '+' && prev.end === toks[i]!.start;
    const paren = prev?.text === '(';
    const run: Run = { pieces: [first.piece], seps: [], start: plus || paren ? prev.start : first.piece.start, plus };
    let j = first.next;
    for (;;) {
      // Separators: up to two punctuation marks, or a spoken "dash".
      let k = j;
      let sep = '';
      while (k < toks.length && k - j < 2 && (JOINERS.has(toks[k]!.text) || SPOKEN_JOINERS.has(toks[k]!.lower))) sep += toks[k++]!.text;
      const gap = text.slice(run.pieces.at(-1)!.end, toks[k]?.start ?? text.length);
      if (!toks[k] || /[\n]/.test(gap) || gap.replace(/\s+/g, '').length > 2) break;
      const next = readPiece(toks, k);
      if (!next) break;
      run.pieces.push(next.piece);
      run.seps.push(sep.replace(/[()]/g, ''));
      j = next.next;
    }
    runs.push(run);
    i = j;
  }
  return runs;
}

export function luhnValid(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = digits.charCodeAt(digits.length - 1 - i) - 48;
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return digits.length > 0 && sum % 10 === 0;
}

/** Card networks' first digits: 2 (Mastercard 2-series), 3 (Amex, Diners, JCB), 4 (Visa), 5 (Mastercard), 6 (Discover, UnionPay). */
const CARD_START = /^[2-6]/;

const SSN_CONTEXT = /\b(social(\s+security)?|ssn|s\s*s\s*n|security\s+number)\b/i;
const PHONE_CONTEXT = /\b(phone|number|call|reach|cell|mobile|text|contact|dial)\b/i;
const within = (text: string, end: number, chars: number) => text.slice(Math.max(0, end - chars), end);

function validSsn(d: string): boolean {
  if (d.length !== 9) return false;
  const area = d.slice(0, 3);
  return area !== '000' && area !== '666' && area[0] !== '9' && d.slice(3, 5) !== '00' && d.slice(5) !== '0000';
}

/** NANP: area code and exchange start with 2-9. */
const nanp = (d: string) => d.length === 10 && /^[2-9]\d{2}[2-9]/.test(d);

/** The longest stretch of whole pieces in [lo, hi] with 13-19 digits that passes Luhn: a card number. */
function cardIn(run: Run, lo: number, hi: number): { a: number; b: number } | null {
  let best: { a: number; b: number; n: number } | null = null;
  for (let a = lo; a <= hi; a++) {
    let digits = '';
    for (let b = a; b <= hi; b++) {
      digits += run.pieces[b]!.digits;
      if (digits.length > 19) break;
      if (digits.length >= 13 && CARD_START.test(digits) && luhnValid(digits) && (!best || digits.length > best.n)) best = { a, b, n: digits.length };
    }
  }
  return best;
}

/** Pieces [a, b] of a run as an SSN or a phone number, or null. */
function numberIn(text: string, run: Run, a: number, b: number): PiiMatch | null {
  const pieces = run.pieces.slice(a, b + 1);
  const seps = run.seps.slice(a, b);
  const all = pieces.map((p) => p.digits).join('');
  const span = { start: a === 0 ? run.start : pieces[0]!.start, end: pieces.at(-1)!.end };
  const written = pieces.every((p) => !p.spoken);
  const shape = pieces.map((p) => p.digits.length).join('-');
  const before = within(text, span.start, 60);
  const plus = a === 0 && run.plus;

  if (all.length === 9 && validSsn(all)) {
    const formatted = written && shape === '3-2-4' && seps.every((s) => s === '-' || s === '' || s === '.');
    if (formatted || SSN_CONTEXT.test(before)) return { type: 'ssn', ...span };
  }
  // Phone numbers: international with +, NANP with or without its 1, national numbers with a trunk 0.
  const isPhone =
    (plus && all.length >= 8 && all.length <= 15) ||
    (all.startsWith('00') && all.length >= 10 && all.length <= 17) ||
    nanp(all) ||
    (all.length === 11 && all[0] === '1' && nanp(all.slice(1))) ||
    (all.length >= 10 && all.length <= 11 && all[0] === '0' && all[1] !== '0') ||
    (all.length === 7 && /^[2-9]/.test(all) && ((written && shape === '3-4') || (!written && PHONE_CONTEXT.test(before))));
  if (isPhone) return { type: 'phone', ...span };
  // A long run of digits read out with phone or identity context and no known shape: an account or an unusual
  // number; redacted as a phone number rather than kept.
  if (all.length >= 8 && all.length <= 15 && !written && (PHONE_CONTEXT.test(before) || SSN_CONTEXT.test(before))) return { type: 'phone', ...span };
  return null;
}

/** The most digits an SSN or phone number has ("00" and a 15-digit E.164 number). */
const MAX_NUMBER_DIGITS = 17;

/**
 * Card numbers first, anywhere in the run; then SSNs and phone numbers, from the run's comma-separated stretches
 * ("415-555-0123, 12" holds a phone number and a 12): the widest stretch that is one wins, and what lies on
 * either side is looked at the same way. Windows are bounded by digit count, so a long run costs linear time.
 */
function classifyRun(text: string, run: Run, out: PiiMatch[]): void {
  const digitsBefore = [0];
  for (const p of run.pieces) digitsBefore.push(digitsBefore.at(-1)! + p.digits.length);
  const range = (lo: number, hi: number): void => {
    if (lo > hi) return;
    const card = cardIn(run, lo, hi);
    if (card) {
      out.push({ type: 'card_number', start: card.a === 0 ? run.start : run.pieces[card.a]!.start, end: run.pieces[card.b]!.end });
      range(lo, card.a - 1);
      range(card.b + 1, hi);
      return;
    }
    // Stretches: piece indexes after which a comma separates two pieces.
    const starts = [lo];
    for (let i = lo; i < hi; i++) if (run.seps[i]!.includes(',')) starts.push(i + 1);
    const ends = starts.slice(1).map((s) => s - 1).concat(hi);
    for (let width = Math.min(starts.length, MAX_NUMBER_DIGITS); width >= 1; width--) {
      for (let s = 0; s + width <= starts.length; s++) {
        const a = starts[s]!;
        const b = ends[s + width - 1]!;
        if (digitsBefore[b + 1]! - digitsBefore[a]! > MAX_NUMBER_DIGITS) continue;
        const m = numberIn(text, run, a, b);
        if (m) {
          out.push(m);
          range(lo, a - 1);
          range(b + 1, hi);
          return;
        }
      }
    }
  };
  range(0, run.pieces.length - 1);
}

// ---- Email addresses -----------------------------------------------------------------------------------------

const WRITTEN_EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b/g;
/** Top-level domains a spoken address may end with ("... dot com"). */
const SPOKEN_TLDS = new Set(
  'com net org edu gov mil io co uk us ca de fr es it nl be ch au nz in jp cn br mx info biz me ai app dev tv eu ie se no dk fi pl pt za sg hk kr'.split(' '),
);
const LOCAL_JOINERS = new Map([
  ['dot', '.'],
  ['period', '.'],
  ['underscore', '_'],
  ['dash', '-'],
  ['hyphen', '-'],
  ['.', '.'],
  ['_', '_'],
  ['-', '-'],
]);
const isLabel = (t: Token | undefined) => !!t && /^[\p{L}\d][\p{L}\d'-]*$/u.test(t.text);
/** The last token of a label written with hyphens ("my-company" is three tokens). */
function hyphenated(toks: Token[], j: number): number {
  while (toks[j + 1]?.text === '-' && toks[j + 1]!.start === toks[j]!.end && isLabel(toks[j + 2]) && toks[j + 2]!.start === toks[j + 1]!.end) j += 2;
  return j;
}

/** "john at example dot com", "j o h n dot smith at mail dot example dot co dot uk", "john@example dot com". */
function spokenEmails(toks: Token[], out: PiiMatch[]): void {
  for (let i = 1; i < toks.length; i++) {
    const at = toks[i]!;
    if (at.lower !== 'at' && at.text !== '@') continue;
    // The domain: labels joined by "dot", ending in a known top-level domain.
    let j = i + 1;
    let labels = 0;
    let lastTld = -1;
    while (isLabel(toks[j])) {
      const end = hyphenated(toks, j);
      labels++;
      if (labels >= 2 && end === j && SPOKEN_TLDS.has(toks[j]!.lower)) lastTld = j;
      const dot = toks[end + 1];
      if (!(dot && (dot.lower === 'dot' || dot.text === '.') && isLabel(toks[end + 2]))) break;
      j = end + 2;
    }
    if (lastTld < 0) continue;
    // The local part: one word, or words joined by "dot"/"underscore", or letters spelled one by one.
    let k = i - 1;
    if (!isLabel(toks[k])) continue;
    const single = (t: Token | undefined) => !!t && /^[\p{L}\d]$/u.test(t.text);
    if (single(toks[k])) while (single(toks[k - 1])) k--;
    while (k >= 2 && LOCAL_JOINERS.has(toks[k - 1]!.lower) && isLabel(toks[k - 2])) {
      k -= 2;
      if (single(toks[k])) while (single(toks[k - 1])) k--;
    }
    out.push({ type: 'email', start: toks[k]!.start, end: toks[lastTld]!.end });
  }
}

// ---- Dates of birth ------------------------------------------------------------------------------------------

const MONTH = '(?:january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\\.?';
const ORDINAL_WORD = `(?:(?:twenty|thirty)[\\s-]+)?(?:${alt(ORDINAL_UNITS)})|${alt(ORDINAL_TEENS)}|twentieth|thirtieth`;
const DAY_WORD = `(?:(?:twenty|thirty)[\\s-]+)?(?:${UNIT_WORD})|${TEEN_WORD}|twenty|thirty`;
const DAY = `(?:(?:[12]\\d|3[01]|0?[1-9])(?:st|nd|rd|th)?|${ORDINAL_WORD}|${DAY_WORD})`;
const YEAR_TAIL = `(?:(?:oh|o)[\\s-]+(?:${UNIT_WORD})|(?:${TENS_WORD})(?:[\\s-]+(?:${UNIT_WORD}))?|${TEEN_WORD}|hundred)`;
const YEAR_WORDS = `(?:nineteen[\\s-]+${YEAR_TAIL}|two[\\s-]+thousand(?:[\\s-]+(?:and[\\s-]+)?(?:(?:${TENS_WORD})(?:[\\s-]+(?:${UNIT_WORD}))?|${TEEN_WORD}|${UNIT_WORD}))?|twenty[\\s-]+(?:${TEEN_WORD}|(?:${TENS_WORD})(?:[\\s-]+(?:${UNIT_WORD}))?))`;
const YEAR = `(?:(?:19|20)\\d{2}|'\\d{2}|${YEAR_WORDS})`;

const DATE_PATTERNS: RegExp[] = [
  // March 14, 1985 / march fourteenth nineteen eighty five / Mar. 14th
  new RegExp(`\\b${MONTH}\\s+(?:the\\s+)?(?<day>${DAY})\\b(?:,?\\s+(?:of\\s+|in\\s+)?(?<year>${YEAR})\\b)?`, 'giu'),
  // 14 March 1985 / the fourteenth of march, nineteen eighty five
  new RegExp(`\\b(?:the\\s+)?(?<day>${DAY})\\s+(?:of\\s+)?${MONTH}(?![\\p{L}])(?:,?\\s+(?<year>${YEAR})\\b)?`, 'giu'),
  // 03/14/1985, 14.03.1985, 3-14-85
  /\b(?<m>\d{1,2})[/.-](?<d>\d{1,2})[/.-](?<year>\d{4}|\d{2})\b/g,
  // 1985-03-14
  /\b(?<year>(?:19|20)\d{2})[-/.](?<m>\d{1,2})[-/.](?<d>\d{1,2})\b/g,
];
const DOB_CONTEXT = /\b(born|birth|birthday|dob|d\s*o\s*b|d\.o\.b\.?)\b/i;

/** A year (digits or words), or null when it cannot be read. */
function yearValue(raw: string): number | null {
  const s = raw.toLowerCase().replace(/[-\s]+/g, ' ').trim();
  if (/^\d{4}$/.test(s)) return Number(s);
  if (/^'\d{2}$/.test(s)) return null;
  const words = s.split(' ').filter((w) => w !== 'and');
  const small = (ws: string[]): number => {
    let n = 0;
    for (const w of ws) {
      if (w === 'oh' || w === 'o') continue;
      const u = UNITS.indexOf(w);
      const t = TEENS.indexOf(w);
      const tens = TENS.indexOf(w);
      if (u >= 0) n += u;
      else if (t >= 0) n += 10 + t;
      else if (tens >= 2) n += tens * 10;
    }
    return n;
  };
  if (words[0] === 'nineteen') return words[1] === 'hundred' ? 1900 : 1900 + small(words.slice(1));
  if (words[0] === 'two' && words[1] === 'thousand') return 2000 + small(words.slice(2));
  if (words[0] === 'twenty') return 2000 + small(words.slice(1));
  return null;
}

function dates(text: string, out: PiiMatch[], now: Date): void {
  const recent = now.getUTCFullYear() - 10;
  for (const re of DATE_PATTERNS) {
    re.lastIndex = 0;
    for (const m of text.matchAll(re)) {
      const g = m.groups ?? {};
      if (g.m !== undefined && g.d !== undefined) {
        const a = Number(g.m);
        const b = Number(g.d);
        // Month/day in either order (US or European), each in range.
        if (!((a >= 1 && a <= 12 && b >= 1 && b <= 31) || (b >= 1 && b <= 12 && a >= 1 && a <= 31))) continue;
      }
      const year = g.year ? yearValue(g.year) : null;
      const context = DOB_CONTEXT.test(within(text, m.index, 80));
      // A date is a date of birth when the caller says so, or when its year is long past (few calls are about
      // a day more than ten years ago; the over-redaction of those is accepted).
      if (context || (year !== null && year >= 1900 && year <= recent)) out.push({ type: 'date_of_birth', start: m.index, end: m.index + m[0].length });
    }
  }
}

// ---- Street addresses ------------------------------------------------------------------------------------------

const SUFFIX =
  '(?:(?:street|avenue|road|boulevard|lane|drive|court|place|way|terrace|parkway|circle|highway|square|trail|crescent|close|row|alley|plaza|gardens|mews)|(?:st|ave|rd|blvd|ln|dr|ct|pl|ter|pkwy|cir|hwy|sq|trl)\\.?)';
/** Words that never stand in a street's name: "5 miles down the road" is no address. */
const NOT_NAME = '(?:the|a|an|of|and|or|to|at|in|on|for|with|my|your|our|their|this|that|from|down|up|across|off|by|near|is|are|was|way|miles?|blocks?|minutes?|hours?)';
const HOUSE_WORDS = `(?:(?:${UNIT_WORD}|${TEEN_WORD}|${TENS_WORD}|hundred|thousand|zero|oh)[\\s-]+){1,6}`;
const HOUSE = `(?:\\d{1,6}(?:[A-Za-z](?![\\p{L}]))?(?:-\\d{1,4})?\\s+|${HOUSE_WORDS})`;
const NAME = `(?:(?!${NOT_NAME}\\b)[\\p{L}\\d][\\p{L}\\d'.-]*\\s+){1,4}`;
const DIRECTION = '(?:\\s+(?:n|s|e|w|ne|nw|se|sw|north|south|east|west|northeast|northwest|southeast|southwest)\\b\\.?)?';
const UNIT = '(?:,?\\s+(?:apt|apartment|suite|ste|unit|flat|floor|#)\\.?\\s*#?\\s*[\\p{L}\\d-]+)?';
const CITY_STATE_ZIP = '(?:,\\s*[\\p{L} .]{2,40},?\\s+[A-Z]{2}\\s+\\d{5}(?:-\\d{4})?)?';

const ADDRESS_PATTERNS: RegExp[] = [
  new RegExp(`(?<!\\b(?:a|an|the)\\s+)\\b${HOUSE}${NAME}${SUFFIX}(?![\\p{L}])${DIRECTION}${UNIT}${CITY_STATE_ZIP}`, 'giu'),
  /\b(?:p\.?\s?o\.?|post\s+office)\s+box\s+\d+\b/gi,
  // UK postcodes, written in capitals (SW1A 1AA, M1 1AE).
  /\b[A-Z]{1,2}\d[A-Z\d]?\s+\d[A-Z]{2}\b/g,
];

function addresses(text: string, out: PiiMatch[]): void {
  for (const re of ADDRESS_PATTERNS) {
    re.lastIndex = 0;
    for (const m of text.matchAll(re)) out.push({ type: 'address', start: m.index, end: m.index + m[0].replace(/\s+$/, '').length });
  }
}

// ---- Together ----------------------------------------------------------------------------------------------------

/**
 * Every piece of personal data in `text`, without overlaps, in order. Earlier kinds win an overlap: emails,
 * then dates of birth and addresses (which contain digits), then runs of digits.
 */
export function findPii(text: string, opts: { now?: Date } = {}): PiiMatch[] {
  if (!text) return [];
  const found: PiiMatch[] = [];
  const claim = (candidates: PiiMatch[]) => {
    for (const c of candidates.sort((a, b) => a.start - b.start || b.end - a.end)) {
      if (c.end <= c.start) continue;
      if (found.some((f) => c.start < f.end && f.start < c.end)) continue;
      found.push(c);
    }
  };
  const emails: PiiMatch[] = [];
  for (const m of text.matchAll(WRITTEN_EMAIL)) emails.push({ type: 'email', start: m.index, end: m.index + m[0].length });
  const toks = tokenize(text);
  spokenEmails(toks, emails);
  claim(emails);
  const dob: PiiMatch[] = [];
  dates(text, dob, opts.now ?? new Date());
  claim(dob);
  const addr: PiiMatch[] = [];
  addresses(text, addr);
  claim(addr);
  const digits: PiiMatch[] = [];
  for (const run of digitRuns(text, toks)) classifyRun(text, run, digits);
  claim(digits);
  return found.sort((a, b) => a.start - b.start);
}

/** `text` with each piece of personal data replaced by its typed placeholder. */
export function redactPii(text: string, opts: { now?: Date } = {}): string {
  const found = findPii(text, opts);
  if (!found.length) return text;
  let out = '';
  let at = 0;
  for (const f of found) {
    out += `${text.slice(at, f.start)}[${f.type}]`;
    at = f.end;
  }
  return out + text.slice(at);
}
