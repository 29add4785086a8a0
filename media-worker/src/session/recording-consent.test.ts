// Recording consent (recording-consent.ts): the sentence goes before anything else the agent says; `ask` holds
// the first message, and the recording, for the caller's answer. The voice-loop tests speak the answer through
// the local speech-to-text, as a caller would.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RECORDING_CONSENT_DEFAULTS } from '../../../schemas/agents.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { startFakeInternalApi, type FakeInternalApi } from '../../../test/support/fake-internal-api.ts';
import { synthesize } from '../../../test/support/voice-io.ts';
import { baseConfig, startCall, waitUntil } from './harness.test-support.ts';
import { ANSWER_WAIT_MS, classifyConsent, RecordingConsent } from './recording-consent.ts';

describe('classifyConsent', () => {
  it.each([
    ['yes', 'yes'],
    ['Yeah, sure.', 'yes'],
    ["That's fine", 'yes'],
    ['okay go ahead', 'yes'],
    ['No problem', 'yes'],
    ['of course', 'yes'],
    ['no', 'no'],
    ["No, I'd rather not.", 'no'],
    ["please don't", 'no'],
    ['nope', 'no'],
    ['I do not agree', 'no'],
    ['what did you say', null],
    ['', null],
    ['yes no', null],
  ] as const)('%j is %s', (text, verdict) => {
    expect(classifyConsent(text)).toBe(verdict);
  });
});

describe('RecordingConsent', () => {
  const say = () => Promise.resolve();

  it('none, or a call that does not record: nothing is said and the recording may run', async () => {
    for (const c of [new RecordingConsent('none', true, null), new RecordingConsent('ask', false, null)]) {
      const spoken: string[] = [];
      expect(c.before(async (t) => void spoken.push(t), () => {})).toBe(false);
      expect(spoken).toEqual([]);
      expect(c.result).toBe('none');
      expect(await c.allowed).toBe(c.recording);
    }
  });

  it('announce: the sentence once, then the first message at once', async () => {
    const c = new RecordingConsent('announce', true, null);
    const spoken: string[] = [];
    expect(c.before(async (t) => void spoken.push(t), () => {})).toBe(false);
    expect(c.before(async (t) => void spoken.push(t), () => {})).toBe(false);
    expect(spoken).toEqual([RECORDING_CONSENT_DEFAULTS.announce]);
    expect(c.result).toBe('announced');
    expect(await c.allowed).toBe(true);
  });

  it('ask: holds the first message until the answer; no keeps the recording off', async () => {
    const c = new RecordingConsent('ask', true, 'May we record this call?');
    const spoken: string[] = [];
    let then = 0;
    expect(c.before(async (t) => void spoken.push(t), () => then++)).toBe(true);
    expect(spoken).toEqual(['May we record this call?']);
    expect(c.pending).toBe(true);
    expect(c.answer('no thanks')).toBe('no');
    expect(then).toBe(1);
    expect(c.pending).toBe(false);
    expect(c.result).toBe('declined');
    expect(await c.allowed).toBe(false);
  });

  it('ask: an unclear answer, or none in time, keeps the recording off', async () => {
    const unclear = new RecordingConsent('ask', true, null);
    unclear.before(say, () => {});
    expect(unclear.answer('pardon?')).toBeNull();
    expect(await unclear.allowed).toBe(false);

    vi.useFakeTimers();
    try {
      const silent = new RecordingConsent('ask', true, null);
      let then = 0;
      silent.before(say, () => then++);
      await vi.advanceTimersByTimeAsync(ANSWER_WAIT_MS - 1);
      expect(silent.pending).toBe(true);
      await vi.advanceTimersByTimeAsync(1);
      expect(silent.pending).toBe(false);
      expect(then).toBe(1);
      expect(silent.result).toBe('declined');
    } finally {
      vi.useRealTimers();
    }
  });

  it('ask: a call that ends before the answer declined', async () => {
    const c = new RecordingConsent('ask', true, null);
    c.before(say, () => {});
    c.close();
    expect(c.result).toBe('declined');
    expect(await c.allowed).toBe(false);
  });
});

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

const agentSaid = (h: Awaited<ReturnType<typeof startCall>>) => h.call.messages().filter((m) => m.role === 'agent').map((m) => m.content);
const recording = { enabled: true, upload_url: 'http://127.0.0.1:9/v1/recordings/x/upload' };

describe('recording consent in the voice loop', () => {
  it('announce: the announcement plays before the first message', async () => {
    const config = baseConfig({ call: { id: 'call_announce' }, agent: { recording_consent: 'announce', first_message: 'Hello from Acme.' }, recording });
    api.configs.set(config.call.id, config);
    const h = await startCall(config, { llmUrl: llm.url, api });
    await waitUntil(() => agentSaid(h).length >= 2, 20_000, 'announcement and first message');
    expect(agentSaid(h).slice(0, 2)).toEqual([RECORDING_CONSENT_DEFAULTS.announce, 'Hello from Acme.']);
    expect(await h.call.consent.allowed).toBe(true);
    const report = await h.call.end('user_hangup');
    await h.line.close();
    expect(report.recording_consent).toBe('announced');
  });

  it('ask: the caller says yes; the first message follows and the recording may start', async () => {
    llm.setResponder(() => ({ text: 'How can I help?' }));
    const config = baseConfig({ call: { id: 'call_ask' }, agent: { recording_consent: 'ask', first_message: 'Hello from Acme.' }, recording });
    api.configs.set(config.call.id, config);
    const h = await startCall(config, { llmUrl: llm.url, api, sttGrammar: '#JSGF V1.0;\ngrammar c;\npublic <c> = yes that is fine | no thank you;\n' });
    await waitUntil(() => agentSaid(h).length >= 1 && !h.out.playing, 20_000, 'the question played');
    expect(agentSaid(h)).toEqual([RECORDING_CONSENT_DEFAULTS.ask]);
    expect(h.call.consent.pending).toBe(true);
    await h.line.say(await synthesize('yes that is fine'));
    expect(await h.call.consent.allowed).toBe(true);
    await waitUntil(() => agentSaid(h).includes('Hello from Acme.'), 20_000, 'the first message after the answer');
    // The first message is the agent's reply to the answer (a preemptive generation on it, if any, is dropped).
    expect(agentSaid(h)).toEqual([RECORDING_CONSENT_DEFAULTS.ask, 'Hello from Acme.']);
    const report = await h.call.end('user_hangup');
    await h.line.close();
    expect(report.recording_consent).toBe('accepted');
  });
});
