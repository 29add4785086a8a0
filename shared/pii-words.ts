// Number words and tokens that the detectors of shared/pii.ts read transcripts with.

export const PII_TYPES = ['card_number', 'ssn', 'email', 'phone', 'date_of_birth', 'address'] as const;
export type PiiType = (typeof PII_TYPES)[number];

export interface PiiMatch {
  type: PiiType;
  start: number;
  end: number;
}

// ---- Number words -------------------------------------------------------------------------------------------

export const UNITS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine'];
export const TEENS = ['ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
export const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];
export const ORDINAL_UNITS = ['', 'first', 'second', 'third', 'fourth', 'fifth', 'sixth', 'seventh', 'eighth', 'ninth'];
export const ORDINAL_TEENS = ['tenth', 'eleventh', 'twelfth', 'thirteenth', 'fourteenth', 'fifteenth', 'sixteenth', 'seventeenth', 'eighteenth', 'nineteenth'];

/** The digits a single number word stands for ("four" -> "4", "eleven" -> "11", "oh" -> "0"), or null. */
export function wordDigits(word: string): string | null {
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

export const alt = (words: string[]) => words.filter(Boolean).join('|');
export const UNIT_WORD = alt(UNITS.slice(1));
export const TENS_WORD = alt(TENS);
export const TEEN_WORD = alt(TEENS);

// ---- Tokens ---------------------------------------------------------------------------------------------------

export interface Token {
  text: string;
  lower: string;
  start: number;
  end: number;
}

const TOKEN_RE = /\d+(?![\p{L}\d])|[\p{L}\d][\p{L}\d'’]*|[^\s\p{L}\d]/gu;

export function tokenize(text: string): Token[] {
  const out: Token[] = [];
  for (const m of text.matchAll(TOKEN_RE)) out.push({ text: m[0], lower: m[0].toLowerCase(), start: m.index, end: m.index + m[0].length });
  return out;
}
