// Email addresses in call text, written and spoken, for shared/pii.ts (linear time: see below).

import { type PiiMatch, type Token } from './pii-words.ts';

// ---- Email addresses -----------------------------------------------------------------------------------------

// Written addresses ("john.smith@example.co.uk"), as /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b/g
// would find them, by a scanner anchored on each "@": that pattern, run by a backtracking engine, reads to the end
// of every run of local-part characters that has no "@" (quadratic time on "aaaa..."). Here each character is
// read at most twice: once leftwards, as the local part of the "@" that ends its run, once rightwards, as a domain.
const isLocalChar = (c: number) => isAlnum(c) || c === 46 /* . */ || c === 95 /* _ */ || c === 37 /* % */ || c === 43 /* + */ || c === 45; /* - */
const isDomainChar = (c: number) => isAlnum(c) || c === 45 /* - */;
const isAlnum = (c: number) => (c >= 48 && c <= 57) || isLetter(c);
const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
/** A regex word character (\w), for the pattern's closing \b. */
const isWordChar = (c: number) => isAlnum(c) || c === 95;

/** Where the domain after the "@" at `at` ends (the longest that ends in a 2-24 letter top-level label), or -1. */
function domainEnd(text: string, at: number): number {
  let best = -1;
  let i = at + 1;
  let labels = 0;
  for (;;) {
    const start = i;
    while (i < text.length && isDomainChar(text.charCodeAt(i))) i++;
    if (i === start) break; // an empty label: the domain ends before it
    labels++;
    if (labels >= 2) {
      // The top-level label: its leading letters, ending at a word boundary (it may stop before a "-").
      let l = start;
      while (l < i && isLetter(text.charCodeAt(l))) l++;
      const n = l - start;
      if (n >= 2 && n <= 24 && (l === text.length || !isWordChar(text.charCodeAt(l)))) best = l;
    }
    if (text.charCodeAt(i) !== 46 /* . */) break;
    i++;
  }
  return best;
}

export function writtenEmails(text: string, out: PiiMatch[]): void {
  let lastEnd = 0;
  for (let at = text.indexOf('@'); at >= 0; at = text.indexOf('@', at + 1)) {
    if (at < lastEnd) continue;
    let start = at;
    while (start > lastEnd && isLocalChar(text.charCodeAt(start - 1))) start--;
    if (start === at) continue;
    const end = domainEnd(text, at);
    if (end < 0) continue;
    out.push({ type: 'email', start, end });
    lastEnd = end;
  }
}
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
// Bounds on how far an "at" looks either way, so that text made of "at a dot at a dot ..." costs linear time;
// an address longer than these is not spoken.
const MAX_HYPHENS = 16;
const MAX_DOMAIN_LABELS = 12;
const MAX_LOCAL_TOKENS = 64;
const isLabel = (t: Token | undefined) => !!t && /^[\p{L}\d][\p{L}\d'-]*$/u.test(t.text);
/** The last token of a label written with hyphens ("my-company" is three tokens). */
function hyphenated(toks: Token[], j: number): number {
  for (let n = 0; n < MAX_HYPHENS; n++) {
    if (!(toks[j + 1]?.text === '-' && toks[j + 1]!.start === toks[j]!.end && isLabel(toks[j + 2]) && toks[j + 2]!.start === toks[j + 1]!.end)) break;
    j += 2;
  }
  return j;
}

/** "john at example dot com", "j o h n dot smith at mail dot example dot co dot uk", "john@example dot com". */
export function spokenEmails(toks: Token[], out: PiiMatch[]): void {
  for (let i = 1; i < toks.length; i++) {
    const at = toks[i]!;
    if (at.lower !== 'at' && at.text !== '@') continue;
    // The domain: labels joined by "dot", ending in a known top-level domain.
    let j = i + 1;
    let labels = 0;
    let lastTld = -1;
    while (labels < MAX_DOMAIN_LABELS && isLabel(toks[j])) {
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
    const floor = Math.max(0, i - MAX_LOCAL_TOKENS);
    if (single(toks[k])) while (k - 1 >= floor && single(toks[k - 1])) k--;
    while (k - 2 >= floor && LOCAL_JOINERS.has(toks[k - 1]!.lower) && isLabel(toks[k - 2])) {
      k -= 2;
      if (single(toks[k])) while (k - 1 >= floor && single(toks[k - 1])) k--;
    }
    out.push({ type: 'email', start: toks[k]!.start, end: toks[lastTld]!.end });
  }
}
