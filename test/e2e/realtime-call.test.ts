// A web call to an agent on a realtime (speech-to-speech) model, end to end: the real supervisor starts LiveKit, the
// control plane and a media worker; the agent's model is OpenAI Realtime, pointed at the local Realtime double
// (test/support/fake-openai-realtime.ts) as the org's own server. A WebRTC caller (rtc-node) hears the first
// message in the model's voice, asks a question, and hears the answer the model gave after calling a server-URL
// tool. The call record has the transcript (the provider's input transcription and the model's words), the tool
// call, each turn's voice-to-voice latency, the analysis and the recording.
// A second call: the caller talks over a long answer (barge-in); the agent stops, the played part is truncated in the
// model's conversation, and it answers what the caller said.
// The double hears speech by energy and its words are scripted per turn (it does no recognition; the script is
// test/support/realtime-receptionist.ts, which the Gemini Live e2e shares); what the caller hears is festival's speech
// of the double's reply, transcribed here with a grammar.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackFixture } from '../support/stack-fixture.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { RtcClient, disposeRtc, nowMs } from '../support/rtc-client.ts';
import { resample, synthesize, transcribe } from '../support/speech.ts';
import { untilEvery } from '../support/e2e.ts';
import { FIRST_MESSAGE, ANSWER, GRAMMAR } from '../support/dental-phrases.ts';
import { LONG, hoursTool, receptionistResponder, receptionistTranscriber, startHoursTool } from '../support/realtime-receptionist.ts';

let fake: FakeOpenAI;
let agentId: string;
let tool: Awaited<ReturnType<typeof startHoursTool>>;

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250);

beforeAll(async () => {
  // The model's voice: festival's speech of its words, at the API's 24 kHz.
  fake = await startFakeOpenAI({ ttftMs: 20, speaker: async (text) => resample(await synthesize(text), 24000).samples });
  fake.setResponder(() => ({ text: JSON.stringify({ summary: 'The caller asked when the practice opens.', outcome: 'question_answered' }) }));
  fake.setRealtimeTranscriber(receptionistTranscriber);
  fake.setRealtimeResponder(receptionistResponder());
  tool = await startHoursTool();

  await fixture.start({
    org: 'e2e-realtime',
    worker: true,
    // A job process may take long to start on a loaded machine.
    // The post-call analysis of a realtime call goes to the configured analysis model (a realtime model answers no
    // chat completions): the operator's analysis endpoint is the stand-in's chat route, with the org's key.
    env: { SSRF_ALLOWLIST: '127.0.0.1,localhost', WORKER_SILENCE_SECONDS: '15', DISPATCH_TIMEOUT_SECONDS: '60', REAP_DELAY_SECONDS: '1', JOB_INIT_TIMEOUT_MS: '60000', ANALYSIS_BASE_URL: fake.url, ANALYSIS_MODEL: 'analysis-mini' },
  });
  const key = await api('POST', '/v1/integrations', { name: 'openai', provider: 'openai', api_key: 'sk-org-openai-0123456789' });
  expect(key.status, JSON.stringify(key.body)).toBe(201);
  const created = await api('POST', '/v1/tools', hoursTool(tool.url));
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const model = await api('POST', '/v1/models', {
    name: 'Realtime',
    model: 'gpt-realtime',
    base_url: fake.url,
    system_prompt: 'You are the receptionist of Acme Dental.',
    tool_ids: [created.body.id],
    realtime: { voice: 'marin', turn_detection: 'server_vad', silence_duration_ms: 500 },
  });
  expect(model.status, JSON.stringify(model.body)).toBe(201);
  const agent = await api('POST', '/v1/agents', { name: 'Realtime receptionist', llm_id: model.body.id, first_message: FIRST_MESSAGE, enable_recording: true, silence_timeout_seconds: 120 });
  expect(agent.status, JSON.stringify(agent.body)).toBe(201);
  agentId = agent.body.id;
}, 180_000);

afterAll(async () => {
  await disposeRtc();
  await fixture.stop();
  tool?.close();
  await fake?.close();
});

describe('a web call to a realtime agent', () => {
  it('greets in the model voice, answers a spoken question through a tool, and records transcript, latency and analysis', async () => {
    const created = await api('POST', '/v1/calls/web', { agent_id: agentId });
    expect(created.status).toBe(201);
    const callId = created.body.id as string;
    const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
    try {
      await client.publishMicrophone();
      const agentAudio = client.record({});
      const greeting = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 }).catch((err: Error) => {
        // What the double saw, to tell a slow machine from a session that never reached it.
        throw new Error(`${err.message}; realtime connections: ${JSON.stringify(fake.realtime.map((c) => ({ received: c.received, responses: c.responses.map((r) => [r.status, r.text]) })))}`);
      });
      expect(await transcribe(greeting, { jsgf: GRAMMAR })).toBe('hello thank you for calling acme dental');

      agentAudio.reset();
      await client.speak(await synthesize('What time do you open tomorrow morning'), { trailingSilenceMs: 1500 });
      const answer = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      expect(await transcribe(answer, { jsgf: GRAMMAR })).toBe('we open at nine in the morning');
    } finally {
      await client.leave();
    }
    // The worker called the tool with the model's arguments; the double's session had the agent's settings.
    expect(tool.requests.at(-1)).toMatchObject({ call_id: callId, name: 'opening_hours', arguments: { day: 'tomorrow' } });
    const conn = fake.realtime.at(-1)!;
    expect(conn.params.get('model')).toBe('gpt-realtime');
    expect(conn.session.audio.input.turn_detection).toMatchObject({ type: 'server_vad', silence_duration_ms: 500 });
    expect(String(conn.session.instructions)).toContain('receptionist of Acme Dental');

    const call = await until('the record', async () => {
      const c = (await api('GET', `/v1/calls/${callId}`)).body;
      return c.status === 'completed' && c.analysis?.status === 'completed' && c.messages?.some((m: { content: string }) => m.content === ANSWER) ? c : null;
    });
    expect(call.messages[0]).toMatchObject({ role: 'agent', content: FIRST_MESSAGE });
    expect(call.messages).toEqual(expect.arrayContaining([expect.objectContaining({ role: 'user', content: 'What time do you open tomorrow morning?' })]));
    expect(call.messages.some((m: { tool_call?: { name: string } }) => m.tool_call?.name === 'opening_hours')).toBe(true);
    expect(call.latency.e2e.samples).toBeGreaterThanOrEqual(1);
    expect(call.latency.e2e.p50_ms).toBeGreaterThan(300);
    expect(call).toMatchObject({ outcome: 'question_answered', ai_summary: 'The caller asked when the practice opens.' });
    expect(call.analysis).toMatchObject({ method: 'analysis_model', model: 'openai/analysis-mini' });
    const recorded = await until('the recording', async () => {
      const c = (await api('GET', `/v1/calls/${callId}`)).body;
      return c.recording_url ? c : null;
    });
    expect((await fetch(recorded.recording_url)).status).toBe(200);
  }, 300_000);

  it('stops a long answer when the caller talks over it, truncates it in the model, and answers the caller', async () => {
    // A long answer to the question; anything else gets the goodbye.
    fake.setRealtimeResponder(receptionistResponder({ long: true }));
    const created = await api('POST', '/v1/calls/web', { agent_id: agentId });
    expect(created.status).toBe(201);
    const connections = fake.realtime.length;
    const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
    try {
      await client.publishMicrophone();
      const agentAudio = client.record({});
      await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      const conn = await until('the call\'s realtime connection', async () => fake.realtime[connections]);

      agentAudio.reset();
      await client.speak(await synthesize('What time do you open tomorrow morning'), { trailingSilenceMs: 1500 });
      // The long answer plays; two seconds in, the caller talks over it.
      await agentAudio.until(() => agentAudio.firstSpeechAt !== undefined && nowMs() - agentAudio.firstSpeechAt >= 2000, 90_000, 'the long answer');
      // (A response's text is recorded once its audio has all been sent: the double streams faster than real time.)
      const long = await until('the long answer sent', async () => conn.responses.find((r) => /\bopen\b/i.test(r.lastUser) && r.text === LONG));
      const bargeIn = await synthesize('Thank you');
      await client.speak(bargeIn, { trailingSilenceMs: 1500 });

      // The played part of the long answer is truncated in the model's conversation, well before its end.
      const cut = await until('the truncation', async () => conn.truncations.at(-1) ?? null);
      expect(cut.audioEndMs).toBeLessThan(long.audioMs - 2000);
      // And the agent answers what the caller said over it.
      agentAudio.reset();
      const reply = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      expect(await transcribe(reply, { jsgf: GRAMMAR })).toBe('goodbye and have a nice day');
      expect(conn.responses.filter((r) => r.text === LONG)).toHaveLength(1);
      expect(conn.responses.at(-1)).toMatchObject({ lastUser: 'Thank you.', text: 'Goodbye and have a nice day.' });
    } finally {
      await client.leave();
    }
  }, 300_000);
});
