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

import { alt, ORDINAL_TEENS, ORDINAL_UNITS, TEEN_WORD, TENS_WORD, tokenize, UNIT_WORD, UNITS, TEENS, TENS, wordDigits, type PiiMatch, type Token } from './pii-words.ts';
import { spokenEmails, writtenEmails } from './pii-email.ts';
export { PII_TYPES, type PiiMatch, type PiiType } from './pii-words.ts';

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

/** Whether the gap between two pieces joins them: no line break, at most two characters besides spaces. */
function joinable(text: string, from: number, to: number): boolean {
  let marks = 0;
  for (let i = from; i < to; i++) {
    const c = text[i]!;
    if (c === '\n') return false;
    if (!/\s/.test(c) && ++marks > 2) return false;
  }
  return true;
}

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
      if (!toks[k] || !joinable(text, run.pieces.at(-1)!.end, toks[k]!.start)) break;
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
 * either side is looked at the same way. Done as one greedy pass over the candidates (longest first, then
 * leftmost), which picks what "the best in the range, then each side" picks, in linear time: a candidate spans
 * at most 19 digits, so each piece starts a bounded number of them.
 */
function classifyRun(text: string, run: Run, out: PiiMatch[]): void {
  const n = run.pieces.length;
  const digitsBefore = [0];
  for (const p of run.pieces) digitsBefore.push(digitsBefore.at(-1)! + p.digits.length);
  const taken = new Uint8Array(n);
  const free = (a: number, b: number) => {
    for (let i = a; i <= b; i++) if (taken[i]) return false;
    return true;
  };
  const take = (a: number, b: number) => taken.fill(1, a, b + 1);
  // Cards: every stretch of whole pieces with 13-19 digits that passes Luhn.
  const cards: { a: number; b: number; n: number }[] = [];
  for (let a = 0; a < n; a++) {
    if (!CARD_START.test(run.pieces[a]!.digits)) continue; // no card starts here
    let digits = '';
    for (let b = a; b < n; b++) {
      digits += run.pieces[b]!.digits;
      if (digits.length > 19) break;
      if (digits.length >= 13 && luhnValid(digits)) cards.push({ a, b, n: digits.length });
    }
  }
  cards.sort((x, y) => y.n - x.n || x.a - y.a);
  for (const c of cards) {
    if (!free(c.a, c.b)) continue;
    take(c.a, c.b);
    out.push({ type: 'card_number', start: c.a === 0 ? run.start : run.pieces[c.a]!.start, end: run.pieces[c.b]!.end });
  }
  // Stretches, within what the cards left: piece indexes after which a comma separates two pieces.
  const starts: number[] = [];
  for (let i = 0; i < n; i++) {
    if (taken[i]) continue;
    if (i === 0 || taken[i - 1] || run.seps[i - 1]!.includes(',')) starts.push(i);
  }
  const endOf = (s: number) => {
    let i = starts[s]!;
    while (i + 1 < n && !taken[i + 1] && !run.seps[i]!.includes(',')) i++;
    return i;
  };
  const ends = starts.map((_, s) => endOf(s));
  const candidates: { a: number; b: number; width: number; s: number; m: PiiMatch }[] = [];
  for (let s = 0; s < starts.length; s++) {
    for (let width = 1; width <= MAX_NUMBER_DIGITS && s + width <= starts.length; width++) {
      const a = starts[s]!;
      const b = ends[s + width - 1]!;
      // Stretches on either side of a card are not one.
      if (width > 1 && ends[s + width - 2]! + 1 !== starts[s + width - 1]) break;
      if (digitsBefore[b + 1]! - digitsBefore[a]! > MAX_NUMBER_DIGITS) break;
      const m = numberIn(text, run, a, b);
      if (m) candidates.push({ a, b, width, s, m });
    }
  }
  candidates.sort((x, y) => y.width - x.width || x.s - y.s);
  for (const c of candidates) {
    if (!free(c.a, c.b)) continue;
    take(c.a, c.b);
    out.push(c.m);
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
  new RegExp(`(?<!\\b(?:a|an|the)\\s{1,8})\\b${HOUSE}${NAME}${SUFFIX}(?![\\p{L}])${DIRECTION}${UNIT}${CITY_STATE_ZIP}`, 'giu'),
  /\b(?:p\.?\s?o\.?|post\s+office)\s+box\s+\d+\b/gi,
  // UK postcodes, written in capitals (SW1A 1AA, M1 1AE).
  /\b[A-Z]{1,2}\d[A-Z\d]?\s+\d[A-Z]{2}\b/g,
];

function addresses(text: string, out: PiiMatch[]): void {
  for (const re of ADDRESS_PATTERNS) {
    re.lastIndex = 0;
    for (const m of text.matchAll(re)) out.push({ type: 'address', start: m.index, end: m.index + m[0].trimEnd().length });
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
  // Which characters a match already holds: an overlap check costs the candidate's length, and each character
  // lies in a bounded number of candidates, so claiming is linear (comparing with every match found was not).
  const held = new Uint8Array(text.length);
  const claim = (candidates: PiiMatch[]) => {
    for (const c of candidates.sort((a, b) => a.start - b.start || b.end - a.end)) {
      if (c.end <= c.start) continue;
      if (held.subarray(c.start, c.end).includes(1)) continue;
      held.fill(1, c.start, c.end);
      found.push(c);
    }
  };
  const emails: PiiMatch[] = [];
  writtenEmails(text, emails);
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
