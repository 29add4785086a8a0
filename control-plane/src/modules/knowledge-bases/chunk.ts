// Token-based chunking with a real tokenizer (cl100k_base through js-tiktoken). Each section (the text under
// one heading) is cut along paragraph boundaries, then sentence boundaries (Intl.Segmenter), and only a
// sentence longer than a chunk is cut by tokens. Consecutive chunks of a section overlap by whole trailing
// units (up to `overlap` tokens), so a fact that straddles a boundary is whole in one of them.
import { getEncoding, type Tiktoken } from 'js-tiktoken';
import type { Section } from './parse.ts';

let encoder: Tiktoken | null = null;
const enc = () => (encoder ??= getEncoding('cl100k_base'));

export const countTokens = (text: string): number => (text ? enc().encode(text).length : 0);

export interface Chunk {
  heading: string;
  content: string;
  /** Tokens of what an agent's prompt receives: heading line plus content. */
  token_count: number;
}

interface Unit {
  text: string;
  tokens: number;
  /** Starts a paragraph (joined with a blank line rather than a space). */
  paragraph: boolean;
}

const segmenter = new Intl.Segmenter(undefined, { granularity: 'sentence' });

/** Default overlap: an eighth of the chunk, at most 64 tokens. */
export const defaultOverlap = (chunkSize: number) => Math.min(64, Math.floor(chunkSize / 8));

export function chunkSections(sections: Section[], chunkSize: number, overlap = defaultOverlap(chunkSize)): Chunk[] {
  const out: Chunk[] = [];
  for (const s of sections) {
    const headingTokens = s.heading ? countTokens(s.heading) + 1 : 0;
    // The heading travels with every chunk of its section; keep room for it.
    const budget = Math.max(32, chunkSize - headingTokens);
    const units = unitsOf(s.text, budget);
    let cur: Unit[] = [];
    let curTokens = 0;
    const emit = () => {
      if (!cur.length) return;
      const content = join(cur);
      out.push({ heading: s.heading, content, token_count: countTokens(s.heading ? `${s.heading}\n${content}` : content) });
    };
    for (const u of units) {
      if (curTokens + u.tokens > budget && cur.length) {
        emit();
        // Carry whole trailing units, up to `overlap` tokens, into the next chunk.
        const carried: Unit[] = [];
        let t = 0;
        for (let i = cur.length - 1; i >= 0; i--) {
          if (t + cur[i]!.tokens > overlap || t + cur[i]!.tokens + u.tokens > budget) break;
          carried.unshift(cur[i]!);
          t += cur[i]!.tokens;
        }
        cur = carried;
        curTokens = t;
      }
      cur.push(u);
      curTokens += u.tokens;
    }
    emit();
  }
  return out;
}

function join(units: Unit[]): string {
  return units.map((u, i) => (i === 0 ? u.text : (u.paragraph ? '\n\n' : ' ') + u.text)).join('');
}

/** Paragraphs that fit, else their sentences, else token windows of a sentence. */
function unitsOf(text: string, budget: number): Unit[] {
  const units: Unit[] = [];
  for (const para of text.split(/\n\s*\n/)) {
    const p = para.trim();
    if (!p) continue;
    const tokens = countTokens(p);
    if (tokens <= budget) {
      units.push({ text: p, tokens, paragraph: true });
      continue;
    }
    let first = true;
    for (const { segment } of segmenter.segment(p)) {
      const sentence = segment.trim();
      if (!sentence) continue;
      const ids = enc().encode(sentence);
      if (ids.length <= budget) {
        units.push({ text: sentence, tokens: ids.length, paragraph: first });
      } else {
        for (let i = 0; i < ids.length; i += budget) {
          const slice = ids.slice(i, i + budget);
          units.push({ text: enc().decode(slice).trim(), tokens: slice.length, paragraph: first && i === 0 });
        }
      }
      first = false;
    }
  }
  return units;
}
