// A call pinned to an older agent version speaks with that version's prompt, end to end: the real supervisor
// starts LiveKit, the control plane and a media worker; the agent's model prompt changes (version 2, published);
// a web call pinned to version 1 is joined by a real WebRTC client that asks a question, and the answer it hears
// is the one the LLM stand-in gives only to version 1's prompt. A call that follows the published version hears
// version 2's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { contentText, startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { disposeRtc } from '../support/rtc-client.ts';
import { webCall } from '../support/web-caller.ts';
import { synthesize, transcribe } from '../support/speech.ts';
import { GRAMMAR } from '../support/dental-phrases.ts';

const PROMPT_V1 = 'You are the receptionist of Acme Dental. The practice opens at nine.';
const PROMPT_V2 = 'You are the receptionist of Acme Dental. The practice is closed on Sundays.';
const ANSWER_V1 = 'We open at nine in the morning.';
const ANSWER_V2 = 'Sorry we are closed on sundays.';

let llm: FakeOpenAI;
let agentId: string;
const fixture = stackFixture();
const { api } = fixture;

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  // The answer is the prompt's: the stand-in reads the system prompt the worker sent.
  llm.setResponder((req) => {
    const system = contentText(req.messages[0]!);
    if (system.startsWith('You analyse phone and web calls'))
      return { text: JSON.stringify({ summary: 'Asked about opening hours.', outcome: 'question_answered' }) };
    if (system.includes('opens at nine')) return { text: ANSWER_V1 };
    if (system.includes('closed on Sundays')) return { text: ANSWER_V2 };
    return { text: 'Please hold while I transfer your call.' };
  });
  await fixture.start({
    org: 'e2e-versions',
    worker: true,
    env: { SSRF_ALLOWLIST: '127.0.0.1,localhost', WORKER_SILENCE_SECONDS: '15', DISPATCH_TIMEOUT_SECONDS: '30', REAP_DELAY_SECONDS: '1' },
  });
  const modelId = await createStandInModel(api, llm.url, { system_prompt: PROMPT_V1 });
  agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, first_message: 'Hello, thank you for calling Acme Dental.' });
  // The model's prompt changes: version 2 of the agent, published at once.
  expect((await api('PATCH', `/v1/models/${modelId}`, { system_prompt: PROMPT_V2 })).status).toBe(200);
  expect((await api('GET', `/v1/agents/${agentId}`)).body.version).toBe(2);
}, 180_000);

afterAll(async () => {
  await disposeRtc();
  await fixture.stop();
  await llm?.close();
});

/** Starts a web call, asks when the practice opens, and returns what the caller heard (through pocketsphinx). */
async function askOnCall(body: Record<string, unknown>): Promise<{ callId: string; heard: string }> {
  const { callId, client, heard: audio } = await webCall(api, { agent_id: agentId, ...body });
  try {
    await audio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
    audio.reset();
    await client.speak(await synthesize('What time do you open tomorrow morning'), { trailingSilenceMs: 1500 });
    const answer = await audio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
    return { callId, heard: await transcribe(answer, { jsgf: GRAMMAR }) };
  } finally {
    await client.leave();
    await api('POST', `/v1/calls/${callId}/stop`);
  }
}

describe('agent versions on a real call', () => {
  it("a call pinned to version 1 speaks version 1's prompt; a call that follows the published version speaks version 2's", async () => {
    const pinned = await askOnCall({ agent_version: 1 });
    expect(pinned.heard).toBe('we open at nine in the morning');
    expect((await api('GET', `/v1/calls/${pinned.callId}`)).body).toMatchObject({ agent_version: 1, agent_version_source: 'pinned' });

    const following = await askOnCall({});
    expect(following.heard).toBe('sorry we are closed on sundays');
    expect((await api('GET', `/v1/calls/${following.callId}`)).body).toMatchObject({ agent_version: 2, agent_version_source: 'published' });
    // The worker sent each call's own prompt to the model.
    const prompts = llm.requests.map((r) => contentText(r.messages[0]!));
    expect(prompts.some((p) => p.includes('opens at nine'))).toBe(true);
    expect(prompts.some((p) => p.includes('closed on Sundays'))).toBe(true);
  }, 300_000);
});
