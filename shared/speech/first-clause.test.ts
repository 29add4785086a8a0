import { tokenize } from '@livekit/agents';
import { describe, expect, it } from 'vitest';
import { FirstClauseTokenizer } from './first-clause.ts';

/** Pushes text the way an LLM streams it (word by word), and returns each token with the words pushed before it came out. */
async function streamed(tokenizer: tokenize.SentenceTokenizer, text: string): Promise<{ token: string; after: number }[]> {
  const stream = tokenizer.stream();
  const out: { token: string; after: number }[] = [];
  let pushed = 0;
  const reading = (async () => {
    for await (const t of stream) out.push({ token: t.token, after: pushed });
  })();
  for (const word of text.split(/(?<= )/)) {
    stream.pushText(word);
    pushed++;
    await new Promise((r) => setImmediate(r));
  }
  stream.endInput();
  await reading;
  return out;
}

describe('FirstClauseTokenizer', () => {
  it('sends the first clause as soon as the next word shows it ended, then whole sentences', async () => {
    const text = 'Sure, I can help you with that booking today. What time would suit you, morning or afternoon? Thanks.';
    const out = await streamed(new FirstClauseTokenizer(), text);
    const basicTokens = new tokenize.basic.SentenceTokenizer({ minSentenceLength: 20 });
    // Later sentences keep their commas: split as the default splits them.
    expect(out.map((t) => t.token)).toEqual(['Sure,', ...basicTokens.tokenize(text.slice('Sure, '.length))]);
    expect(out[1]!.token).toBe('I can help you with that booking today.');
    // Out after "Sure, I can " (the stream's 10 characters of context), where the default waits for the
    // sentence and the next one's start.
    expect(out[0]!.after).toBeLessThanOrEqual(3);
    const basic = await streamed(new tokenize.basic.SentenceTokenizer({ minSentenceLength: 20 }), text);
    expect(basic[0]!.token).toBe('Sure, I can help you with that booking today.');
    expect(basic[0]!.after).toBeGreaterThan(8);
  });

  it('splits nothing where the first sentence ends before any clause mark, nor inside a number', async () => {
    for (const text of ['Your total is 1,250 dollars for the whole stay. Anything else?', 'Of course you can. I have moved it, as you asked, to Friday.']) {
      const ours = (await streamed(new FirstClauseTokenizer(), text)).map((t) => t.token);
      expect(ours, text).toEqual((await streamed(new tokenize.basic.SentenceTokenizer({ minSentenceLength: 20 }), text)).map((t) => t.token));
      expect(ours[0]!.endsWith('.'), text).toBe(true);
    }
  });

  it('tokenizes a whole text the same way', () => {
    expect(new FirstClauseTokenizer().tokenize('Okay, let me check that for you. One moment please.')).toEqual(['Okay,', 'let me check that for you.', 'One moment please.']);
  });
});
