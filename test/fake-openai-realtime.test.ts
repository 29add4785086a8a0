// The OpenAI Realtime double (fake-openai-realtime.ts) driven by the real @livekit/agents-plugin-openai 1.9
// RealtimeModel: the session update, audio appended and heard by server VAD, the input transcription, a response's
// audio and transcript deltas, a function call answered with its output, an interruption by the caller's speech, and
// errors (a bad key, a failed response, a cancel with nothing to cancel).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initializeLogger, type llm } from '@livekit/agents';
import * as openai from '@livekit/agents-plugin-openai';
import { AudioFrame } from '@livekit/rtc-node';
import { startFakeOpenAI, type FakeOpenAI } from './support/fake-openai.ts';
import { upgradeStatus } from './support/ws-upgrade.ts';

initializeLogger({ pretty: false, level: 'fatal' });

let fake: FakeOpenAI;
beforeAll(async () => {
  fake = await startFakeOpenAI({ realtime: { apiKeys: ['sk-test'], firstAudioMs: [300, 500] } });
});
afterAll(async () => {
  await fake.close();
});

const RATE = 24000;
/** `ms` of a loud tone (speech to an energy VAD), or of silence. */
function audio(ms: number, loud: boolean): AudioFrame[] {
  const frames: AudioFrame[] = [];
  for (let at = 0; at < ms; at += 10) {
    const n = RATE / 100;
    const data = Int16Array.from({ length: n }, (_, i) => (loud ? Math.round(6000 * Math.sin((2 * Math.PI * 220 * (at * 24 + i)) / RATE)) : 0));
    frames.push(new AudioFrame(data, RATE, 1, n));
  }
  return frames;
}

/** A session of the real plugin against the double, with what it reported. */
function open(options: ConstructorParameters<typeof openai.realtime.RealtimeModel>[0] = {}) {
  const at = fake.realtime.length;
  const model = new openai.realtime.RealtimeModel({ baseURL: fake.url, apiKey: 'sk-test', model: 'gpt-realtime', voice: 'marin', ...options });
  const session = model.session();
  const seen = { transcripts: [] as string[], speechStarted: 0, errors: [] as { recoverable: boolean; message: string }[], metrics: [] as { ttftMs: number; cancelled: boolean }[] };
  const replies: { text: string; audioFrames: number; calls: llm.FunctionCall[] }[] = [];
  const done: Promise<void>[] = [];
  session.on('input_audio_transcription_completed', (ev: { transcript: string; isFinal: boolean }) => ev.isFinal && seen.transcripts.push(ev.transcript));
  session.on('input_speech_started', () => seen.speechStarted++);
  session.on('error', (ev: { error: Error; recoverable: boolean }) => seen.errors.push({ recoverable: ev.recoverable, message: ev.error.message }));
  session.on('metrics_collected', (m: { ttftMs: number; cancelled: boolean }) => seen.metrics.push({ ttftMs: m.ttftMs, cancelled: m.cancelled }));
  session.on('generation_created', (ev: llm.GenerationCreatedEvent) => {
    const reply = { text: '', audioFrames: 0, calls: [] as llm.FunctionCall[] };
    replies.push(reply);
    done.push(
      (async () => {
        const reads: Promise<void>[] = [];
        for await (const msg of ev.messageStream) {
          reads.push((async () => { for await (const t of msg.textStream) reply.text += typeof t === 'string' ? t : t.text; })());
          reads.push((async () => { for await (const _f of msg.audioStream) reply.audioFrames++; })());
        }
        for await (const call of ev.functionStream) reply.calls.push(call);
        await Promise.all(reads);
      })(),
    );
  });
  const push = (frames: AudioFrame[]) => frames.forEach((f) => session.pushAudio(f));
  return { model, session, seen, replies, done, push, connection: () => fake.realtime[at]! };
}

const until = async (check: () => boolean, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('OpenAI Realtime double, with the real plugin', () => {
  it('hears a turn by server VAD, transcribes it, and answers in audio with its transcript, 300 ms or more after the end of the turn', async () => {
    fake.setRealtimeTranscriber(() => 'When are you open tomorrow?');
    fake.setRealtimeResponder((turn) => ({ text: turn.lastUser.includes('open') ? 'We open at nine in the morning.' : 'Sorry?' }));
    const s = open({ turnDetection: { type: 'server_vad', silence_duration_ms: 400 } });
    await until(() => !!s.connection() && s.connection().received.includes('session.update'));
    const conn = s.connection();
    expect(conn.params.get('model')).toBe('gpt-realtime');
    expect(conn.headers.authorization).toBe('Bearer sk-test');
    s.push([...audio(800, true), ...audio(600, false)]);
    await until(() => s.replies.length === 1 && s.seen.metrics.length === 1);
    await Promise.all(s.done);
    expect(conn.session.audio.input.turn_detection).toMatchObject({ type: 'server_vad', silence_duration_ms: 400 });
    expect(conn.session.audio.output.voice).toBe('marin');
    expect(s.seen.speechStarted).toBe(1);
    expect(s.seen.transcripts).toEqual(['When are you open tomorrow?']);
    expect(s.replies[0]!.text).toBe('We open at nine in the morning.');
    expect(s.replies[0]!.audioFrames).toBeGreaterThan(0);
    const r = conn.responses[0]!;
    expect(r).toMatchObject({ status: 'completed', lastUser: 'When are you open tomorrow?' });
    expect(r.firstAudioAt! - r.turnEndedAt).toBeGreaterThanOrEqual(300);
    expect(conn.sent).toEqual(expect.arrayContaining(['input_audio_buffer.speech_stopped', 'input_audio_buffer.committed', 'response.output_audio_transcript.done', 'response.done']));
    await s.session.close();
  }, 30_000);

  it('calls a function, takes its output as an item, and speaks the result in the next response', async () => {
    fake.setRealtimeTranscriber(() => 'Is there a slot on Friday?');
    fake.setRealtimeResponder((turn) => {
      const out = turn.items.findLast((i) => i.type === 'function_call_output');
      if (out) return { text: `Yes, ${JSON.parse(out.output!).slot} is free.` };
      return { toolCalls: [{ name: 'check_slot', arguments: { day: 'friday' } }] };
    });
    const s = open({ turnDetection: { type: 'semantic_vad', eagerness: 'high' } });
    s.push([...audio(700, true), ...audio(500, false)]);
    await until(() => s.replies.length === 1 && s.seen.metrics.length === 1);
    await Promise.all(s.done);
    const call = s.replies[0]!.calls[0]!;
    expect(call.name).toBe('check_slot');
    expect(JSON.parse(call.args)).toEqual({ day: 'friday' });
    // As the agent activity returns a tool's output: an item, then a response.
    s.session.sendEvent({ type: 'conversation.item.create', item: { id: 'out_1', type: 'function_call_output', call_id: call.callId, output: JSON.stringify({ slot: 'ten o clock' }) } } as never);
    const gen = await s.session.generateReply();
    expect(gen.userInitiated).toBe(true);
    await until(() => s.replies.length === 2 && s.seen.metrics.length === 2);
    await Promise.all(s.done);
    expect(s.replies[1]!.text).toBe('Yes, ten o clock is free.');
    expect(s.connection().items.map((i) => i.type)).toEqual(['message', 'function_call', 'function_call_output', 'message']);
    await s.session.close();
  }, 30_000);

  it('stops the response when the caller talks over it (turn_detected), and takes the truncation of what was played', async () => {
    fake.setRealtimeTranscriber(({ index }) => (index === 0 ? 'Tell me everything.' : 'Stop.'));
    fake.setRealtimeResponder((turn) => ({ text: turn.lastUser === 'Stop.' ? 'Okay.' : Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ') }));
    const s = open({ turnDetection: { type: 'server_vad', silence_duration_ms: 300 } });
    s.push([...audio(600, true), ...audio(400, false)]);
    await until(() => (s.connection()?.audioDeltas ?? 0) > 3);
    s.push(audio(500, true));
    await until(() => s.connection().responses[0]!.status !== 'in_progress');
    const first = s.connection().responses[0]!;
    expect(first).toMatchObject({ status: 'cancelled', reason: 'turn_detected' });
    expect(first.audioMs).toBeLessThan(200 * 60);
    const item = s.connection().items.find((i) => i.role === 'assistant')!;
    await s.session.truncate({ messageId: (item as { id: string }).id, audioEndMs: 250 });
    await until(() => s.connection().truncations.length === 1);
    expect(s.connection().truncations[0]!.audioEndMs).toBe(250);
    s.push(audio(400, false));
    await until(() => s.connection().responses.length === 2 && s.connection().responses[1]!.status === 'completed');
    expect(s.seen.metrics.some((m) => m.cancelled)).toBe(true);
    // Nothing left to cancel: the real API's error, which the plugin ignores.
    await s.session.interrupt();
    s.session.sendEvent({ type: 'response.cancel' } as never);
    await until(() => s.connection().sent.includes('error'));
    expect(s.seen.errors).toEqual([]);
    await s.session.close();
  }, 30_000);

  it('fails a response as the real API does, refuses a bad key at the upgrade, and answers unknown events with an error', async () => {
    fake.setRealtimeTranscriber(() => 'Hello?');
    fake.setRealtimeResponder(() => ({ error: { type: 'server_error', code: 'server_error', message: 'The server had an error.' } }));
    const s = open({ turnDetection: { type: 'server_vad', silence_duration_ms: 300 } });
    s.push([...audio(500, true), ...audio(400, false)]);
    await until(() => s.seen.errors.length === 1);
    expect(s.seen.errors[0]).toMatchObject({ recoverable: true });
    expect(s.connection().responses[0]!.status).toBe('failed');
    s.session.sendEvent({ type: 'response.wish' } as never);
    s.session.sendEvent({ type: 'input_audio_buffer.clear' } as never);
    s.session.sendEvent({ type: 'input_audio_buffer.commit' } as never);
    await until(() => s.seen.errors.length === 3);
    expect(s.seen.errors.map((e) => e.message).join('|')).toMatch(/Invalid value: 'response.wish'.*\|Error committing input audio buffer/);
    await s.session.close();
    const ws = fake.url.replace(/^http/, 'http') + '/realtime?model=gpt-realtime';
    expect(await upgradeStatus(ws, { authorization: 'Bearer sk-wrong' })).toBe(401);
    expect(await upgradeStatus(ws, { authorization: 'Bearer sk-test' })).toBe(101);
  }, 30_000);
});
