// A supervisor's actions in the real AgentSession (custom audio I/O, the local STT and TTS, the LLM stand-in): say
// (interrupting), whisper (in the model's context, nothing spoken), mute and unmute (no reply meanwhile, the caller's
// words kept), and how the ended report's transcript marks them.
import { describe, expect, it } from 'vitest';
import { contentText, lastUserText } from '../../../test/support/fake-openai.ts';
import { baseConfig, startCall, waitUntil } from './harness.test-support.ts';
import { agentSegments, finish, llm, userSays } from './call-session.test-support.ts';
import { LineAudioInput, synthesize } from '../../../test/support/voice-io.ts';
import { createLogger } from '../../../shared/logger.ts';
import { HAND_BACK_NOTE } from './supervision.ts';
import { transcribeSpeech } from './supervisor-speech.ts';

describe('supervision in the call session', () => {
  it('says, whispers, mutes and unmutes; the transcript marks the say and the whisper', async () => {
    llm.setResponder((req) => ({ text: `You said: ${lastUserText(req)}.` }));
    const config = baseConfig({ call: { id: 'call_supervised' }, agent: { first_message: 'Hello, how can I help?' } });
    const h = await startCall(config, { llmUrl: llm.url });
    await waitUntil(() => !h.out.playing && agentSegments(h) >= 1 && h.call.session.agentState === 'listening', 30_000, 'greeting played');

    // say, now: spoken, and the agent's in the history.
    const before = agentSegments(h);
    await h.call.supervision.apply({ seq: 1, action: 'say', text: 'A colleague will call you back today.', when: 'now' });
    await waitUntil(() => agentSegments(h) > before, 20_000, 'the say spoken');
    await waitUntil(() => h.call.messages().some((m) => m.supervisor?.action === 'say'), 20_000, 'the say marked');

    // whisper: nothing spoken; the next request carries it as a system message.
    const spoken = agentSegments(h);
    await h.call.supervision.apply({ seq: 2, action: 'whisper', text: 'Offer the premium slot, code MAGNOLIA.' });
    const asked = llm.requests.length;
    await userSays(h, 'I would like to book a cleaning');
    expect(agentSegments(h)).toBe(spoken + 1);
    const req = llm.requests[asked]!;
    expect(req.messages.filter((m) => contentText(m).includes('MAGNOLIA')).map((m) => m.role)).toEqual(['system']);
    expect(req.messages.some((m) => m.role === 'assistant' && contentText(m).includes('colleague will call you back'))).toBe(true);
    await waitUntil(() => !h.out.playing && h.call.session.agentState === 'listening', 20_000, 'reply played');

    // mute: the caller's turn gets no reply, but its words stay; unmute: the next turn gets one, knowing both.
    const preemptive = () => h.call.session.sessionOptions.turnHandling.preemptiveGeneration.enabled;
    expect(preemptive()).toBe(true);
    await h.call.supervision.apply({ seq: 3, action: 'mute_agent' });
    // No preemptive reply while muted: it would be an LLM request whose answer is thrown away.
    expect(preemptive()).toBe(false);
    const muted = llm.requests.length;
    const segments = agentSegments(h);
    const users = () => h.call.messages().filter((m) => m.role === 'user');
    const heardBefore = users().length;
    await userSays(h, 'My name is Ada Lovelace', { waitReply: false });
    await waitUntil(() => users().length > heardBefore, 30_000, 'the muted turn kept');
    const mutedTurn = users().at(-1)!.content;
    expect(llm.requests.length).toBe(muted);
    expect(agentSegments(h)).toBe(segments);
    await h.call.supervision.apply({ seq: 4, action: 'unmute_agent' });
    expect(preemptive()).toBe(true);
    await userSays(h, 'What time is my appointment');
    const after = llm.requests[muted]!;
    expect(after.messages.some((m) => m.role === 'user' && contentText(m) === mutedTurn)).toBe(true);

    const report = await finish(h);
    const marked = report.messages.filter((m) => m.supervisor);
    expect(marked).toEqual([
      expect.objectContaining({ role: 'agent', content: 'A colleague will call you back today.', supervisor: { action: 'say' } }),
      expect.objectContaining({ role: 'agent', content: '', supervisor: { action: 'whisper', text: 'Offer the premium slot, code MAGNOLIA.' } }),
    ]);
  }, 180_000);

  it("takes over: the agent is silent and holds the caller's turns, the person's words enter its context marked; hand_back resumes it knowing them", async () => {
    llm.setResponder((req) => ({ text: `You said: ${lastUserText(req)}.` }));
    const config = baseConfig({ call: { id: 'call_taken_over' }, agent: { first_message: 'Hello, how can I help?' } });
    const h = await startCall(config, { llmUrl: llm.url });
    // The person's microphone: a second line, heard through the call's own STT (the room's track in the worker).
    const person = new LineAudioInput();
    person.start();
    const heard: string[] = [];
    h.call.supervision.hearPerson = (identity, onFinal) => {
      heard.push(identity);
      return transcribeSpeech({ stt: h.stt, vad: null, audio: person.source, onFinal, log: createLogger('test', 'warn') });
    };
    try {
      await waitUntil(() => !h.out.playing && agentSegments(h) >= 1 && h.call.session.agentState === 'listening', 30_000, 'greeting played');
      const preemptive = () => h.call.session.sessionOptions.turnHandling.preemptiveGeneration.enabled;
      await h.call.supervision.apply({ seq: 1, action: 'takeover', identity: 'supervisor-1' });
      expect(heard).toEqual(['supervisor-1']);
      expect(h.call.supervision.takenBy).toBe('supervisor-1');
      expect(preemptive()).toBe(false);

      // The caller speaks: no reply, no request, their words kept.
      const asked = llm.requests.length;
      const segments = agentSegments(h);
      const users = () => h.call.messages().filter((m) => m.role === 'user');
      const heardBefore = users().length;
      await userSays(h, 'I need to change my appointment', { waitReply: false });
      await waitUntil(() => users().length > heardBefore, 30_000, 'the held turn kept');
      const callerTurn = users().at(-1)!.content;

      // The person answers: their words are the agent's message, marked, and nothing is spoken by the agent.
      const taken = () => h.call.messages().filter((m) => m.supervisor?.action === 'takeover');
      await person.say(await synthesize('Your appointment is now at nine in the morning'));
      await waitUntil(() => taken().length > 0, 30_000, "the person's words transcribed");
      const personSaid = taken()[0]!.content;
      expect(personSaid.trim()).not.toBe('');
      expect(taken()[0]!.role).toBe('agent');
      // A mute and unmute meanwhile do not give the call back: only hand_back does.
      await h.call.supervision.apply({ seq: 2, action: 'mute_agent' });
      await h.call.supervision.apply({ seq: 3, action: 'unmute_agent' });
      expect(h.call.supervision.silent).toBe(true);
      expect(llm.requests.length).toBe(asked);
      expect(agentSegments(h)).toBe(segments);

      // hand_back: the model is told, and its next reply knows what the person and the caller said.
      await h.call.supervision.apply({ seq: 4, action: 'hand_back' });
      expect(h.call.supervision.takenBy).toBeNull();
      expect(preemptive()).toBe(true);
      await userSays(h, 'What time is it then');
      const after = llm.requests[asked]!;
      const roles = (text: string) => after.messages.filter((m) => contentText(m) === text).map((m) => m.role);
      expect(roles(personSaid)).toEqual(['assistant']);
      expect(roles(callerTurn)).toEqual(['user']);
      expect(roles(HAND_BACK_NOTE)).toEqual(['system']);
      const order = [personSaid, HAND_BACK_NOTE].map((t) => after.messages.findIndex((m) => contentText(m) === t));
      expect(order[0]).toBeLessThan(order[1]!);
    } finally {
      await person.close();
    }

    const report = await finish(h);
    const marked = report.messages.filter((m) => m.supervisor);
    expect(marked).toEqual([expect.objectContaining({ role: 'agent', supervisor: { action: 'takeover' } })]);
    // The note is the model's, not the conversation's.
    expect(JSON.stringify(report.messages)).not.toContain('on your behalf');
  }, 180_000);
});
