// Sentence chunking for TTS engines that take whole texts (OpenAI's speech endpoint, Cartesia's bytes API): the
// reply's first clause goes out on its own, then sentence by sentence. agents-js's default waits for the whole
// first sentence, plus some of the next, before the first request: with an LLM streaming tokens at 15-50 ms,
// "Sure, I can help you with that booking." holds the first audio back by the whole sentence's tokens. "Sure,"
// alone starts the audio at once, and the rest is synthesised while it plays. Only the first clause is split
// off: later commas keep their sentence whole, for the voice's intonation.
import { tokenize, tts } from '@livekit/agents';

/** The text up to the first clause mark (, ; : or a dash) that the next word already follows, within the first sentence. */
const FIRST_CLAUSE = /^(\s*[^\s,;:—–.?!][^,;:—–.?!]*[,;:—–])\s+(?=\S)/;
/** A first clause longer than this is not worth a request of its own: the sentence's end will come soon. */
const MAX_FIRST_CLAUSE = 80;

export class FirstClauseTokenizer extends tokenize.SentenceTokenizer {
  #sentences = new tokenize.basic.SentenceTokenizer({ minSentenceLength: 20 });

  tokenize(text: string, language?: string): string[] {
    return this.#split(text, true, language).tokens;
  }

  stream(language?: string): tokenize.SentenceStream {
    let first = true;
    // BufferedTokenStream consumes the first token whenever this returns two or more (it needs the start of
    // the next one to know a token ended), so the first split is made once.
    const func = (text: string): string[] => {
      const { tokens, split } = this.#split(text, first, language);
      if (split || tokens.length > 1) first = false;
      return tokens;
    };
    return new tokenize.BufferedSentenceStream(func, 20, 10, { firstTokenLength: 1 });
  }

  #split(text: string, first: boolean, language?: string): { tokens: string[]; split: boolean } {
    const sentences = this.#sentences.tokenize(text, language);
    if (first) {
      const m = FIRST_CLAUSE.exec(text);
      const clause = m?.[1]?.trim();
      if (m && clause && clause.length <= MAX_FIRST_CLAUSE && (sentences.length <= 1 || clause.length < sentences[0]!.length)) {
        return { tokens: [clause, ...this.#sentences.tokenize(text.slice(m[0].length), language)], split: true };
      }
    }
    return { tokens: sentences, split: false };
  }
}

/** A TTS that takes whole texts, streamed clause-first (see above); it reports the wrapped engine's model. */
export class FirstClauseTTS extends tts.StreamAdapter {
  readonly engine: tts.TTS;
  constructor(engine: tts.TTS) {
    super(engine, new FirstClauseTokenizer());
    this.engine = engine;
  }

  override get model(): string {
    return this.engine.model;
  }

  override get provider(): string {
    return this.engine.provider;
  }
}
