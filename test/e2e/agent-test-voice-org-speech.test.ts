// A voice-mode agent test whose simulated caller speaks and listens with the organisation's own speech
// credentials, in a real room: the real supervisor starts LiveKit, the control plane and a media worker. The
// agent speaks and hears locally (espeak-ng, pocketsphinx) and its LLM is an OpenAI-compatible stand-in, which
// also plays the persona (the judge is the agent's model with the org's key). The org has a Deepgram and an
// OpenAI credential; the operator's DEEPGRAM_BASE_URL and OPENAI_BASE_URL point at local stand-ins that speak
// Deepgram's streaming protocol and OpenAI's speech endpoint. The caller must hear the agent's greeting through
// the Deepgram stand-in (only the org's key opens it) and say its line through the OpenAI one with the org's key,
// while canary platform keys for both sit in the control plane's and the worker's environment and never show.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { startFakeDeepgram, type FakeDeepgram } from '../support/fake-deepgram.ts';
import { contentText, startFakeOpenAI, type ChatRequest, type FakeOpenAI } from '../support/fake-openai.ts';
import { untilEvery } from '../support/e2e.ts';

const AGENT_PROMPT = 'You are the receptionist of Acme Dental. Answer in one short sentence.';
/** What the Deepgram stand-in says it heard, whatever the audio: the caller's model must be shown these words. */
const HEARD = 'Acme Dental here, how may I help?';
const LINE = 'When do you open tomorrow?';
const ORG_DEEPGRAM = 'dg-org-own-credential-0123456789';
const ORG_OPENAI = 'sk-org-own-credential-0123456789';
const CANARY = { DEEPGRAM_API_KEY: 'dg-canary-platform-e2e', OPENAI_API_KEY: 'sk-canary-platform-e2e' };

let llm: FakeOpenAI;
let speech: FakeOpenAI;
let deepgram: FakeDeepgram;
let agentId: string;
let labelling = true;
const callerAsks: string[] = [];

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(1000);

function reply(req: ChatRequest) {
  const system = contentText(req.messages[0]!);
  if (system.startsWith('You are playing a caller')) {
    const ask = contentText(req.messages.at(-1)!);
    callerAsks.push(ask);
    return { text: `${LINE} [HANGUP]` };
  }
  return { text: 'We open at nine in the morning.' };
}

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20, responder: reply });
  speech = await startFakeOpenAI();
  deepgram = await startFakeDeepgram({ apiKeys: [ORG_DEEPGRAM] });
  // Each utterance the caller transcribes is a new stream: label every connection with the same words.
  void (async () => {
    while (labelling) {
      const conn = await deepgram.nextConnection(600_000).catch(() => null);
      conn?.expect({ segments: [{ text: HEARD, startMs: 0, endMs: 1500 }] });
    }
  })();

  await fixture.start({
    org: 'e2e-caller-speech',
    worker: true,
    env: {
      ...CANARY,
      DEEPGRAM_BASE_URL: deepgram.httpUrl,
      OPENAI_BASE_URL: speech.url,
      // The agent's model (and so the judge) is on loopback: the operator allows it as a model host.
      LLM_PRIVATE_HOSTS: '127.0.0.1',
      REAP_DELAY_SECONDS: '1',
      JOB_INIT_TIMEOUT_MS: '60000',
    },
  });
  for (const [provider, apiKey] of [['deepgram', ORG_DEEPGRAM], ['openai', ORG_OPENAI]]) {
    expect((await api('POST', '/v1/integrations', { name: provider, provider, api_key: apiKey })).status).toBe(201);
  }
  const modelId = await createStandInModel(api, llm.url, { system_prompt: AGENT_PROMPT });
  agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, tts: { provider: 'local', model: 'espeak-ng' }, first_message: 'Hello, Acme Dental.' });
}, 180_000);

afterAll(async () => {
  labelling = false;
  await fixture.stop();
  await Promise.all([llm?.close(), speech?.close(), deepgram?.close()]);
});

describe("a voice-mode test's caller with the org's speech credentials", () => {
  it("hears the agent through Deepgram and speaks through OpenAI, with the org's keys only", async () => {
    const s = await api('POST', '/v1/test-scenarios', {
      name: 'asks the opening hours',
      persona: 'You are Ada. You want to know when the practice opens tomorrow.',
      max_turns: 2,
      max_duration_seconds: 180,
      expectations: [{ type: 'ended_by', by: 'caller' }],
    });
    expect(s.status).toBe(201);
    const created = await api('POST', `/v1/agents/${agentId}/test-runs`, { scenario_ids: [s.body.id], mode: 'voice' });
    expect(created.status).toBe(201);
    const run = await until(
      'the run to finish',
      async () => {
        const r = await api('GET', `/v1/test-runs/${created.body.id}`);
        return r.body.status === 'completed' ? r.body : null;
      },
      300_000,
    );
    const [result] = run.results;
    expect(result, JSON.stringify(result)).toMatchObject({ status: 'passed', ended_by: 'caller', turns: 1 });

    // The caller heard the greeting through the Deepgram stand-in, which only the org's key opens: the words
    // its model was shown are the stand-in's, not pocketsphinx's.
    const heard = JSON.stringify({ asks: callerAsks, messages: result.messages, speech: speech.speechRequests });
    expect(deepgram.connections.length, heard).toBeGreaterThanOrEqual(1);
    expect(deepgram.connections[0]!.audioMs).toBeGreaterThan(0);
    expect(callerAsks.some((a) => a.includes(HEARD)), JSON.stringify(callerAsks)).toBe(true);

    // Its line was synthesised by the OpenAI stand-in with the org's key, and the worker heard something of it.
    expect(speech.speechRequests).toContain(LINE);
    const auth = speech.headers.map((h) => h.authorization);
    expect(new Set(auth)).toEqual(new Set([`Bearer ${ORG_OPENAI}`]));
    const seen = JSON.stringify([speech.headers, llm.headers]);
    for (const canary of Object.values(CANARY)) expect(seen).not.toContain(canary);
    expect(result.messages.some((m: { role: string }) => m.role === 'agent')).toBe(true);
  }, 600_000);
});
