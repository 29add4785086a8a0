// The real AgentSession (as call-session.test.ts): answering machines, the voicemail message, and who speaks first.
import { describe, expect, it } from 'vitest';
import { synthesize, tone, silence } from '../../../test/support/voice-io.ts';
import { baseConfig, startCall, waitUntil, type Harness } from './harness.test-support.ts';
import { finish, llm, userSays } from './call-session.test-support.ts';

describe('call session (voice loop)', () => {
  it('leaves the voicemail message on an answering machine and ends with voicemail', async () => {
    const config = baseConfig({
      call: { id: 'call_vm', type: 'outbound', direction: 'outbound', variables: { name: 'Sam' } },
      agent: { voicemail_detection: true, voicemail_message: 'Hi {{name}}, please call us back.', first_message: 'Hello, is this Sam?' },
    });
    const h = await startCall(config, { llmUrl: llm.url, extra: { outboundGreetingWaitMs: 15_000 } });
    const requestsBefore = llm.requests.length;
    void h.line.say(await synthesize('Hi, you have reached Sam. I am not available. Please leave a message after the tone.'));
    void h.line.say(silence(300));
    void h.line.say(tone(1000, 600));
    const report = await h.call.ended;
    await h.line.close();
    expect(report.end_reason).toBe('voicemail');
    expect(h.call.voicemail?.verdict).toBe('machine');
    expect(report.messages.filter((m) => m.role === 'agent').map((m) => m.content)).toEqual(['Hi Sam, please call us back.']);
    expect(llm.requests.length).toBe(requestsBefore); // no LLM reply to a machine
  }, 60_000);

  it('takes a short first word followed by more speech for no person: the machine gets only the voicemail', async () => {
    const config = baseConfig({
      call: { id: 'call_vm_hello', type: 'outbound', direction: 'outbound' },
      agent: { voicemail_detection: true, voicemail_message: 'Please call us back.', first_message: 'Hello, is this Sam?' },
    });
    const hello = await synthesize('Hello.');
    const rest = await synthesize('You have reached Sam. I am not available. Please leave a message after the tone.');
    // The greeting timer (the callee's silence on the clock, the fallback for a line that says nothing) is not
    // what this test is about: the stall below must not trip it.
    const h = await startCall(config, { llmUrl: llm.url, extra: { outboundGreetingWaitMs: 60_000 } });
    // A machine's greeting that opens with a word and a pause (about 1 s of the line's audio between "Hello" and
    // the next word: less than the silence after the VAD's end of speech that makes a person's "Hello?").
    void h.line.say(hello);
    void h.line.say(silence(600));
    const stopped = h.line.hold();
    // The line stands still there, mid-pause, until the first turn has committed on "Hello" alone and passed for a
    // person's short answer pending their silence; then it stays still a while longer, as when the session runs
    // behind the line on a loaded machine. The silence that decides is the callee's audio, not this stall: a
    // silence counted on the clock would take the stalled line for a person and greet into the machine's greeting.
    await waitUntil(() => h.call.voicemail?.verdict === 'human', 30_000, 'the first turn, "Hello" alone, taken for a short answer');
    await stopped;
    await new Promise((r) => setTimeout(r, 1500));
    expect(h.out.segmentStarts).toHaveLength(0);
    void h.line.say(rest);
    void h.line.say(silence(300));
    void h.line.say(tone(1000, 600));
    h.line.resume();
    const report = await h.call.ended;
    await h.line.close();
    expect(report.end_reason).toBe('voicemail');
    expect(h.call.voicemail?.verdict).toBe('machine');
    expect(report.messages.filter((m) => m.role === 'agent').map((m) => m.content)).toEqual(['Please call us back.']);
  }, 90_000);

  it('greets a person on an outbound call after their first words', async () => {
    llm.setResponder(() => ({ text: 'Great.' }));
    const config = baseConfig({
      call: { id: 'call_out', type: 'outbound', direction: 'outbound' },
      agent: { voicemail_detection: true, voicemail_message: 'Please call back.', first_message: 'Hi, this is Acme calling about your order.' },
    });
    const h = await startCall(config, { llmUrl: llm.url, extra: { outboundGreetingWaitMs: 15_000 } });
    const requestsBefore = llm.requests.length;
    await userSays(h, 'Hello');
    await waitUntil(() => h.call.messages().some((m) => m.role === 'agent'), 20_000, 'greeting');
    const report = await finish(h);
    expect(h.call.voicemail?.verdict).toBe('human');
    expect(report.messages.find((m) => m.role === 'agent')?.content).toBe('Hi, this is Acme calling about your order.');
    expect(llm.requests.length).toBe(requestsBefore);
  }, 60_000);

  describe('inbound calls to a number with a voicemail_message', () => {
    const VOICEMAIL = 'Hi, this is Acme Dental returning your call. Please ring us back.';
    const FIRST = 'Thanks for calling Acme Dental.';
    const REPLY = 'Reply from the model.';
    /** An inbound call; `detects` is what the control plane derives from the number's voicemail_message. */
    const inbound = (id: string, detects: boolean) =>
      baseConfig({
        call: { id, type: 'inbound', direction: 'inbound', from_number: '+15550100111', to_number: '+14155550100', voicemail_detection: detects },
        // The number's message reaches the agent as the call's override; the agent's own flag is for outbound.
        agent: { voicemail_detection: false, voicemail_message: VOICEMAIL, first_message: FIRST },
      });
    const agentTexts = (h: Harness) =>
      h.call
        .messages()
        .filter((m) => m.role === 'agent' && !m.tool_call)
        .map((m) => m.content);

    it('a mailbox answering the call: the agent greets, hears the greeting and the beep, leaves the message, and ends with voicemail', async () => {
      llm.setResponder(() => ({ text: REPLY }));
      const greeting = await synthesize('Hello, you have reached the Smith family. We are not available right now. Please leave a message after the tone.');
      const h = await startCall(inbound('call_in_vm', true), { llmUrl: llm.url, extra: { voicemailBeepWaitMs: 5000 } });
      // The mailbox plays its greeting from the answer, over the agent's first message; the beep comes a little
      // after the greeting's end, when the cue's turn has usually committed and waits for it.
      void h.line.say(greeting);
      void h.line.say(silence(1200));
      void h.line.say(tone(1000, 600));
      await waitUntil(() => h.call.endReason !== null, 40_000, 'the call to end');
      const report = await h.call.ended;
      await h.line.close();
      expect(report.end_reason).toBe('voicemail');
      expect(h.call.voicemail?.verdict).toBe('machine');
      const said = report.messages.filter((m) => m.role === 'agent').map((m) => m.content);
      expect(said.at(-1)).toBe(VOICEMAIL);
      // Nothing from the model: the greeting's turns got no reply.
      expect(said.filter((t) => t.includes(REPLY))).toEqual([]);
    }, 90_000);

    it('a caller who says "voicemail" is no machine without a beep: their turn is answered after the wait', async () => {
      llm.setResponder(() => ({ text: REPLY }));
      const h = await startCall(inbound('call_in_cue', true), { llmUrl: llm.url, extra: { voicemailBeepWaitMs: 1000 } });
      await waitUntil(() => !h.out.playing && agentTexts(h).length >= 1, 20_000, 'the first message');
      await userSays(h, 'Hi, I got your voicemail about my appointment.');
      await waitUntil(() => agentTexts(h).includes(REPLY), 20_000, 'the reply');
      const report = await finish(h);
      expect(report.end_reason).toBe('user_hangup');
      expect(h.call.voicemail?.verdict).toBeNull();
      expect(report.messages.find((m) => m.role === 'user')?.content).toMatch(/voice ?mail/);
    }, 60_000);

    it('a person: an ordinary request is answered, and once they answer a reply the window is over (a later beep changes nothing)', async () => {
      llm.setResponder(() => ({ text: REPLY }));
      // Only the caller's answer can close the window here.
      const h = await startCall(inbound('call_in_person', true), { llmUrl: llm.url, extra: { inboundVoicemailWindowMs: 300_000 } });
      await waitUntil(() => !h.out.playing && agentTexts(h).length >= 1, 20_000, 'the first message');
      await userSays(h, 'I would like to book a cleaning for next week');
      await waitUntil(() => agentTexts(h).filter((t) => t === REPLY).length === 1 && !h.out.playing, 20_000, 'the reply, played out');
      await userSays(h, 'Tuesday morning please');
      await waitUntil(() => agentTexts(h).filter((t) => t === REPLY).length === 2 && !h.out.playing, 20_000, 'the second reply');
      // A tone on the line (a microwave, a phone's key beep) after the opening: no machine.
      void h.line.say(tone(1000, 600));
      await userSays(h, 'What time do you open');
      await waitUntil(() => agentTexts(h).filter((t) => t === REPLY).length === 3, 20_000, 'the third reply');
      const report = await finish(h);
      expect(report.end_reason).toBe('user_hangup');
      expect(h.call.beep?.detected).toBe(false);
      expect(h.call.voicemail?.verdict).toBeNull();
    }, 90_000);

    it("no detection when the number has no voicemail_message (whatever the agent's flag): a mailbox gets replies", async () => {
      llm.setResponder(() => ({ text: REPLY }));
      const config = inbound('call_in_plain', false);
      config.agent.voicemail_detection = true;
      const h = await startCall(config, { llmUrl: llm.url });
      expect(h.call.voicemail).toBeNull();
      expect(h.call.beep).toBeNull();
      void h.line.say(await synthesize('Hello, you have reached the Smith family. Please leave a message after the tone.'));
      void h.line.say(silence(300));
      void h.line.say(tone(1000, 600));
      await waitUntil(() => agentTexts(h).includes(REPLY), 30_000, 'a reply to the greeting');
      const report = await finish(h);
      expect(report.end_reason).toBe('user_hangup');
    }, 60_000);
  });
});
