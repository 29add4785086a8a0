// The real AgentSession with custom audio I/O: speech synthesized by festival goes in as a phone line,
// the local pocketsphinx STT transcribes it, a local OpenAI-compatible server answers through the openai
// plugin, and the local TTS speaks. Reports go to a local server speaking the internal API.
import { USERDATA_TIMED_TRANSCRIPT, USERDATA_TTS_STARTED_TIME, voice } from '@livekit/agents';
import * as openai from '@livekit/agents-plugin-openai';
import { describe, expect, it } from 'vitest';
import { contentText, lastUserText } from '../../../test/support/fake-openai.ts';
import { noiseBurst, synthesize, silence } from '../../../test/support/voice-io.ts';
import { baseConfig, startCall, waitUntil } from './harness.test-support.ts';
import { LocalTTS } from '../../../shared/speech/local-tts.ts';
import { agentSegments, api, finish, llm, userSays } from './call-session.test-support.ts';

describe('call session (voice loop)', () => {
  it('says the first message with variables, answers a full turn, and reports to the control plane', async () => {
    llm.setResponder((req) => ({ text: `You said: ${lastUserText(req)}.` }));
    const config = baseConfig({
      call: { id: 'call_turn', variables: { name: 'Ada' } },
      agent: { first_message: 'Hello {{name}}, this is {{company}}. How can I help?', dynamic_variables: { company: 'Acme', name: 'default' } },
    });
    api.configs.set(config.call.id, config);
    const h = await startCall(config, { llmUrl: llm.url, api });
    await waitUntil(() => agentSegments(h) >= 1, 20_000, 'first message');
    // The greeting has played out and the agent listens.
    await waitUntil(() => !h.out.playing && h.call.session.agentState === 'listening', 20_000, 'greeting played');
    const requestsBefore = llm.requests.length;
    await userSays(h, 'I would like to book a table for two');
    await waitUntil(() => h.call.messages().some((m) => m.role === 'agent' && m.content.startsWith('You said')), 20_000, 'reply committed');
    const report = await finish(h);

    // The first message: call variables override the agent's dynamic_variables.
    expect(report.messages[0]).toMatchObject({ role: 'agent', content: 'Hello Ada, this is Acme. How can I help?' });
    const user = report.messages.find((m) => m.role === 'user');
    expect(user?.content).toMatch(/table/);
    expect(user?.started_at).toBeTruthy();
    expect(llm.requests.length).toBe(requestsBefore + 1);
    const sent = llm.requests.at(-1)!;
    expect(contentText(sent.messages[0]!)).toContain('You are a helpful assistant.');
    expect(report.end_reason).toBe('user_hangup');
    expect(report.latency.llm_ttft.samples).toBe(1);
    expect(report.latency.e2e.samples).toBe(1);
    expect(report.latency.eou_delay.samples).toBeGreaterThanOrEqual(1);
    expect(report.latency.tts_ttfb.samples).toBeGreaterThanOrEqual(2);
    // Each agent message carries its own turn's figures: the greeting only its audio, the reply the whole turn.
    expect(report.messages[0]!.metrics).toMatchObject({ eou_delay_ms: null, llm_ttft_ms: null, e2e_ms: null, tts_ttfb_ms: expect.any(Number) });
    const reply = report.messages.find((m) => m.role === 'agent' && m.content.startsWith('You said'))!;
    expect(reply.metrics).toEqual({
      eou_delay_ms: expect.any(Number),
      llm_ttft_ms: expect.any(Number),
      tts_ttfb_ms: expect.any(Number),
      e2e_ms: expect.any(Number),
    });
    expect(reply.metrics!.llm_ttft_ms).toBe(Math.round(report.latency.llm_ttft.max_ms));
    expect(user!.metrics).toBeUndefined();
    // Where the turn's end-of-utterance time went, after the user's last speech.
    const timing = h.call.turnTrace.turns;
    expect(timing).toHaveLength(report.latency.eou_delay.samples);
    expect(timing[0]).toMatchObject({ turn: 1, eou_delay_ms: expect.any(Number), transcription_delay_ms: expect.any(Number) });
    expect(timing[0]!.vad_end_ms).toBeGreaterThanOrEqual(0);
    expect(timing[0]!.stt_final_ms).toBeGreaterThanOrEqual(0);
    expect(timing[0]!.eou_delay_ms).toBeGreaterThanOrEqual(timing[0]!.vad_end_ms!);
    expect(report.usage.llm_prompt_tokens).toBeGreaterThan(0);
    expect(report.usage.tts_characters).toBeGreaterThan(0);
    expect(report.usage.stt_seconds).toBeGreaterThan(0);

    await api.waitFor((r) => r.some((x) => x.callId === 'call_turn' && x.kind === 'ended'));
    const mine = api.reports.filter((r) => r.callId === 'call_turn');
    expect(mine[0]!.kind).toBe('started');
    expect(mine.some((r) => r.kind === 'transcript' && r.body.messages.length >= 1)).toBe(true);
    const ended = mine.find((r) => r.kind === 'ended')!;
    expect(ended.body.end_reason).toBe('user_hangup');
    expect(ended.body.latency).toEqual(report.latency);
    const seqs = mine.map((r) => r.body.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(api.unauthorized).toBe(0);
  }, 60_000);

  it('counts a greeting synthesized before the session started: its TTFB on the first turn, its characters in usage', async () => {
    const greeting = 'Hello, this is Acme. How can I help?';
    const config = baseConfig({ call: { id: 'call_greet_ahead' }, agent: { first_message: greeting } });
    api.configs.set(config.call.id, config);
    // The worker starts the synthesis while the room connects; a short greeting is often all made by the start.
    const tts = new LocalTTS({ model: 'espeak-ng' });
    const h = await startCall(config, { llmUrl: llm.url, api, tts, greetAhead: 'finished' });
    // The call's own listener is gone once the session's listens.
    const sessionListeners = tts.listenerCount('metrics_collected');
    const turns: { turn: number; tts_ttfb_ms: number | null }[] = [];
    h.call.turnMetrics.onTurn((t) => turns.push(t));
    await waitUntil(() => h.call.messages().some((m) => m.role === 'agent'), 20_000, 'greeting said');
    const report = await finish(h);
    expect(report.messages[0]).toMatchObject({ role: 'agent', content: greeting, metrics: { tts_ttfb_ms: expect.any(Number) } });
    expect(turns[0]).toMatchObject({ turn: 1, tts_ttfb_ms: expect.any(Number) });
    // Counted once, though the session's own listener may have seen the same metrics.
    expect(report.usage.tts_characters).toBe(greeting.length);
    expect(report.latency.tts_ttfb.samples).toBe(1);
    expect(sessionListeners).toBeLessThanOrEqual(1);
    expect(tts.listenerCount('metrics_collected')).toBe(0);
    await tts.close();
  }, 60_000);

  it('leaves no listener on the TTS when the call ends before its session started', async () => {
    const config = baseConfig({ call: { id: 'call_greet_gone' }, agent: { first_message: 'Hello, this is Acme. How can I help?' } });
    api.configs.set(config.call.id, config);
    const tts = new LocalTTS({ model: 'espeak-ng' });
    const h = await startCall(config, { llmUrl: llm.url, api, tts, greetAhead: 'ended-before-start' });
    expect(h.call.endReason).toBe('user_hangup');
    expect(tts.listenerCount('metrics_collected')).toBe(0);
    await h.line.close();
    await tts.close();
  }, 60_000);

  it('stops speaking when the caller interrupts', async () => {
    llm.setResponder(() => ({ text: 'Sure.' }));
    const config = baseConfig({
      call: { id: 'call_interrupt' },
      agent: {
        interruption_sensitivity: 0.8,
        first_message:
          'Welcome to the reservation line. We are open every day from noon until late in the evening, and we can seat groups of up to twelve people at a time.',
      },
    });
    const h = await startCall(config, { llmUrl: llm.url });
    await waitUntil(() => agentSegments(h) >= 1, 20_000, 'first message');
    // Interrupt a second into the long greeting, while it is still playing.
    await waitUntil(() => h.out.playing && h.out.playedMs >= 1000, 20_000, 'a second of the greeting');
    await h.line.say(await synthesize('Wait, stop, I have a question'));
    await waitUntil(() => h.out.interruptions >= 1, 20_000, 'interruption');
    await waitUntil(() => h.call.messages().some((m) => m.role === 'agent' && m.interrupted), 20_000, 'interrupted message');
    const report = await finish(h);
    const first = report.messages.find((m) => m.role === 'agent')!;
    expect(first.interrupted).toBe(true);
  }, 60_000);

  it.each(['pause', 'words'] as const)(
    'with ignore_backchannels and barge_in %s, "yeah", "okay" and "right" over the agent do not stop it; "stop, I have a question" does',
    async (bargeIn) => {
      llm.setResponder(() => ({ text: 'Sure.' }));
      const config = baseConfig({
        call: { id: `call_backchannel_${bargeIn}` },
        agent: {
          // Sensitive: without the setting, any word (or 380 ms of sound) would stop the agent.
          interruption_sensitivity: 0.8,
          turn_taking: { ...baseConfig().agent.turn_taking, ignore_backchannels: true, barge_in: bargeIn },
          first_message:
            'Welcome to the reservation line. We are open every day from noon until late in the evening, we can seat groups of up to twelve people at a time, and we ' +
            'have a quiet room at the back for birthdays and for business dinners, which you can book by phone or on our website. On Sundays we serve ' +
            'a long lunch with live music, and on Mondays the kitchen closes a little earlier, at half past nine. ' +
            // Long enough to still be playing when the barge-in comes on a loaded machine.
            'Our menu changes with the seasons: in spring we cook with asparagus and wild garlic, in summer with tomatoes from our own ' +
            'garden, in autumn with mushrooms and game, and in winter with slow braises and root vegetables from the farms around the city.',
        },
      });
      // One phrase per utterance (pocketsphinx splits at pauses, so the barge-in has no commas).
      const grammar = '#JSGF V1.0;\ngrammar b;\npublic <b> = ( yeah | okay | right )+ | stop i have a question about the menu;\n';
      const h = await startCall(config, { llmUrl: llm.url, sttGrammar: grammar });
      const heard: string[] = [];
      h.call.session.on(voice.AgentSessionEventTypes.UserInputTranscribed, (ev) => heard.push(`${ev.isFinal ? 'final' : 'interim'} "${ev.transcript}"`));
      const state = () =>
        `(played ${Math.round(h.out.playedMs)} ms, playing ${h.out.playing}, interruptions ${h.out.interruptions}, ignored ${h.call.backchannelsIgnored}, passed: ${heard.join(', ')})`;
      await waitUntil(() => h.out.playing && h.out.playedMs >= 1000, 20_000, 'a second of the greeting');
      for (const word of ['Yeah.', 'Okay.', 'Right.']) {
        const before = h.call.backchannelFinalsIgnored;
        await h.line.say(await synthesize(word));
        // Generous: a loaded machine can hold the recogniser back for many seconds (the greeting is long enough).
        await waitUntil(() => h.call.backchannelFinalsIgnored > before, 45_000, `"${word}" transcribed ${state()}`);
      }
      // Three backchannels transcribed and kept from the session: the greeting still plays, uninterrupted. With
      // 'pause' their sound paused it and each pause resumed where it stopped; with 'words' it never paused.
      await waitUntil(() => !h.out.paused, 20_000, `the greeting resumed ${state()}`);
      expect(h.out.interruptions).toBe(0);
      expect(h.out.playing).toBe(true);
      if (bargeIn === 'pause') {
        expect(h.out.pauses).toBeGreaterThanOrEqual(1);
        expect(h.out.resumes).toBe(h.out.pauses);
        expect(h.call.falseInterruptions).toBeGreaterThanOrEqual(1);
      } else {
        expect(h.out.pauses).toBe(0);
      }
      const pausesBefore = h.out.pauses;
      await h.line.say(await synthesize('Stop I have a question about the menu'));
      await waitUntil(() => h.out.interruptions >= 1, 45_000, 'interruption').catch((err: Error) => {
        throw new Error(`${err.message} ${state()}`);
      });
      await waitUntil(() => h.call.messages().some((m) => m.role === 'agent' && m.interrupted), 20_000, 'interrupted message');
      // The barge-in paused the greeting once (with 'pause' on its sound, with 'words' on its first words: agents-js
      // holds a reply before it drops it), and its words then stopped it.
      expect(h.out.pauses - pausesBefore).toBe(1);
      const report = await finish(h);
      expect(report.messages.find((m) => m.role === 'agent')!.interrupted).toBe(true);
      expect(report.messages.find((m) => m.role === 'user')?.content).toMatch(/question/);
      // The backchannels never became user turns.
      expect(report.messages.filter((m) => m.role === 'user').map((m) => m.content)).not.toContainEqual(expect.stringMatching(/^(yeah|okay|right)$/i));
    },
    240_000,
  );

  it.each(['pause', 'pause_on_speech'] as const)(
    'with barge_in %s, a knock over the agent and then a barge-in: where the pause comes from',
    async (bargeIn) => {
      llm.setResponder(() => ({ text: 'Sure.' }));
      const config = baseConfig({
        call: { id: `call_onset_${bargeIn}` },
        agent: {
          turn_taking: { ...baseConfig().agent.turn_taking, ignore_backchannels: true, barge_in: bargeIn },
          first_message:
            'Welcome to the reservation line. We are open every day from noon until late in the evening, we can seat groups of up to twelve people at a time, and we ' +
            'have a quiet room at the back for birthdays and for business dinners, which you can book by phone or on our website. On Sundays we serve ' +
            'a long lunch with live music, and on Mondays the kitchen closes a little earlier, at half past nine.',
        },
      });
      const h = await startCall(config, { llmUrl: llm.url, sttGrammar: '#JSGF V1.0;\ngrammar b;\npublic <b> = stop i have a question about the menu;\n' });
      const speechStarts: number[] = [];
      h.call.session.on(voice.AgentSessionEventTypes.UserStateChanged, (ev) => {
        if (ev.newState === 'speaking') speechStarts.push(performance.now());
      });
      await waitUntil(() => h.out.playing && h.out.playedMs >= 1000, 20_000, 'a second of the greeting');
      // A knock: 40 ms of loud noise, which the VAD does not take for speech.
      await h.line.say(noiseBurst(40, 12_000));
      await h.line.say(silence(600));
      await waitUntil(() => !h.out.paused, 5000, 'the greeting playing after the knock');
      expect(h.out.interruptions).toBe(0);
      if (bargeIn === 'pause') {
        // The knock's onset paused the greeting, and the call resumed it: the VAD heard no speech.
        expect(h.call.onsetPauses).toBe(1);
        expect(h.call.onsetResumes).toBe(1);
        expect(h.out.pauses).toBe(1);
        expect(h.out.resumes).toBe(1);
      } else {
        expect(h.call.onsetPauses).toBe(0);
        expect(h.out.pauses).toBe(0);
      }
      expect(speechStarts).toHaveLength(0);

      const pausesBefore = h.out.pauses;
      await h.line.say(await synthesize('Stop I have a question about the menu'));
      await waitUntil(() => h.out.interruptions >= 1, 45_000, 'interruption');
      // One pause, which the words turned into the stop; with 'pause' it came from the onset, before the VAD's start
      // of speech, and the call did not resume it.
      expect(h.out.pauses - pausesBefore).toBe(1);
      expect(speechStarts.length).toBeGreaterThanOrEqual(1);
      if (bargeIn === 'pause') {
        expect(h.call.onsetPauses).toBe(2);
        expect(h.call.onsetResumes).toBe(1);
        expect(h.out.pauseTimes.at(-1)!).toBeLessThan(speechStarts[0]!);
      } else {
        expect(h.call.onsetPauses).toBe(0);
        expect(h.out.pauseTimes.at(-1)!).toBeGreaterThanOrEqual(speechStarts[0]!);
      }
      const report = await finish(h);
      expect(report.messages.find((m) => m.role === 'agent')!.interrupted).toBe(true);
    },
    120_000,
  );

  it("sends the agent's speech to the output in 20 ms frames, whatever frames its TTS makes (the openai plugin's are 100 ms)", async () => {
    const speech = new openai.TTS({ model: 'tts-1', baseURL: llm.url, apiKey: 'sk-test' });
    const tts100: number[] = [];
    const config = baseConfig({
      call: { id: 'call_frames' },
      agent: { first_message: 'Hello, thank you for calling the reservation line of the restaurant.' },
    });
    const h = await startCall(config, { llmUrl: llm.url, tts: speech });
    await waitUntil(() => h.out.frames.length > 0 && !h.out.playing, 20_000, 'the greeting played');
    // What the plugin itself makes, for contrast.
    for await (const ev of speech.synthesize('Hello there.')) tts100.push(ev.frame.samplesPerChannel / (ev.frame.sampleRate / 1000));
    expect(Math.max(...tts100)).toBe(100);
    expect(h.out.frames.map((f) => f.samplesPerChannel / (f.sampleRate / 1000)).every((ms) => ms <= 20)).toBe(true);
    // What agents-js reads from the frames came through the split: the words the room's transcript is synchronised
    // to (without them a room call records no agent reply), and the TTS's start time.
    const timed = h.out.frames.flatMap((f) => (f.userdata[USERDATA_TIMED_TRANSCRIPT] as { text?: string }[] | undefined) ?? []);
    expect(timed.map((t) => t.text ?? String(t)).join('')).toContain('reservation line');
    expect(h.out.frames.some((f) => typeof f.userdata[USERDATA_TTS_STARTED_TIME] === 'number')).toBe(true);
    await finish(h);
  }, 60_000);

  it('without ignore_backchannels, "yeah" over the agent stops it (the same line and sensitivity)', async () => {
    llm.setResponder(() => ({ text: 'Sure.' }));
    const config = baseConfig({
      call: { id: 'call_backchannel_off' },
      agent: {
        interruption_sensitivity: 0.8,
        turn_taking: { ...baseConfig().agent.turn_taking, ignore_backchannels: false },
        first_message:
          'Welcome to the reservation line. We are open every day from noon until late in the evening, and we can seat groups of up to twelve people at a time.',
      },
    });
    const h = await startCall(config, { llmUrl: llm.url, sttGrammar: '#JSGF V1.0;\ngrammar b;\npublic <b> = yeah | okay | right;\n' });
    await waitUntil(() => h.out.playing && h.out.playedMs >= 1000, 20_000, 'a second of the greeting');
    await h.line.say(await synthesize('Yeah.'));
    await waitUntil(() => h.out.interruptions >= 1, 20_000, 'interruption');
    expect(h.call.backchannelsIgnored).toBe(0);
    await finish(h);
  }, 60_000);

  it('hangs up after saying an end-call phrase (agent_hangup)', async () => {
    llm.setResponder(() => ({ text: 'Thank you for calling. Goodbye!' }));
    const config = baseConfig({ call: { id: 'call_bye' }, agent: { end_call_phrases: ['goodbye'] } });
    const h = await startCall(config, { llmUrl: llm.url });
    await userSays(h, 'That is all, thank you');
    const report = await h.call.ended;
    await h.line.close();
    expect(report.end_reason).toBe('agent_hangup');
    expect(report.messages.at(-1)).toMatchObject({ role: 'agent', content: 'Thank you for calling. Goodbye!' });
  }, 60_000);

  it('ends a silent call with silence_timeout', async () => {
    const h = await startCall(baseConfig({ call: { id: 'call_silent' }, agent: { silence_timeout_seconds: 2, first_message: 'Hi.' } }), { llmUrl: llm.url });
    const report = await h.call.ended;
    await h.line.close();
    expect(report.end_reason).toBe('silence_timeout');
  }, 60_000);

  it('ends a call that runs too long with max_duration', async () => {
    const h = await startCall(
      baseConfig({
        call: { id: 'call_long' },
        agent: { max_duration_seconds: 2, first_message: 'This greeting is a little longer than the whole call is allowed to last, on purpose.' },
      }),
      { llmUrl: llm.url },
    );
    const report = await h.call.ended;
    await h.line.close();
    expect(report.end_reason).toBe('max_duration');
    expect(report.duration_seconds).toBeGreaterThanOrEqual(1.9);
  }, 60_000);
});
