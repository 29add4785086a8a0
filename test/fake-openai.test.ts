// The OpenAI stand-in's records of what it streamed: tokens of requests the client aborted (wasted by a
// discarded preemptive generation), and its speech endpoint's time to first byte.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from './support/fake-openai.ts';

let llm: FakeOpenAI;
beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 50, chunkDelayMs: 30, ttsTtfbMs: 100, speaker: (text) => new Int16Array(text.length * 10).fill(1000) });
  llm.setResponder(() => ({ text: 'one two three four five six seven eight nine ten' }));
});
afterAll(async () => {
  await llm.close();
});

const chat = (signal?: AbortSignal) =>
  fetch(`${llm.url}/chat/completions`, { method: 'POST', signal, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }) });

describe('OpenAI stand-in records', () => {
  it('counts every token of a reply read to the end, and only the streamed part of an aborted one', async () => {
    const full = await chat();
    await full.text();
    const ctl = new AbortController();
    const partial = await chat(ctl.signal);
    const reader = partial.body!.getReader();
    await reader.read();
    ctl.abort();
    await reader.read().catch(() => {});
    await new Promise((r) => setTimeout(r, 400));
    const [a, b] = llm.completions.slice(-2);
    expect(a).toMatchObject({ tokens: 10, streamed: 10, finished: true, aborted: false, lastUser: 'hi' });
    expect(b!.aborted).toBe(true);
    expect(b!.finished).toBe(false);
    expect(b!.streamed).toBeGreaterThanOrEqual(1);
    expect(b!.streamed).toBeLessThan(10);
  });

  it('answers /audio/speech with the speaker\'s PCM after its time to first byte', async () => {
    const t0 = Date.now();
    const res = await fetch(`${llm.url}/audio/speech`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tts-1', voice: 'alloy', input: 'hello', response_format: 'pcm' }) });
    const body = Buffer.from(await res.arrayBuffer());
    expect(res.status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(95);
    expect(body.length).toBe(5 * 10 * 2);
    expect(llm.speechRequests.at(-1)).toBe('hello');
  });
});
