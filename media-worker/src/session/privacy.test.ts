// The worker's side of data retention (session/privacy.ts): a call in `redact_pii` mode in which the caller says
// a card number and the agent repeats it reports only the placeholder, in its transcript partials and its ended
// report; `no_content` reports no text at all; and the framework's own log lines lose the number too.
import { Writable } from 'node:stream';
import { log } from '@livekit/agents';
import { pino, type Logger } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { startFakeInternalApi, type FakeInternalApi } from '../../../test/support/fake-internal-api.ts';
import { baseConfig, startCall, waitUntil } from './harness.test-support.ts';
import { CallPrivacy } from './privacy.ts';

const CARD = '4111 1111 1111 1111';
const leaks = (text: string) => /4111[\s-]*1111|four one one one/.test(text);

function captureLogger(level = 'debug'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: pino({ level }, sink), lines };
}

let llm: FakeOpenAI;
let api: FakeInternalApi;

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 10 });
  api = await startFakeInternalApi();
});
afterAll(async () => {
  await llm?.close();
  await api?.close();
});

describe('CallPrivacy', () => {
  const messages = [
    { role: 'user' as const, content: `card ${CARD}, email john at example dot com` },
    { role: 'agent' as const, content: '', tool_call: { name: 'pay', arguments: `{"card":"${CARD}"}`, output: 'ok', is_error: false } },
  ];

  it('everything reports the conversation as said', () => {
    const p = new CallPrivacy('everything');
    expect(p.ended(messages)).toEqual(messages);
    expect(p.partial(messages)).toEqual(messages);
    expect(p.log(CARD)).toBe(CARD);
  });

  it('redact_pii reports placeholders, tool calls included', () => {
    const p = new CallPrivacy('redact_pii');
    expect(p.ended(messages)).toEqual([
      { role: 'user', content: 'card [card_number], email [email]' },
      { role: 'agent', content: '', tool_call: { name: 'pay', arguments: '{"card":"[card_number]"}', output: 'ok', is_error: false } },
    ]);
    expect(p.log(`it is ${CARD}`)).toBe('it is [card_number]');
  });

  it('no_content reports no text and no partials', () => {
    const p = new CallPrivacy('no_content');
    expect(p.ended(messages)).toEqual([
      { role: 'user', content: '' },
      { role: 'agent', content: '', tool_call: { name: 'pay', arguments: '', output: '', is_error: false } },
    ]);
    expect(p.partial(messages)).toBeNull();
    expect(p.log(CARD)).toBe('[withheld]');
  });

  it('a control plane that names no mode gets everything (it knows no such setting)', () => {
    expect(new CallPrivacy(undefined).mode).toBe('everything');
  });

  it("rewrites the framework's lk.pii fields, in its loggers made after the guard and their children", () => {
    const key = Symbol.for('@livekit/agents:logger');
    const g = globalThis as unknown as Record<symbol, Logger | undefined>;
    const saved = g[key];
    const { logger, lines } = captureLogger();
    g[key] = logger;
    try {
      new CallPrivacy('redact_pii').guardFrameworkOutput();
      log().info({ 'lk.pii.new_transcript': `my card is ${CARD}`, transcriptConfidence: 0.9 }, 'starting preemptive generation');
      log().child({ component: 'activity' }).info({ 'lk.pii.user_input': CARD, 'lk.pii.chat_ctx': { items: [CARD] } }, 'user input');
      expect(lines).toHaveLength(2);
      expect(lines.filter(leaks)).toEqual([]);
      expect(JSON.parse(lines[0]!)).toMatchObject({ 'lk.pii.new_transcript': 'my card is [card_number]', transcriptConfidence: 0.9, msg: 'starting preemptive generation' });
      expect(JSON.parse(lines[1]!)).toMatchObject({ 'lk.pii.user_input': '[card_number]', 'lk.pii.chat_ctx': '[withheld]', component: 'activity' });
    } finally {
      g[key] = saved;
    }
  });
});

describe('a call in redact_pii mode (voice loop)', () => {
  it('says a card number and reports only the placeholder, in partials and in the ended report', async () => {
    llm.setResponder(() => ({ text: `I have your card ${CARD} on file.` }));
    const config = baseConfig({ call: { id: 'call_redact' }, data_retention: 'redact_pii' });
    api.configs.set(config.call.id, config);
    const { logger, lines } = captureLogger();
    const h = await startCall(config, { llmUrl: llm.url, api, extra: { logger } });
    // The caller's turn as text (no speech needed for what is reported), then the agent's spoken answer.
    h.call.session.generateReply({ userInput: `My card number is ${CARD}` });
    await waitUntil(() => h.call.messages().some((m) => m.role === 'agent' && m.content.includes('on file')), 20_000, 'the agent repeats the card');
    // The raw conversation is in the session (the model needs it); it is what leaves the worker that is redacted.
    expect(h.call.messages().some((m) => m.content.includes(CARD))).toBe(true);
    await api.waitFor((r) => r.some((x) => x.callId === config.call.id && x.kind === 'transcript'));
    const report = await h.call.end('user_hangup');
    await h.line.close();
    await api.waitFor((r) => r.some((x) => x.callId === config.call.id && x.kind === 'ended'));

    const sent = api.reports.filter((r) => r.callId === config.call.id);
    for (const r of sent) expect(leaks(JSON.stringify(r.body)), r.kind).toBe(false);
    expect(report.messages.map((m) => m.content)).toEqual(expect.arrayContaining(['My card number is [card_number]', 'I have your card [card_number] on file.']));
    expect(lines.filter(leaks)).toEqual([]);
  });

  it('no_content sends no transcript partial and no text in the ended report', async () => {
    llm.setResponder(() => ({ text: `I have your card ${CARD} on file.` }));
    const config = baseConfig({ call: { id: 'call_no_content' }, data_retention: 'no_content' });
    api.configs.set(config.call.id, config);
    const h = await startCall(config, { llmUrl: llm.url, api });
    h.call.session.generateReply({ userInput: `My card number is ${CARD}` });
    await waitUntil(() => h.call.messages().some((m) => m.role === 'agent' && m.content.includes('on file')), 20_000, 'the agent answers');
    const report = await h.call.end('user_hangup');
    await h.line.close();
    await api.waitFor((r) => r.some((x) => x.callId === config.call.id && x.kind === 'ended'));
    const sent = api.reports.filter((r) => r.callId === config.call.id);
    expect(sent.map((r) => r.kind)).not.toContain('transcript');
    expect(report.messages.length).toBeGreaterThanOrEqual(2);
    expect(report.messages.every((m) => m.content === '')).toBe(true);
  });
});
