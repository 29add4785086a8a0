// Hostile inputs to shared/pii.ts (docs/security.md, "Bounded text"): the detectors that used to take quadratic
// time give the same answers as before on what they are meant to find, and find the right thing at the caps.
// Time is measured by the benchmark (npm run bench:redaction), not here: the machine is shared and noisy; the
// event-loop test (control-plane/src/modules/calls/stall.test.ts) shows the service keeps answering.
import { describe, expect, it } from 'vitest';
import { findPii, redactPii } from './pii.ts';
import { capMessages, capText, MESSAGE_CONTENT_MAX, MESSAGES_MAX, SUMMARY_MAX, TOOL_ARGUMENTS_MAX, TOOL_OUTPUT_MAX } from './text-caps.ts';
import { seededRandom } from '../test/support/seeded-random.ts';

/** The written-address pattern the scanner replaced (quadratic on a run of local-part characters without "@"). */
const OLD_WRITTEN_EMAIL = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b/g;

const emails = (text: string) => findPii(text).filter((m) => m.type === 'email' && text.slice(m.start, m.end).includes('@'));

describe('written email addresses', () => {
  it('the scanner finds exactly what the old pattern found, on random text made of address characters', () => {
    const rand = seededRandom(50);
    const alphabet = 'ab1.-_%+@@ .xyzco_uk-';
    for (let i = 0; i < 3000; i++) {
      const len = 1 + Math.floor(rand() * 40);
      let text = '';
      for (let j = 0; j < len; j++) text += alphabet[Math.floor(rand() * alphabet.length)];
      const old = [...text.matchAll(OLD_WRITTEN_EMAIL)].map((m) => [m.index, m.index + m[0].length]);
      const now = emails(text).map((m) => [m.start, m.end]);
      expect(now, JSON.stringify(text)).toEqual(old);
    }
  });

  it('a local part as long as a message and a domain as long as a message are each read once', () => {
    const local = 'a'.repeat(MESSAGE_CONTENT_MAX - 20);
    expect(redactPii(`${local}@example.com`)).toBe('[email]');
    expect(redactPii('a'.repeat(MESSAGE_CONTENT_MAX))).toBe('a'.repeat(MESSAGE_CONTENT_MAX));
    const domain = 'b.'.repeat(MESSAGE_CONTENT_MAX / 2 - 10);
    expect(redactPii(`x@${domain}com and more`)).toBe('[email] and more');
  });
});

describe('hostile texts at the cap', () => {
  it('every card of a run of cards is found, each on its own', () => {
    const text = '4111 1111 1111 1111 '.repeat(MESSAGE_CONTENT_MAX / 20);
    const found = findPii(text);
    expect(found).toHaveLength(MESSAGE_CONTENT_MAX / 20);
    expect(found.every((m) => m.type === 'card_number')).toBe(true);
  });

  it('a long comma-separated list of phone numbers is read as numbers all along', () => {
    const n = Math.floor(MESSAGE_CONTENT_MAX / 14);
    const text = '415-555-0123, '.repeat(n);
    const found = findPii(text);
    expect(found.length).toBeGreaterThanOrEqual(n / 2);
    expect(found.at(-1)!.end).toBeGreaterThan(text.length - 30);
  });

  it('an address after a long run of spaces is found, without its trailing spaces', () => {
    const text = `1${' '.repeat(MESSAGE_CONTENT_MAX - 20)}Main St   `;
    expect(findPii(text)).toEqual([{ type: 'address', start: 0, end: text.trimEnd().length }]);
  });

  it('spoken addresses are looked for a bounded way either side of each "at"', () => {
    // "at a dot at a dot ..." has an "at" every few words; none ends in a top-level domain, so none is an address.
    expect(findPii('at a dot '.repeat(MESSAGE_CONTENT_MAX / 9))).toEqual([]);
    // A spoken address is still found after a long text of single letters.
    const text = `${'a '.repeat(2000)}john dot smith at example dot com`;
    const [m] = findPii(text);
    expect(text.slice(m!.start, m!.end)).toBe('john dot smith at example dot com');
  });
});

describe('text caps', () => {
  it('cut a text to its cap, marking the cut and keeping surrogate pairs whole', () => {
    expect(capText('abc', 3)).toBe('abc');
    expect(capText('abcd', 3)).toBe('ab…');
    const emoji = `a${'😀'.repeat(5)}`;
    const cut = capText(emoji, 5);
    expect(cut.length).toBeLessThanOrEqual(5);
    expect(cut).toBe('a😀…');
    expect(SUMMARY_MAX).toBeLessThan(MESSAGE_CONTENT_MAX);
  });

  it('cut every field of a conversation and keep its newest messages', () => {
    const long = (n: number) => 'x'.repeat(n + 10);
    const tool_call = { name: 't', arguments: long(TOOL_ARGUMENTS_MAX), output: long(TOOL_OUTPUT_MAX), is_error: false };
    const messages = Array.from({ length: MESSAGES_MAX + 5 }, (_, i) => ({
      role: 'agent',
      content: i === MESSAGES_MAX + 4 ? long(MESSAGE_CONTENT_MAX) : `m${i}`,
      tool_call,
    }));
    const capped = capMessages(messages);
    expect(capped).toHaveLength(MESSAGES_MAX);
    expect(capped[0]!.content).toBe('m5');
    expect(capped.at(-1)!.content).toHaveLength(MESSAGE_CONTENT_MAX);
    expect(capped[0]!.tool_call!.arguments).toHaveLength(TOOL_ARGUMENTS_MAX);
    expect(capped[0]!.tool_call!.output).toHaveLength(TOOL_OUTPUT_MAX);
  });
});
