// A web call to an agent on Gemini Live, end to end: the real supervisor starts LiveKit, the control plane and a
// media worker; the agent's model is a Gemini Live record (provider gemini, no base_url) and the operator's
// GEMINI_BASE_URL is the local Gemini stand-in, whose Live WebSocket is the Gemini Live double
// (test/support/fake-gemini-live.ts), reached with the organisation's own Gemini key. A WebRTC caller (rtc-node) hears
// the first message in the model's voice, asks a question, and hears the answer the model gave after calling a
// server-URL tool. The call record has the transcript (Gemini's input and output transcription), the tool call, each
// turn's voice-to-voice latency, the analysis (the configured analysis model, Gemini's generateContent on the same
// stand-in) and the recording.
// A second call: the caller talks over a long answer (barge-in); the double interrupts its turn, the agent's audio
// stops, and the model answers what the caller said.
// The script is the OpenAI Realtime e2e's (test/support/realtime-receptionist.ts). The double hears speech by energy
// and its words are scripted per turn (it does no recognition); what the caller hears is festival's speech of the
// double's reply, transcribed here with a grammar.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stackFixture } from '../support/stack-fixture.ts';
import { startFakeGemini, type FakeGemini } from '../support/fake-gemini.ts';
import { RtcClient, disposeRtc, nowMs } from '../support/rtc-client.ts';
import { resample, synthesize, transcribe } from '../support/speech.ts';
import { untilEvery } from '../support/e2e.ts';
import { FIRST_MESSAGE, ANSWER, GRAMMAR } from '../support/dental-phrases.ts';
import { LONG, QUESTION, hoursTool, receptionistResponder, receptionistTranscriber, startHoursTool } from '../support/realtime-receptionist.ts';

const MODEL = 'gemini-2.5-flash-native-audio-preview-09-2025';
const ORG_KEY = 'gm-org-gemini-0123456789';

let fake: FakeGemini;
let tool: Awaited<ReturnType<typeof startHoursTool>>;
let agentId: string;

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250);

beforeAll(async () => {
  // The model's voice: festival's speech of its words, at the API's 24 kHz.
  fake = await startFakeGemini({ live: { apiKeys: [ORG_KEY] }, speaker: async (text) => resample(await synthesize(text), 24000).samples });
  fake.setResponder(() => ({ text: JSON.stringify({ summary: 'The caller asked when the practice opens.', outcome: 'question_answered' }) }));
  fake.setLiveTranscriber(receptionistTranscriber);
  fake.setLiveResponder(receptionistResponder());
  tool = await startHoursTool();

  await fixture.start({
    org: 'e2e-gemini-live',
    worker: true,
    // GEMINI_BASE_URL is the operator's endpoint (a Gemini model takes no base_url of its own). The post-call analysis
    // of a realtime call goes to the configured analysis model: Gemini's generateContent on the same stand-in.
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      GEMINI_BASE_URL: fake.url,
      WORKER_SILENCE_SECONDS: '15',
      DISPATCH_TIMEOUT_SECONDS: '60',
      REAP_DELAY_SECONDS: '1',
      JOB_INIT_TIMEOUT_MS: '60000',
      ANALYSIS_PROVIDER: 'gemini',
      ANALYSIS_BASE_URL: fake.url,
      ANALYSIS_MODEL: 'gemini-2.5-flash',
    },
  });
  const key = await api('POST', '/v1/integrations', { name: 'gemini', provider: 'gemini', api_key: ORG_KEY });
  expect(key.status, JSON.stringify(key.body)).toBe(201);
  const created = await api('POST', '/v1/tools', hoursTool(tool.url));
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const model = await api('POST', '/v1/models', {
    name: 'Gemini Live',
    model: MODEL,
    system_prompt: 'You are the receptionist of Acme Dental.',
    tool_ids: [created.body.id],
    realtime: { voice: 'Kore', turn_detection: 'server_vad', silence_duration_ms: 500 },
  });
  expect(model.status, JSON.stringify(model.body)).toBe(201);
  expect(model.body).toMatchObject({ provider: 'gemini', realtime: { voice: 'Kore', turn_detection: 'server_vad', silence_duration_ms: 500 } });
  const agent = await api('POST', '/v1/agents', { name: 'Gemini receptionist', llm_id: model.body.id, first_message: FIRST_MESSAGE, enable_recording: true, silence_timeout_seconds: 120 });
  expect(agent.status, JSON.stringify(agent.body)).toBe(201);
  agentId = agent.body.id;
}, 180_000);

afterAll(async () => {
  await disposeRtc();
  await fixture.stop();
  tool?.close();
  await fake?.close();
});

/** What the double saw, to tell a slow machine from a session that never reached it. */
const seen = () => JSON.stringify(fake.live.map((c) => ({ closed: c.closedWith, received: c.received, responses: c.responses.map((r) => [r.status, r.text.slice(0, 40)]) })));

describe('a web call to a Gemini Live agent', () => {
  it('greets in the model voice, answers a spoken question through a tool, and records transcript, latency and analysis', async () => {
    const created = await api('POST', '/v1/calls/web', { agent_id: agentId });
    expect(created.status).toBe(201);
    const callId = created.body.id as string;
    const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
    try {
      await client.publishMicrophone();
      const agentAudio = client.record({});
      const greeting = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 }).catch((err: Error) => {
        throw new Error(`${err.message}; live connections: ${seen()}`);
      });
      expect(await transcribe(greeting, { jsgf: GRAMMAR })).toBe('hello thank you for calling acme dental');

      agentAudio.reset();
      await client.speak(await synthesize('What time do you open tomorrow morning'), { trailingSilenceMs: 1500 });
      const answer = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 }).catch((err: Error) => {
        throw new Error(`${err.message}; live connections: ${seen()}`);
      });
      expect(await transcribe(answer, { jsgf: GRAMMAR })).toBe('we open at nine in the morning');
    } finally {
      await client.leave();
    }
    // The worker called the tool with the model's arguments; the double's session had the agent's settings and the org's key.
    expect(tool.requests.at(-1)).toMatchObject({ call_id: callId, name: 'opening_hours', arguments: { day: 'tomorrow' } });
    const conn = fake.live.at(-1)!;
    expect(conn.key).toBe(ORG_KEY);
    expect(conn.setup).toMatchObject({
      model: `models/${MODEL}`,
      generationConfig: { speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
      realtimeInputConfig: { automaticActivityDetection: { silenceDurationMs: 500 } },
    });
    expect(JSON.stringify(conn.setup!.systemInstruction)).toContain('receptionist of Acme Dental');

    const call = await until('the record', async () => {
      const c = (await api('GET', `/v1/calls/${callId}`)).body;
      return c.status === 'completed' && c.analysis?.status === 'completed' && c.messages?.some((m: { content: string }) => m.content === ANSWER) ? c : null;
    });
    expect(call.messages[0]).toMatchObject({ role: 'agent', content: FIRST_MESSAGE });
    expect(call.messages).toEqual(expect.arrayContaining([expect.objectContaining({ role: 'user', content: QUESTION })]));
    expect(call.messages.some((m: { tool_call?: { name: string } }) => m.tool_call?.name === 'opening_hours')).toBe(true);
    expect(call.latency.e2e.samples).toBeGreaterThanOrEqual(1);
    expect(call.latency.e2e.p50_ms).toBeGreaterThan(300);
    expect(call).toMatchObject({ outcome: 'question_answered', ai_summary: 'The caller asked when the practice opens.' });
    expect(call.analysis).toMatchObject({ method: 'analysis_model', model: 'gemini/gemini-2.5-flash' });
    expect(fake.requests.at(-1)?.apiKey).toBe(ORG_KEY);
    const recorded = await until('the recording', async () => {
      const c = (await api('GET', `/v1/calls/${callId}`)).body;
      return c.recording_url ? c : null;
    });
    expect((await fetch(recorded.recording_url)).status).toBe(200);
  }, 300_000);

  it('stops a long answer when the caller talks over it, and answers the caller', async () => {
    fake.setLiveResponder(receptionistResponder({ long: true }));
    const created = await api('POST', '/v1/calls/web', { agent_id: agentId });
    expect(created.status).toBe(201);
    const connections = fake.live.length;
    const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
    try {
      await client.publishMicrophone();
      const agentAudio = client.record({});
      await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      // The session's last connection (the plugin reconnects once its tools are set).
      const conn = await until("the call's live connection", async () => fake.live.slice(connections).findLast((c) => !c.closed));

      agentAudio.reset();
      await client.speak(await synthesize('What time do you open tomorrow morning'), { trailingSilenceMs: 1500 });
      // The long answer plays; two seconds in, the caller talks over it.
      await agentAudio.until(() => agentAudio.firstSpeechAt !== undefined && nowMs() - agentAudio.firstSpeechAt >= 2000, 90_000, 'the long answer');
      const long = await until('the long answer', async () => conn.responses.find((r) => /\bopen\b/i.test(r.lastUser) && r.firstAudioAt !== undefined));
      // Where the barge-in starts in the recording (it takes frames, silent or not, at the line's pace).
      const bargeInAt = agentAudio.pcm().samples.length;
      await client.speak(await synthesize('Thank you'), { trailingSilenceMs: 1500 });

      // The double interrupted the model's turn (mid-stream, or while its audio still played) well before its end.
      await until('the interruption', async () => long.interruptedAt ?? null);
      expect(long.heardMs).toBeLessThan(long.audioMs - 2000);
      // And the agent answers what the caller said over it. From a second into the barge-in (the cut reaches the
      // caller within it; the answer comes after the caller's words, the double's silence and its first-audio delay),
      // what plays is that answer alone: the long answer's rest would be heard there had its audio not stopped.
      await until('the answer to the barge-in', async () => conn.responses.find((r) => r.lastUser === 'Thank you.' && r.status === 'completed') ?? null);
      await agentAudio.until(() => agentAudio.lastSpeechAt !== undefined && nowMs() - agentAudio.lastSpeechAt >= 1500, 90_000, 'the answer played');
      const all = agentAudio.pcm();
      const reply = { samples: all.samples.subarray(bargeInAt + all.sampleRate), sampleRate: all.sampleRate };
      expect(await transcribe(reply, { jsgf: GRAMMAR }), seen()).toBe('goodbye and have a nice day');
      expect(conn.responses.filter((r) => /\bopen\b/i.test(r.lastUser))).toHaveLength(1);
      expect(conn.responses.at(-1)).toMatchObject({ lastUser: 'Thank you.', text: 'Goodbye and have a nice day.' });
      expect(LONG.startsWith(long.text)).toBe(true);
    } finally {
      await client.leave();
    }
  }, 300_000);
});
