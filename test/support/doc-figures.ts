// Citations of figures in the docs: how a doc's line is read as prose, where its citations are, and how a
// cited value is found in its results file and compared with the number written (test/docs-figures.test.ts).
import { readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '../..');

export const NUMBER = String.raw`(?<![\w.])\d+(?:[.,]\d+)*`;

/** The line as prose: inline code and link targets removed. */
export function prose(text: string): string {
  return text.replace(/`[^`]*`/g, ' ').replace(/\]\([^)]*\)/g, ']');
}

export const CITATION = /\[([^\]]*)\]\(([^)\s]*?)bench\/results\/([\w.-]+\.json)#([^)\s]+)\)/g;

export interface Citation {
  doc: string;
  line: number;
  text: string;
  file: string;
  path: string;
}

/** Every citation outside fenced code in a doc. */
export function citations(doc: string): Citation[] {
  const out: Citation[] = [];
  let fenced = false;
  for (const [i, line] of readFileSync(path.join(root, doc), 'utf8').split('\n').entries()) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    for (const m of line.matchAll(CITATION)) out.push({ doc, line: i + 1, text: m[1]!, file: `bench/results/${m[3]!}`, path: m[4]! });
  }
  return out;
}

/** The value at a dot path (keys, array indexes, `key=value` selectors), with its scale applied; or why not. */
export function valueAt(json: unknown, spec: string): number | string {
  const scaled = /^(.*?)(?:([*/])(-?\d+(?:\.\d+)?))?$/.exec(spec)!;
  let v: unknown = json;
  // A key with spaces or brackets is percent-encoded in the link (`first%20page`), as a URL fragment is.
  for (const seg of scaled[1]!.split('.').map((s) => decodeURIComponent(s))) {
    const sel = /^([^=]+)=(.*)$/.exec(seg);
    if (sel && Array.isArray(v)) v = v.find((x: unknown) => x !== null && typeof x === 'object' && String((x as Record<string, unknown>)[sel[1]!]) === sel[2]);
    else if (Array.isArray(v) && /^\d+$/.test(seg)) v = v[Number(seg)];
    else if (v !== null && typeof v === 'object') v = (v as Record<string, unknown>)[seg];
    else v = undefined;
    if (v === undefined) return `no value at "${seg}" of ${scaled[1]!}`;
  }
  if (typeof v !== 'number') return `the value at ${scaled[1]!} is ${JSON.stringify(v)}, not a number`;
  const k = scaled[3] ? Number(scaled[3]) : 1;
  return scaled[2] === '/' ? v / k : v * k;
}

/** The one number a citation's text states, with its decimals; null when it holds none or several. */
export function writtenNumber(text: string): { value: number; decimals: number } | null {
  const nums = [...prose(text).matchAll(new RegExp(NUMBER, 'g'))].map((m) => m[0]);
  if (nums.length !== 1) return null;
  // A comma groups thousands ("3,500"); a point is the decimal point.
  const s = nums[0]!.replace(/,(?=\d{3}(?!\d))/g, '');
  if (!/^\d+(\.\d+)?$/.test(s)) return null;
  return { value: Number(s), decimals: s.includes('.') ? s.split('.')[1]!.length : 0 };
}

/** Equal as written: the value rounds to the written number at the decimals the doc shows. */
export function matchesAsWritten(written: { value: number; decimals: number }, value: number): boolean {
  return Math.abs(value - written.value) <= 0.5 * 10 ** -written.decimals + 1e-9;
}
