// A supervisor's actions in the real AgentSession (custom audio I/O, the local STT and TTS, the LLM stand-in): say
// (interrupting), whisper (in the model's context, nothing spoken), mute and unmute (no reply meanwhile, the caller's
// words kept), and how the ended report's transcript marks them.
import { describe, expect, it } from 'vitest';
import { contentText, lastUserText } from '../../../test/support/fake-openai.ts';
import { baseConfig, startCall, waitUntil } from './harness.test-support.ts';
import { agentSegments, finish, llm, userSays } from './call-session.test-support.ts';

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
});
