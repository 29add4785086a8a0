// Backchannels: the short acknowledgements a listener makes while the other person talks ("mm-hm", "yeah",
// "okay", "I see"). With `turn_taking.ignore_backchannels`, such an utterance made over the agent's speech
// does not interrupt it (docs/decisions/010-turn-taking.md).

/** Phrases of one or more words, as normalised text; matched whole, longest first. */
const PHRASES = [
  // sounds, in the spellings STT engines use
  'mm', 'mmm', 'hm', 'hmm', 'mhm', 'mm hm', 'mm hmm', 'mmhm', 'mmhmm', 'uh huh', 'uhuh', 'uh hum', 'aha', 'ah', 'oh', 'ooh', 'wow',
  'uh', 'um', 'er',
  // words
  'yeah', 'yea', 'yes', 'yep', 'yup', 'ya', 'okay', 'ok', 'k', 'alright', 'all right', 'right', 'sure', 'cool', 'great', 'good',
  'fine', 'nice', 'true', 'exactly', 'indeed', 'totally', 'absolutely', 'definitely', 'correct', 'perfect', 'gotcha', 'uh yeah',
  'i see', 'got it', 'i got it', 'i know', 'i understand', 'understood', 'makes sense', 'that makes sense', 'of course', 'go on',
  'go ahead', 'thats right', "that's right", 'thats true', "that's true", 'sounds good', 'i hear you', 'no problem', 'really', 'interesting',
  'thank you', 'thanks', 'sure thing', 'oh okay', 'oh ok', 'oh right', 'oh yeah', 'oh i see',
].map((p) => p.split(' '));

const LONGEST = Math.max(...PHRASES.map((p) => p.length));
const BY_TEXT = new Set(PHRASES.map((p) => p.join(' ')));
/** Longer acknowledgements are rare; a long utterance is someone taking the turn. */
const MAX_WORDS = 6;

export function backchannelWords(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[-‐–—]/g, ' ')
    .replace(/[^\p{L}\p{N}' ]+/gu, ' ')
    .split(/\s+/)
    .filter(Boolean);
}

/** Every opening of a phrase: "i" of "i see", "uh" of "uh huh", "that makes" of "that makes sense". */
const PREFIXES = new Set(PHRASES.flatMap((p) => p.slice(0, -1).map((_, i) => p.slice(0, i + 1).join(' '))));

/** True when `text` has words and every one of them belongs to an acknowledgement ("yeah, okay", "mm-hm, I see"). */
export function isBackchannel(text: string): boolean {
  return matchBackchannel(text, false);
}

/**
 * True when `text` is a backchannel, or could still become one: its words so far are acknowledgements with
 * the last ones opening a phrase ("I" on the way to "I see"). An interim transcript is read word by word, so
 * "I" alone must not yet count as a barge-in.
 */
export function mayBeBackchannel(text: string): boolean {
  return matchBackchannel(text, true);
}

function matchBackchannel(text: string, openEnd: boolean): boolean {
  const words = backchannelWords(text);
  if (words.length === 0 || words.length > MAX_WORDS) return false;
  let i = 0;
  while (i < words.length) {
    let matched = 0;
    for (let n = Math.min(LONGEST, words.length - i); n > 0; n--) {
      if (BY_TEXT.has(words.slice(i, i + n).join(' '))) {
        matched = n;
        break;
      }
    }
    if (!matched) return openEnd && PREFIXES.has(words.slice(i).join(' '));
    i += matched;
  }
  return true;
}
