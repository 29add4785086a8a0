// A web call end to end: the real supervisor starts LiveKit, the control plane and a media worker; a real
// WebRTC client (rtc-node) joins with the participant token, hears the first message, asks a question in
// synthesized speech and hears the answer of the LLM stand-in; then the call is stopped and its record, its
// webhooks (signed, in order) and its recording are checked. A second call loses its worker mid-call.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import type { TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { answerFromWords, startFakeOpenAI, lastUserText, type FakeOpenAI } from '../support/fake-openai.ts';
import { webCall } from '../support/web-caller.ts';
import { disposeRtc } from '../support/rtc-client.ts';
import { synthesize, transcribe, decodeWav } from '../support/speech.ts';
import { untilEvery } from '../support/e2e.ts';
import { FIRST_MESSAGE, ANSWER, OTHER_ANSWER, GRAMMAR } from '../support/dental-phrases.ts';

let stack: TestStack;
let llm: FakeOpenAI;
let agentId: string;
let webhookSecret: string;
const received: { body: Record<string, any>; headers: http.IncomingHttpHeaders; raw: string }[] = [];
let receiver: http.Server;

const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(250);

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    const system = String(req.messages[0]?.content ?? '');
    if (system.startsWith('You analyse phone and web calls')) {
      return { text: JSON.stringify({ summary: 'The caller asked when the practice opens.', outcome: 'question_answered' }) };
    }
    // The answer depends on what the worker's STT heard: the opening-hours answer only when the transcript
    // has the question's words, a distractor otherwise, so a wrong transcript fails the check of the answer.
    return answerFromWords([{ words: ['open', 'opening', 'time', 'morning', 'tomorrow'], text: ANSWER }], OTHER_ANSWER)(req);
  });
  receiver = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      received.push({ body: JSON.parse(raw), headers: req.headers, raw });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));

  ({ stack } = await fixture.start({
    org: 'e2e',
    worker: true,
    env: { SSRF_ALLOWLIST: '127.0.0.1,localhost', WORKER_SILENCE_SECONDS: '15', DISPATCH_TIMEOUT_SECONDS: '30', REAP_DELAY_SECONDS: '1' },
  }));

  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'You are the receptionist of Acme Dental. Answer in one short sentence.' });
  agentId = await createLocalAgent(api, { name: 'Receptionist', llm_id: modelId, first_message: FIRST_MESSAGE, enable_recording: true });
  const hook = await api('POST', '/v1/webhooks', {
    name: 'e2e',
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`,
    events: ['call.started', 'call.ended', 'transcript.final', 'call.analyzed', 'call.recording.available'],
  });
  expect(hook.status).toBe(201);
  webhookSecret = hook.body.secret;
}, 180_000);

afterAll(async () => {
  await disposeRtc();
  await fixture.stop();
  receiver?.close();
  await llm?.close();
});

describe('a web call through LiveKit', () => {
  it('greets, answers a spoken question, stops with api_stop, and reports everything', async () => {
    const { callId, client, heard: agentAudio } = await webCall(api, { agent_id: agentId, variables: { customer_name: 'Ada' } });
    try {

      // 1. The first message is heard.
      const greeting = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      const heard = await transcribe(greeting, { jsgf: GRAMMAR });
      expect(heard).toBe('hello thank you for calling acme dental');

      // 2. A spoken question gets the LLM stand-in's answer.
      agentAudio.reset();
      await client.speak(await synthesize('What time do you open tomorrow morning'), { trailingSilenceMs: 1500 });
      const answer = await agentAudio.utterance({ silenceMs: 1500, timeoutMs: 90_000 });
      const heardAnswer = await transcribe(answer, { jsgf: GRAMMAR });
      expect(heardAnswer).toBe('we open at nine in the morning');
      // The worker's own STT (pocketsphinx, no grammar) turned the question into a user turn whose words
      // chose the answer heard above.
      const asked = llm.requests.filter((r) => !String(r.messages[0]?.content).startsWith('You analyse')).map(lastUserText);
      expect(
        asked.some((t) => /\b(open|opening|time|morning|tomorrow)\b/i.test(t)),
        `the LLM was asked ${JSON.stringify(asked)}`,
      ).toBe(true);
    } finally {
      await client.leave();
    }

    // 3. Stop: the call is completed at once (api_stop, ended at the stop), then the worker's report fills in
    // the conversation without moving the end (it used to arrive ~15 s later and bill those seconds).
    // Orderings, not durations (the machine is shared): ended while the stop was being answered, and completed
    // for the very next read.
    const beforeStop = Date.now();
    const stopped = await api('POST', `/v1/calls/${callId}/stop`);
    const afterStop = Date.now();
    expect(stopped.status).toBe(200);
    expect(stopped.body).toMatchObject({ status: 'completed', end_reason: 'api_stop' });
    expect((await api('GET', `/v1/calls/${callId}`)).body).toMatchObject({ status: 'completed', ended_at: stopped.body.ended_at });
    const endedAt = Date.parse(stopped.body.ended_at);
    expect(endedAt).toBeGreaterThanOrEqual(beforeStop);
    expect(endedAt).toBeLessThanOrEqual(afterStop);
    const call = await until('the conversation', async () => {
      const c = (await api('GET', `/v1/calls/${callId}`)).body;
      return c.status === 'completed' && c.messages?.some((m: { content: string }) => m.content === ANSWER) && (c.latency?.llm_ttft.samples ?? 0) > 0 ? c : null;
    });
    expect(call.end_reason).toBe('api_stop');
    expect(call.ended_at).toBe(stopped.body.ended_at);
    expect(call.duration_seconds).toBe(stopped.body.duration_seconds);
    expect(call.messages[0]).toMatchObject({ role: 'agent', content: FIRST_MESSAGE });
    expect(call.messages.some((m: { role: string }) => m.role === 'user')).toBe(true);
    expect(call.messages.some((m: { role: string; content: string }) => m.role === 'agent' && m.content === ANSWER)).toBe(true);
    expect(call.latency.llm_ttft.samples).toBeGreaterThanOrEqual(1);
    expect(call.latency.tts_ttfb.samples).toBeGreaterThanOrEqual(1);
    expect(call.duration_seconds).toBeGreaterThan(0);
    expect(call.credits_used).toBeCloseTo(call.duration_seconds / 60, 6);

    // 4. The analysis, then the webhooks in order, each signed.
    const analysed = await until('the analysis', async () => {
      const c = (await api('GET', `/v1/calls/${callId}`)).body;
      return c.analysis.status === 'completed' ? c : null;
    });
    expect(analysed).toMatchObject({ outcome: 'question_answered', ai_summary: 'The caller asked when the practice opens.' });
    const ordered = ['call.started', 'call.ended', 'transcript.final', 'call.analyzed'];
    const events = await until('the webhooks', async () => {
      const mine = received.filter((r) => r.body.call_id === callId && ordered.includes(r.body.event));
      return mine.length >= ordered.length ? mine : null;
    });
    expect(events.map((e) => e.body.event)).toEqual(ordered);
    const wh = new Webhook(webhookSecret);
    for (const e of events) {
      expect(() => wh.verify(e.raw, e.headers as Record<string, string>)).not.toThrow();
    }
    expect(events[1]!.body).toMatchObject({ call_id: callId, agent_id: agentId, status: 'completed' });
    expect(events[2]!.body.messages[0]).toEqual({ role: 'agent', content: FIRST_MESSAGE });

    // 5. The recording: a signed URL serving audio, refusing a tampered signature.
    const withRecording = await until('the recording', async () => {
      const c = (await api('GET', `/v1/calls/${callId}`)).body;
      return c.recording_url ? c : null;
    });
    const audio = await fetch(withRecording.recording_url);
    expect(audio.status).toBe(200);
    expect(audio.headers.get('content-type')).toBe('audio/wav');
    const wav = decodeWav(Buffer.from(await audio.arrayBuffer()));
    expect(wav.samples.length / wav.sampleRate).toBeGreaterThan(2);
    const tampered = new URL(withRecording.recording_url);
    // Change the first character to a different one (a fixed 'x' would leave 1 in 64 signatures untouched).
    const sig = tampered.searchParams.get('signature')!;
    tampered.searchParams.set('signature', `${sig[0] === 'x' ? 'y' : 'x'}${sig.slice(1)}`);
    expect((await fetch(tampered)).status).toBe(403);
  }, 300_000);

  it('ends a call whose worker is killed mid-call within a bounded time, with worker_lost', async () => {
    const { callId, client, heard: agentAudio } = await webCall(api, { agent_id: agentId });
    try {
      await agentAudio.utterance({ silenceMs: 800, timeoutMs: 90_000 });
      await until('the call to be in progress', async () => (await api('GET', `/v1/calls/${callId}`)).body.status === 'in_progress');

      const worker = stack.services.find((s) => s.name === 'worker');
      expect(worker?.pid).toBeGreaterThan(0);
      // The whole process group: the worker and its job processes, as a crashed machine would lose them.
      process.kill(-worker!.pid!, 'SIGKILL');

      // LiveKit takes about 20 s to close a participant whose process died (its ICE times out), then reports
      // participant_left; the reaper checks REAP_DELAY_SECONDS (1 s here) later and its queue is polled every
      // 2 s. The bound leaves room for a loaded machine, not for a 30 s backstop poll or a minute's sweep.
      const ended = await until(
        'the reaper to end the call',
        async () => {
          const c = (await api('GET', `/v1/calls/${callId}`)).body;
          return c.status === 'completed' ? c : null;
        },
        60_000,
      );
      expect(ended.end_reason).toBe('worker_lost');
    } finally {
      await client.leave();
    }
  }, 180_000);

  it('refuses a publishable key from a wrong origin with 403', async () => {
    const pk = await api('POST', '/v1/publishable-keys', { name: 'site', allowed_origins: ['https://shop.example.com'], scopes: ['calls:web'] });
    expect(pk.status).toBe(201);
    const wrong = await fetch(`${stack.controlPlaneUrl}/v1/calls/web`, {
      method: 'POST',
      headers: { authorization: `Bearer ${pk.body.key}`, 'content-type': 'application/json', origin: 'https://evil.example.net' },
      body: JSON.stringify({ agent_id: agentId }),
    });
    expect(wrong.status).toBe(403);
    expect(((await wrong.json()) as { type: string }).type).toBe('forbidden');
  });
});
