// A call's end at any point of its start or greeting, on the real AgentSession (local speech, custom audio I/O):
// the session's close finishes (its bounded wait is set far beyond the test's own timeout, so a close that hangs
// fails the test rather than being cut short), the call is recorded up to the moment it ended, and a call ended
// before its session starts neither starts one, nor reports a start, nor greets.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { startFakeInternalApi, type FakeInternalApi } from '../../../test/support/fake-internal-api.ts';
import { baseConfig, startCall, waitUntil } from './harness.test-support.ts';
import { CallSession } from './call-session.ts';

let llm: FakeOpenAI;
let api: FakeInternalApi;
/** Longer than any test here may run: a close that does not finish shows as the test's timeout. */
const NO_CLOSE_BOUND = { sessionCloseWaitMs: 10 * 60_000 };
const LONG_GREETING = 'Hello, thank you for calling Acme Dental. We are open from nine in the morning until five in the evening, every day but Sunday.';

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 30 });
  api = await startFakeInternalApi();
});
afterAll(async () => {
  await llm?.close();
  await api?.close();
});

describe("a call's end", () => {
  it('while the greeting plays: the session closes, and the call ends at the moment given, not after the close', async () => {
    const config = baseConfig({ call: { id: 'call_end_greeting' }, agent: { first_message: LONG_GREETING } });
    api.configs.set(config.call.id, config);
    const h = await startCall(config, { llmUrl: llm.url, api, extra: NO_CLOSE_BOUND });
    await waitUntil(() => h.out.segmentStarts.length > 0, 30_000, 'the greeting to play');
    const leftAt = Date.now();
    const report = await h.call.end('user_hangup', undefined, leftAt);
    await h.line.close();
    expect(report.end_reason).toBe('user_hangup');
    expect(report.ended_at).toBe(new Date(leftAt).toISOString());
    // The length runs from the session's start to the leave: no part of the close is billed.
    expect(report.duration_seconds).toBeLessThanOrEqual(Math.round((leftAt - h.call.startedAt) / 100) / 10);
  }, 90_000);
});

describe('a call ended before its session starts (its room closed while it was built)', () => {
  it('starts no session: no start is reported and nothing is said', async () => {
    const config = baseConfig({ call: { id: 'call_end_in_start' }, agent: { first_message: LONG_GREETING } });
    api.configs.set(config.call.id, config);
    const { LineAudioInput, CaptureAudioOutput } = await import('../../../test/support/voice-io.ts');
    const h = await startCall(config, { llmUrl: llm.url, api, extra: NO_CLOSE_BOUND, greetAhead: 'ended-before-start' });
    expect(h.call).toBeInstanceOf(CallSession);
    const line = new LineAudioInput();
    const out = new CaptureAudioOutput();
    line.start();
    await h.call.start({ audioInput: line, audioOutput: out });
    expect(h.call.startedAt).toBe(0);
    expect(out.segmentStarts).toEqual([]);
    expect(api.reports.filter((r) => r.callId === config.call.id).map((r) => r.kind)).not.toContain('started');
    await line.close();
    await h.line.close();
  }, 60_000);
});
