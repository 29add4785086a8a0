// Phrase matching on spoken text, shared by the media worker (an agent's end_call_phrases) and agent tests
// (end phrases, transcript_contains): whole words, ignoring case and punctuation, so a transcript from local
// speech recognition ("good bye." → "good bye") and a model's written reply are judged alike.

/** Lower case, punctuation to spaces (apostrophes kept), single spaces. */
export const normalisePhrase = (s: string) =>
  s
    .toLowerCase()
    .replace(/[^\p{L}\p{N}' ]+/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();

/** Whether `text` contains `phrase` as whole words. An empty phrase matches nothing. */
export function containsPhrase(text: string, phrase: string): boolean {
  const n = normalisePhrase(phrase);
  return n.length > 0 && ` ${normalisePhrase(text)} `.includes(` ${n} `);
}

export function matchesEndPhrase(text: string, phrases: readonly string[]): boolean {
  return phrases.some((p) => containsPhrase(text, p));
}
