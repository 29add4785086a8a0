import { llm } from '@livekit/agents';
import { describe, expect, it } from 'vitest';
import { stt } from '@livekit/agents';
import { LIKELY, TranscriptTurnDetector, UNLIKELY, endOfTurnProbability, interimSoundsFinished } from './transcript-turn-detector.ts';
import { transcriptFilter } from './agent.ts';

describe('endOfTurnProbability', () => {
  it('takes a sentence the STT punctuated as finished, whatever its last word', () => {
    for (const t of ['What time do you open tomorrow?', 'My order never arrived.', 'What is it for?', 'Yes it is!', "I'll take that.", 'I know how.']) {
      expect(endOfTurnProbability(t), t).toBe(LIKELY);
    }
  });

  it('waits after a trailing comma, ellipsis or dash', () => {
    for (const t of ['I would like a table,', 'I was thinking...', 'I was thinking…', 'The thing is -']) {
      expect(endOfTurnProbability(t), t).toBe(UNLIKELY);
    }
  });

  it('waits when the last word leaves the sentence open', () => {
    for (const t of ["I'd like to book a table for", 'The problem is that the', 'The problem is that', 'Could you tell me how', 'I need an appointment with', 'Could you check whether', 'I was wondering if', 'My account number is', 'um', "and I'm"]) {
      expect(endOfTurnProbability(t), t).toBe(UNLIKELY);
    }
  });

  it('waits while a number is read out, but not after a single number word', () => {
    expect(endOfTurnProbability('five five five')).toBe(UNLIKELY);
    expect(endOfTurnProbability('my number is eight zero zero')).toBe(UNLIKELY);
    expect(endOfTurnProbability('it is 555 0123')).toBe(UNLIKELY);
    expect(endOfTurnProbability('two')).toBe(LIKELY);
  });

  it('takes an unpunctuated turn that ends on a content word or a short answer as finished', () => {
    for (const t of ['I think the charge on my card', 'yes I do', 'I think so', 'I can', 'Monday', '']) {
      expect(endOfTurnProbability(t), t).toBe(LIKELY);
    }
  });
});

describe('TranscriptTurnDetector', () => {
  it('decides on the last user message of the chat context, against a threshold between its two answers', async () => {
    const d = new TranscriptTurnDetector();
    const ctx = llm.ChatContext.empty();
    ctx.addMessage({ role: 'user', content: 'Hello there.' });
    ctx.addMessage({ role: 'assistant', content: 'Hi! How can I help?' });
    ctx.addMessage({ role: 'user', content: 'I would like to book a table for' });
    const threshold = await d.unlikelyThreshold();
    expect(await d.predictEndOfTurn(ctx)).toBeLessThan(threshold);
    ctx.addMessage({ role: 'user', content: 'four people on Friday.' });
    expect(await d.predictEndOfTurn(ctx)).toBeGreaterThan(threshold);
  });

  it('supports English, or a language the STT did not name, and nothing else', async () => {
    const d = new TranscriptTurnDetector();
    expect(await d.supportsLanguage(undefined)).toBe(true);
    expect(await d.supportsLanguage('en')).toBe(true);
    expect(await d.supportsLanguage('en-GB')).toBe(true);
    expect(await d.supportsLanguage('de')).toBe(false);
    expect(await d.supportsLanguage('es-ES')).toBe(false);
  });
});

describe('interimSoundsFinished', () => {
  it('takes only a punctuated, finished sentence: an interim is read word by word', () => {
    for (const t of ['What time do you open tomorrow?', 'My order never arrived.', 'Yes it is!', 'He said "no."']) expect(interimSoundsFinished(t), t).toBe(true);
    for (const t of ['I want', 'What time do you open', 'I was thinking...', 'I would like a table,', "I'd like to book a table for", '']) {
      expect(interimSoundsFinished(t), t).toBe(false);
    }
  });
});

describe('transcriptFilter', () => {
  const ev = (type: stt.SpeechEventType, text: string): stt.SpeechEvent => ({ type, alternatives: [{ text, language: 'en', startTime: 0, endTime: 0, confidence: 0.9 } as unknown as stt.SpeechData] });
  async function run(events: stt.SpeechEvent[], opts: Parameters<typeof transcriptFilter>[0]) {
    const out: stt.SpeechEvent[] = [];
    const reader = ReadableStream.from(events).pipeThrough(transcriptFilter(opts)).getReader();
    for (let r = await reader.read(); !r.done; r = await reader.read()) out.push(r.value as stt.SpeechEvent);
    return out.map((e) => [e.type, e.alternatives?.[0]?.text]);
  }

  it('hands a finished-sounding interim over as a preflight, and leaves the rest as they are', async () => {
    const { INTERIM_TRANSCRIPT: I, PREFLIGHT_TRANSCRIPT: P, FINAL_TRANSCRIPT: F, END_OF_SPEECH: E } = stt.SpeechEventType;
    const events = [ev(I, 'What time'), ev(I, 'What time do you open?'), ev(F, 'What time do you open?'), { type: E } as stt.SpeechEvent];
    expect(await run(events, { preflight: interimSoundsFinished })).toEqual([
      [I, 'What time'],
      [P, 'What time do you open?'],
      [F, 'What time do you open?'],
      [E, undefined],
    ]);
    // Without the option nothing changes; a dropped transcript never becomes a preflight.
    expect(await run(events, {})).toEqual([[I, 'What time'], [I, 'What time do you open?'], [F, 'What time do you open?'], [E, undefined]]);
    expect(await run([ev(I, 'Yeah.'), ev(F, 'Yeah.')], { preflight: interimSoundsFinished, drop: (t) => t === 'Yeah.' })).toEqual([]);
  });
});
