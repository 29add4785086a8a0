// The turn-taking corpus's labels: what each utterance says, in spoken segments. A segment boundary is a
// pause the speaker makes (its length is drawn at build time from a seeded RNG, so every run and machine
// gets the same corpus). Each text is spoken in two espeak-ng voices at two rates: 50 texts x 4 = 200 items.
// The audio is synthesized at run time (corpus.ts) and cached; these labels are the reference transcripts
// the Deepgram stand-in returns.

export type Category = 'complete' | 'pause' | 'list' | 'digits' | 'backchannel';

export interface LabelText {
  category: Category;
  /** Spoken segments; the speaker pauses between consecutive ones. */
  segments: string[];
}

/** Complete questions and statements: the agent should answer soon after each. */
const COMPLETE = [
  'What time do you open tomorrow morning?',
  'Can I book a table for two people tonight?',
  'Do you have parking near the office?',
  'How much does a cleaning cost?',
  'I would like to cancel my appointment.',
  'Is the pharmacy open on Sunday?',
  'My order never arrived.',
  'Can you tell me my account balance?',
  'I need to change my delivery address.',
  'What is the weather like in Boston today?',
  'Please send me the invoice by email.',
  'Do you deliver to the airport?',
  'How long does shipping take?',
  'I want to speak to a manager.',
  'Where is your nearest store?',
  'Can I pay with a credit card?',
];

/** Sentences with a pause at a natural break, mid-sentence: the agent must wait for the rest. */
const PAUSED: string[][] = [
  ["I'd like to book a table for", 'four people on Friday.'],
  ['My account number is', 'in the email you sent me.'],
  ['Could you check whether', 'my package has shipped?'],
  ['I was wondering if', 'you have any rooms available.'],
  ['The problem is that', 'the screen keeps going black.'],
  ['I need an appointment with', 'doctor Wilson next week.'],
  ['Can you move my booking to', 'the following Tuesday?'],
  ['What I really want is', 'a refund for the broken chair.'],
  ['We are looking for a flight to', 'Denver on the third.'],
  ['I think the charge on my card', 'is a mistake.'],
  ['Could you tell me how', 'to reset my password?'],
  ['My daughter and I would like', 'to join the swimming class.'],
  ['I called yesterday about', 'the leak in the kitchen.'],
  ['Is it possible to', 'pick it up tomorrow instead?'],
  ['The address should be', 'forty two Main Street.'],
  ['I am calling because', 'my bill went up this month.'],
];

/** Lists, one item per segment. */
const LISTS: string[][] = [
  ['one', 'two', 'three'],
  ['apples', 'bananas', 'and oranges.'],
  ['Monday', 'Wednesday', 'and Friday.'],
  ['red', 'green', 'blue'],
  ['a pizza', 'a salad', 'and two cokes.'],
  ['milk', 'eggs', 'bread', 'and butter.'],
];

/** Numbers read digit by digit, in the groups people say them in. */
const DIGITS: string[][] = [
  ['five five five', 'one two three', 'four five six seven'],
  ['zero seven', 'nine one', 'three three'],
  ['four one one', 'two eight', 'six'],
  ['my number is', 'eight zero zero', 'five five five', 'two one'],
  ['nine', 'four', 'seven', 'two'],
  ['one two', 'three four', 'five six'],
];

/** Backchannels: spoken over the agent, they should not stop it. */
const BACKCHANNELS = ['mm-hm', 'yeah', 'okay', 'uh-huh', 'right', 'I see'];

export const LABEL_TEXTS: LabelText[] = [
  ...COMPLETE.map((t) => ({ category: 'complete' as const, segments: [t] })),
  ...PAUSED.map((segments) => ({ category: 'pause' as const, segments })),
  ...LISTS.map((segments) => ({ category: 'list' as const, segments })),
  ...DIGITS.map((segments) => ({ category: 'digits' as const, segments })),
  ...BACKCHANNELS.map((t) => ({ category: 'backchannel' as const, segments: [t] })),
];

/** espeak-ng voices: a US male and a British female variant. */
export const VOICES = ['en-us', 'en-gb+f3'] as const;
/** espeak-ng rates (words per minute): its default, and a slower, deliberate speaker. */
export const RATES = [175, 140] as const;

/** Pause lengths: mid-sentence pauses 300-900 ms; list and digit-group pauses likewise. */
export const PAUSE_MIN_MS = 300;
export const PAUSE_MAX_MS = 900;
/** The RNG's seed: the corpus is the same on every run. */
export const CORPUS_SEED = 17;

export interface LabelItem {
  id: string;
  category: Category;
  voice: (typeof VOICES)[number];
  rate: (typeof RATES)[number];
  segments: string[];
  /** Silence inserted after each segment but the last. */
  pauses_ms: number[];
  text: string;
}

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Every item of the corpus, in a fixed order, with its pause lengths drawn from the seeded RNG. */
export function corpusLabels(): LabelItem[] {
  const rnd = seededRandom(CORPUS_SEED);
  const items: LabelItem[] = [];
  LABEL_TEXTS.forEach((t, ti) => {
    for (const voice of VOICES) {
      for (const rate of RATES) {
        const pauses_ms = t.segments.slice(1).map(() => Math.round(PAUSE_MIN_MS + rnd() * (PAUSE_MAX_MS - PAUSE_MIN_MS)));
        items.push({ id: `${t.category}-${ti}-${voice.replace(/\W/g, '')}-${rate}`, category: t.category, voice, rate, segments: t.segments, pauses_ms, text: t.segments.join(' ') });
      }
    }
  });
  return items;
}
