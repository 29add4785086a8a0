// End of turn from the words (turn_taking.detection 'transcript'): a text turn detector for agents-js that
// runs in microseconds, with no model to load. It reads the caller's transcript so far and says whether the
// turn sounds finished. agents-js then commits a likely end after min_delay_ms and an unlikely one after
// max_delay_ms (the same contract as its own text models).
//
// The signals, strongest first (docs/decisions/010-turn-taking.md):
// - the STT's punctuation: a final that ends in . ? or ! is a finished sentence (Deepgram's punctuation model
//   saw the prosody and the words); one that ends in a comma, an ellipsis or a dash is not;
// - the last word: English sentences almost never end on an article, a possessive, a conjunction, a
//   preposition that opens a phrase, an auxiliary or a filler ("a table for", "the problem is that",
//   "I need an appointment with", "um");
// - a run of number words ("five five five", "zero seven"): someone reading out a number pauses between groups.
// Anything else is taken as finished: the cost of a wrong "unfinished" is a wait of max_delay_ms, the cost of
// a wrong "finished" is a reply the caller talks over (and agents-js's interruption handles that).
// English only: for other languages supportsLanguage() is false and agents-js uses min_delay_ms.
import type { llm } from '@livekit/agents';

// Words that cannot, or rarely, end a sentence (checked only when the STT gave no final punctuation). When in
// doubt the word is in: a wrong "open" costs one wait of max_delay_ms, a wrong "finished" talks over the caller. Words that end common short answers ("yes I do",
// "I think so", "I can", "it was me") are left out; a clause opener left hanging ("the problem is that",
// "tell me how") is in, though "I'll take that" then waits unless the STT punctuated it.
const CONTINUATION_WORDS = new Set([
  // articles, possessives and quantifiers that need a noun
  'a', 'an', 'the', 'my', 'your', 'our', 'their', 'every', 'each',
  // conjunctions, and words that open a clause
  'and', 'or', 'but', 'nor', 'because', 'although', 'though', 'unless', 'whether', 'if', 'than', 'that', 'how', 'what', 'where', 'when', 'why', 'which', 'who',
  // prepositions that open a phrase (stranded ones, as in "what is it for?", come punctuated)
  'for', 'to', 'with', 'of', 'at', 'from', 'into', 'onto', 'about', 'by', 'like', 'as', 'between', 'towards', 'toward', 'via', 'per',
  // copulas, and contractions that need a complement
  'is', 'are', 'was', 'were', 'be', "i'm", "it's", "that's", "there's", "we're", "they're", "you're",
  // subject pronouns left hanging
  'i', 'we', 'they',
  // fillers
  'um', 'uh', 'er', 'erm', 'uhm',
]);

const NUMBER_WORDS = new Set(['zero', 'oh', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'hundred', 'thousand', 'double', 'triple']);

/** Probabilities the detector returns; agents-js compares them with unlikelyThreshold(). */
export const LIKELY = 0.9;
export const UNLIKELY = 0.1;
const THRESHOLD = 0.5;

const wordsOf = (text: string) => text.toLowerCase().replace(/[“”"]/g, '').split(/\s+/).map((w) => w.replace(/^[^\p{L}\p{N}']+|[^\p{L}\p{N}']+$/gu, '')).filter(Boolean);

/** The chance that the caller has finished, from the transcript of their turn so far. */
export function endOfTurnProbability(transcript: string): number {
  const text = transcript.trim();
  if (!text) return LIKELY;
  if (/(,|\.\.\.|…|[-–—])$/.test(text)) return UNLIKELY;
  if (/[.?!]$/.test(text)) return LIKELY;
  const words = wordsOf(text);
  const last = words.at(-1);
  if (last === undefined) return LIKELY;
  if (CONTINUATION_WORDS.has(last)) return UNLIKELY;
  // Two or more number words (or digits) at the end: a number being read out.
  const tail = words.slice(-2);
  if (tail.length === 2 && tail.every((w) => NUMBER_WORDS.has(w) || /^\d+$/.test(w))) return UNLIKELY;
  return LIKELY;
}

/**
 * An interim that sounds like the end of the turn: punctuated as a finished sentence by the STT and not ending
 * on an open word. Stricter than endOfTurnProbability, which takes an unpunctuated "I want" as finished: an
 * interim is read word by word as the caller speaks, and each early reply it starts costs tokens.
 */
export function interimSoundsFinished(text: string): boolean {
  const t = text.trim();
  return /[.?!]["')\]]?$/.test(t) && !/\.\.\.$/.test(t) && endOfTurnProbability(t) === LIKELY;
}

/** The text of the last user message: the turn agents-js is deciding on. */
function lastUserText(chatCtx: llm.ChatContext): string {
  for (let i = chatCtx.items.length - 1; i >= 0; i--) {
    const item = chatCtx.items[i]!;
    if (item.type === 'message' && item.role === 'user') return item.textContent ?? '';
  }
  return '';
}

/** agents-js's text turn detector interface (`_TurnDetector`), implemented on endOfTurnProbability(). */
export class TranscriptTurnDetector {
  readonly model = 'transcript-rules';
  readonly provider = 'vap';

  async unlikelyThreshold(): Promise<number> {
    return THRESHOLD;
  }

  async supportsLanguage(language?: string): Promise<boolean> {
    return language === undefined || language === '' || /^en\b/i.test(language);
  }

  async predictEndOfTurn(chatCtx: llm.ChatContext): Promise<number> {
    return endOfTurnProbability(lastUserText(chatCtx));
  }
}
