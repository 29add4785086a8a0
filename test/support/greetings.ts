// A closed set of greetings for recognising what a caller heard: the phone tests' first message and
// distractors that share its opening words ("hello", "thank you for"), so picking the right one takes the
// whole sentence. test/phone-speech.test.ts shows that each is recognised as itself over a telephone line.
export const FIRST_MESSAGE = 'Hello, thank you for calling Acme Dental.';

export const GREETINGS = [
  FIRST_MESSAGE,
  'Good morning, you have reached the night desk.',
  'Hello, you have reached the front desk.',
  'Thank you for holding, the next agent will answer.',
  'Sorry, we are closed on Sundays.',
  'We open at nine in the morning.',
];

const words = (s: string) => s.toLowerCase().replace(/[^a-z0-9' ]+/g, ' ').trim().replace(/\s+/g, ' ');

/** A JSGF grammar whose sentences are the greetings (pocketsphinx `-jsgf`). */
export const GREETINGS_GRAMMAR = `#JSGF V1.0;\ngrammar greetings;\npublic <s> = ${GREETINGS.map(words).join('\n  | ')};\n`;

/** The greeting as the recogniser spells it (lower case, no punctuation). */
export const spelled = words;
