// The Gemini Live double (fake-gemini-live.ts) driven by the real @google/genai client's `live.connect`, the one the
// google plugin's RealtimeModel uses: the setup and setupComplete, 16 kHz audio heard by the double's activity
// detection (with the setup's silence), the input transcription, the model's 24 kHz audio with its output
// transcription and the turn's end with usage, a function call answered by a tool response, an interruption by the
// caller's speech, activity detection turned off (activityStart / activityEnd), and errors (a bad key, a model not
// served live, a wrong path, a scripted internal error).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GoogleGenAI, Modality, type LiveServerMessage, type Session } from '@google/genai';
import { startFakeGemini, type FakeGemini } from './support/fake-gemini.ts';
import { upgradeStatus } from './support/ws-upgrade.ts';

let fake: FakeGemini;
beforeAll(async () => {
  fake = await startFakeGemini({ live: { apiKeys: ['gm-test'], firstAudioMs: [300, 500] } });
});
afterAll(async () => {
  await fake.close();
});

const RATE = 16000;
/** `ms` of a loud tone (speech to an energy detector) or of silence, as base64 16 kHz PCM in 20 ms chunks. */
function audio(ms: number, loud: boolean): string[] {
  const chunks: string[] = [];
  for (let at = 0; at < ms; at += 20) {
    const n = RATE / 50;
    const data = Int16Array.from({ length: n }, (_, i) => (loud ? Math.round(6000 * Math.sin((2 * Math.PI * 220 * ((at * RATE) / 1000 + i)) / RATE)) : 0));
    chunks.push(Buffer.from(data.buffer).toString('base64'));
  }
  return chunks;
}

const TOOLS = [{ functionDeclarations: [{ name: 'check_slot', description: 'Is a slot free', parameters: { type: 'OBJECT', properties: { day: { type: 'STRING' } } } }] }];

/** A Live session of the real client against the double, and what it received. */
async function open(config: Record<string, unknown> = {}, apiKey = 'gm-test', model = 'gemini-2.5-flash-native-audio-preview-09-2025') {
  const at = fake.live.length;
  const ai = new GoogleGenAI({ apiKey, httpOptions: { baseUrl: fake.url.replace(/\/v1beta$/, '') } });
  const messages: LiveServerMessage[] = [];
  const closes: { code: number; reason: string }[] = [];
  const session: Session = await ai.live.connect({
    model,
    config: { responseModalities: [Modality.AUDIO], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } }, inputAudioTranscription: {}, outputAudioTranscription: {}, ...config },
    callbacks: { onmessage: (m) => messages.push(m), onclose: (e) => closes.push({ code: e.code, reason: e.reason }) },
  });
  const send = (chunks: string[]) => chunks.forEach((data) => session.sendRealtimeInput({ audio: { data, mimeType: 'audio/pcm;rate=16000' } }));
  const text = (field: 'inputTranscription' | 'outputTranscription', from = 0) => messages.slice(from).map((m) => m.serverContent?.[field]?.text ?? '').join('');
  const count = (pred: (m: LiveServerMessage) => unknown) => messages.filter(pred).length;
  return { session, messages, closes, send, text, count, connection: () => fake.live[at]! };
}

const until = async (check: () => boolean, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
};

describe('Gemini Live double, with the real @google/genai client', () => {
  it('hears a turn by its activity detection, transcribes it, and answers in 24 kHz audio with its transcription, 300 ms or more after the turn', async () => {
    fake.setLiveTranscriber(() => 'When are you open tomorrow?');
    fake.setLiveResponder((turn) => ({ text: turn.lastUser.includes('open') ? 'We open at nine in the morning.' : 'Sorry?' }));
    const s = await open({ systemInstruction: { parts: [{ text: 'You are a receptionist.' }] }, realtimeInputConfig: { automaticActivityDetection: { silenceDurationMs: 400 } } });
    const conn = s.connection();
    expect(conn.key).toBe('gm-test');
    expect(conn.setup).toMatchObject({
      model: 'models/gemini-2.5-flash-native-audio-preview-09-2025',
      generationConfig: { responseModalities: ['AUDIO'], speechConfig: { voiceConfig: { prebuiltVoiceConfig: { voiceName: 'Kore' } } } },
      realtimeInputConfig: { automaticActivityDetection: { silenceDurationMs: 400 } },
    });
    s.send([...audio(800, true), ...audio(600, false)]);
    await until(() => s.count((m) => m.serverContent?.turnComplete) === 1);
    expect(s.text('inputTranscription')).toBe('When are you open tomorrow?');
    expect(s.text('outputTranscription')).toBe('We open at nine in the morning.');
    const parts = s.messages.flatMap((m) => m.serverContent?.modelTurn?.parts ?? []);
    expect(parts.length).toBeGreaterThan(0);
    expect(parts.every((p) => p.inlineData?.mimeType === 'audio/pcm;rate=24000' && (p.inlineData.data?.length ?? 0) > 0)).toBe(true);
    const end = s.messages.find((m) => m.serverContent?.turnComplete)!;
    expect(end.usageMetadata?.responseTokenCount).toBeGreaterThan(0);
    expect(s.count((m) => m.serverContent?.generationComplete)).toBe(1);
    const r = conn.responses[0]!;
    expect(r).toMatchObject({ status: 'completed', lastUser: 'When are you open tomorrow?', text: 'We open at nine in the morning.' });
    expect(r.firstAudioAt! - r.turnEndedAt).toBeGreaterThanOrEqual(300);
    expect(conn.transcript().map((t) => t.role)).toEqual(['user', 'assistant']);
    s.session.close();
  }, 30_000);

  it('calls a function, waits for its response, and speaks the result', async () => {
    fake.setLiveTranscriber(() => 'Is there a slot on Friday?');
    fake.setLiveResponder((turn) => {
      const out = turn.items.findLast((i) => i.type === 'function_call_output');
      if (out) return { text: `Yes, ${JSON.parse(out.output!).slot} is free.` };
      return { toolCalls: [{ name: 'check_slot', arguments: { day: 'friday' } }] };
    });
    const s = await open({ tools: TOOLS });
    expect(s.connection().setup!.tools[0].functionDeclarations[0].name).toBe('check_slot');
    s.send([...audio(700, true), ...audio(700, false)]);
    await until(() => s.count((m) => m.toolCall) === 1);
    const call = s.messages.find((m) => m.toolCall)!.toolCall!.functionCalls![0]!;
    expect(call).toMatchObject({ name: 'check_slot', args: { day: 'friday' } });
    // No turnComplete while the blocking call waits.
    expect(s.count((m) => m.serverContent?.turnComplete)).toBe(0);
    s.session.sendToolResponse({ functionResponses: [{ id: call.id!, name: call.name!, response: { output: JSON.stringify({ slot: 'ten o clock' }) } }] });
    await until(() => s.count((m) => m.serverContent?.turnComplete) === 1);
    expect(s.text('outputTranscription')).toBe('Yes, ten o clock is free.');
    expect(s.connection().items.map((i) => i.type)).toEqual(['message', 'function_call', 'function_call_output', 'message']);
    expect(s.connection().toolResponses[0]).toMatchObject({ id: call.id, name: 'check_slot' });
    s.session.close();
  }, 30_000);

  it('stops the model turn when the caller talks over it (interrupted, then the turn ends), and answers the new turn', async () => {
    fake.setLiveTranscriber(({ index }) => (index === 0 ? 'Tell me everything.' : 'Stop.'));
    fake.setLiveResponder((turn) => ({ text: turn.lastUser === 'Stop.' ? 'Okay.' : Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ') }));
    const s = await open({ realtimeInputConfig: { automaticActivityDetection: { silenceDurationMs: 300 } } });
    s.send([...audio(600, true), ...audio(400, false)]);
    await until(() => s.connection().audioParts > 3);
    s.send(audio(500, true));
    await until(() => s.connection().responses[0]!.status !== 'in_progress');
    const first = s.connection().responses[0]!;
    expect(first).toMatchObject({ status: 'cancelled', reason: 'interrupted' });
    expect(first.audioMs).toBeLessThan(200 * 60);
    expect(first.heardMs).toBeLessThanOrEqual(first.audioMs);
    const interrupted = s.messages.findIndex((m) => m.serverContent?.interrupted);
    expect(interrupted).toBeGreaterThan(0);
    expect(s.messages.slice(interrupted).some((m) => m.serverContent?.turnComplete)).toBe(true);
    const before = s.messages.length;
    s.send(audio(400, false));
    await until(() => s.connection().responses.length === 2 && s.connection().responses[1]!.status === 'completed');
    await until(() => s.text('outputTranscription', before) === 'Okay.');
    s.session.close();
  }, 30_000);

  it('interrupts audio still playing at the client: the turn was complete, the caller speaks before its audio could have ended', async () => {
    fake.setLiveTranscriber(({ index }) => (index === 0 ? 'Tell me everything.' : 'Stop.'));
    fake.setLiveResponder((turn) => ({ text: turn.lastUser === 'Stop.' ? 'Okay.' : Array.from({ length: 200 }, (_, i) => `word${i}`).join(' ') }));
    const s = await open({ realtimeInputConfig: { automaticActivityDetection: { silenceDurationMs: 300 } } });
    s.send([...audio(600, true), ...audio(400, false)]);
    // 12 s of audio, sent four times faster than it plays.
    await until(() => s.count((m) => m.serverContent?.turnComplete) === 1);
    expect(s.count((m) => m.serverContent?.interrupted)).toBe(0);
    s.send(audio(300, true));
    await until(() => s.count((m) => m.serverContent?.interrupted) === 1);
    const first = s.connection().responses[0]!;
    expect(first.status).toBe('completed');
    expect(first.heardMs).toBeLessThan(first.audioMs);
    expect(first.interruptedAt).toBeGreaterThan(first.firstAudioAt!);
    s.session.close();
  }, 30_000);

  it('with activity detection off, takes the turn between activityStart and activityEnd', async () => {
    fake.setLiveTranscriber(() => 'Hello there.');
    fake.setLiveResponder((turn) => ({ text: `You said ${turn.lastUser}` }));
    const s = await open({ realtimeInputConfig: { automaticActivityDetection: { disabled: true } } });
    expect(s.connection().manualActivity).toBe(true);
    // Loud audio alone is no turn: the client says when the caller speaks.
    s.send([...audio(600, true), ...audio(800, false)]);
    s.session.sendRealtimeInput({ activityStart: {} });
    s.send(audio(500, true));
    s.session.sendRealtimeInput({ activityEnd: {} });
    await until(() => s.count((m) => m.serverContent?.turnComplete) === 1);
    expect(s.connection().responses).toHaveLength(1);
    expect(s.text('outputTranscription')).toBe('You said Hello there.');
    expect(s.connection().received).toEqual(['setup', 'realtimeInput.activityStart', 'realtimeInput.activityEnd']);
    s.session.close();
  }, 30_000);

  it('closes with the API codes: a bad key, a model not served live, a scripted internal error; a wrong path is a 404', async () => {
    // The client waits for a setupComplete that never comes; the close carries the reason.
    void open({}, 'gm-wrong').catch(() => {});
    await until(() => fake.live.at(-1)!.closedWith !== null);
    expect(fake.live.at(-1)!.closedWith).toEqual({ code: 1007, reason: 'API key not valid. Please pass a valid API key.' });

    const ai = new GoogleGenAI({ apiKey: 'gm-test', httpOptions: { baseUrl: fake.url.replace(/\/v1beta$/, '') } });
    const closes: { code: number; reason: string }[] = [];
    void ai.live.connect({ model: 'gemini-2.5-flash', callbacks: { onmessage: () => {}, onclose: (e) => closes.push({ code: e.code, reason: e.reason }) } });
    await until(() => closes.length === 1);
    expect(closes[0]!.code).toBe(1008);
    expect(closes[0]!.reason).toMatch(/models\/gemini-2\.5-flash is not found .* bidiGenerateContent/);

    fake.setLiveTranscriber(() => 'Hello?');
    fake.setLiveResponder(() => ({ error: { type: 'server_error', code: 'internal', message: 'boom' } }));
    const s = await open();
    s.send([...audio(500, true), ...audio(700, false)]);
    await until(() => s.closes.length === 1);
    expect(s.closes[0]).toEqual({ code: 1011, reason: 'Internal error encountered.' });
    expect(s.connection().responses[0]!.status).toBe('failed');

    const base = fake.url.replace(/\/v1beta$/, '');
    expect(await upgradeStatus(`${base}/ws/google.ai.generativelanguage.v1beta.GenerativeService.Nope?key=gm-test`, {})).toBe(404);
    expect(await upgradeStatus(`${base}//ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent?key=gm-test`, {})).toBe(101);
  }, 30_000);
});
