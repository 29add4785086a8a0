// The voice-loop tests' fixture (call-session*.test.ts): the fake LLM and internal API, and the caller's moves.
// Importing this module registers the hooks that start and close them in the importing test file; the exported
// bindings are live.
import { afterAll, beforeAll } from 'vitest';
import { startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { startFakeInternalApi, type FakeInternalApi } from '../../../test/support/fake-internal-api.ts';
import { synthesize } from '../../../test/support/voice-io.ts';
import { waitUntil, type Harness } from './harness.test-support.ts';

export let llm: FakeOpenAI;
export let api: FakeInternalApi;

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 30 });
  api = await startFakeInternalApi();
});
afterAll(async () => {
  await llm?.close();
  await api?.close();
});

export const agentSegments = (h: Harness) => h.out.segmentStarts.length;

/** The user speaks `text`; resolves when the agent has started a new reply. */
export async function userSays(h: Harness, text: string, opts: { waitReply?: boolean } = {}) {
  const before = agentSegments(h);
  await h.line.say(await synthesize(text));
  if (opts.waitReply !== false) await waitUntil(() => agentSegments(h) > before, 20_000, `reply to "${text}"`);
}

export async function finish(h: Harness, reason: 'user_hangup' = 'user_hangup') {
  const report = await h.call.end(reason);
  await h.line.close();
  return report;
}
