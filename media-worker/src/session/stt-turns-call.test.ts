// A call whose turns Deepgram Flux ends (turn_taking.detection 'stt'): the real CallSession and AgentSession, the
// deepgram plugin's STTv2 built by the worker's own factory (its key, and the operator's DEEPGRAM_BASE_URL), talking
// to the Flux stand-in (test/support/fake-deepgram-flux.ts); the LLM through the openai plugin and its stand-in.
// Orders and outcomes only: what agents-js had done when each event reached it, never how long it took.
import { voice } from '@livekit/agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastUserText, startFakeOpenAI, type FakeOpenAI } from '../../../test/support/fake-openai.ts';
import { startFakeDeepgram, type FakeDeepgram, type FluxConnection } from '../../../test/support/fake-deepgram.ts';
import { spoken } from '../../../test/support/spoken.ts';
import { createSTT, ensureAgentsLogger } from '../../../shared/speech/providers.ts';
import { baseConfig, startCall, waitUntil, type Harness } from './harness.test-support.ts';

let llm: FakeOpenAI;
let dg: FakeDeepgram;

beforeAll(async () => {
  ensureAgentsLogger();
  llm = await startFakeOpenAI({ ttftMs: 30 });
  llm.setResponder((req) => ({ text: `You said: ${lastUserText(req)}` }));
  dg = await startFakeDeepgram({ apiKeys: ['org-key'] });
});
afterAll(async () => {
  await llm?.close();
  await dg?.close();
});

/** What happened in the call, in the order it happened. */
interface Log {
  entries: string[];
  /** The speech handles the session created (preemptive replies among them), in order. */
  handles: voice.SpeechHandle[];
  /** At each transcript agents-js received: the transcript, whether final, and which handles were interrupted by then. */
  transcripts: { text: string; final: boolean; interrupted: string[] }[];
}

async function fluxCall(id: string, agent: Partial<ReturnType<typeof baseConfig>['agent']> = {}): Promise<{ h: Harness; conn: FluxConnection; log: Log }> {
  const config = baseConfig({
    call: { id },
    agent: {
      first_message: null,
      transcriber: { provider: 'deepgram', model: 'flux-general-en', language: 'en-US' },
      turn_taking: { detection: 'stt', endpointing: 'fixed', min_delay_ms: 0, max_delay_ms: 5000, preemptive_generation: true, ignore_backchannels: false, barge_in: 'words' },
      ...agent,
    },
  });
  // The worker's factory: the org's key, the operator's base URL (the stand-in's v1 and v2 share it).
  const stt = createSTT(config.agent.transcriber, { deepgram: 'org-key' }, { DEEPGRAM_BASE_URL: dg.httpUrl });
  const h = await startCall(config, { llmUrl: llm.url, stt });
  const conn = await dg.nextFluxConnection();
  const log: Log = { entries: [], handles: [], transcripts: [] };
  conn.on('sent', (m) => {
    if (m.event && m.event !== 'Update') log.entries.push(`flux ${m.event}`);
  });
  h.call.session.on(voice.AgentSessionEventTypes.SpeechCreated, (ev) => {
    log.handles.push(ev.speechHandle);
    log.entries.push(`speech created ${log.handles.length}`);
  });
  h.call.session.on(voice.AgentSessionEventTypes.UserInputTranscribed, (ev) => {
    log.transcripts.push({ text: ev.transcript, final: ev.isFinal, interrupted: log.handles.filter((s) => s.interrupted).map((s) => s.id) });
    if (ev.isFinal) log.entries.push('final transcript');
  });
  h.out.onFirstFrame = () => log.entries.push('agent audio');
  return { h, conn, log };
}

async function finish(h: Harness) {
  await h.call.end('user_hangup');
  await h.line.close();
}

const agentSaid = (h: Harness, text: string) => h.call.messages().some((m) => m.role === 'agent' && m.content.includes(text));

describe("detection 'stt': Deepgram Flux's end of turn (STTv2 against the Flux stand-in)", () => {
  it('a finished sentence: the reply starts on the EagerEndOfTurn and is the one played after the EndOfTurn', async () => {
    const { h, conn, log } = await fluxCall('call_flux_done');
    // The call set Flux's turn options: its eager end of turn, and max_delay_ms as the timeout.
    expect(conn.params.get('eager_eot_threshold')).toBe('0.5');
    expect(conn.params.get('eot_timeout_ms')).toBe('5000');
    const { pcm, script } = await spoken(['What time do you open tomorrow?', 300]);
    conn.expect(script);
    const requests = llm.requests.length;
    await h.line.say(pcm.samples);
    await waitUntil(() => agentSaid(h, 'You said: What time do you open tomorrow.'), 30_000, 'the reply');
    await finish(h);

    expect(conn.events()).toEqual(['StartOfTurn', 'EagerEndOfTurn', 'EndOfTurn']);
    // The early reply was created on the eager end, before the final transcript reached agents-js...
    const order = log.entries;
    expect(order.indexOf('flux EagerEndOfTurn')).toBeLessThan(order.indexOf('speech created 1'));
    expect(order.indexOf('speech created 1')).toBeLessThan(order.indexOf('final transcript'));
    // ...and it is the reply played, once the turn ended: one request to the model, on the eager transcript.
    expect(log.handles).toHaveLength(1);
    expect(log.handles[0]!.scheduled).toBe(true);
    expect(log.handles[0]!.interrupted).toBe(false);
    expect(order.indexOf('flux EndOfTurn')).toBeLessThan(order.indexOf('agent audio'));
    expect(llm.requests.slice(requests).map(lastUserText)).toEqual(['What time do you open tomorrow.']);
  }, 60_000);

  it('a pause after an open word: the early reply starts on the EagerEndOfTurn, is dropped when the caller goes on, and the reply is to the whole sentence', async () => {
    const { h, conn, log } = await fluxCall('call_flux_resumed');
    const { pcm, script } = await spoken(["I'd like to book a table for", 900, 'four people on Friday.', 300]);
    conn.expect(script);
    const requests = llm.requests.length;
    await h.line.say(pcm.samples);
    await waitUntil(() => agentSaid(h, 'You said: I\'d like to book a table for four people on Friday.'), 30_000, 'the reply');
    await finish(h);

    expect(conn.events()).toEqual(['StartOfTurn', 'EagerEndOfTurn', 'TurnResumed', 'EagerEndOfTurn', 'EndOfTurn']);
    const [early, reply] = log.handles;
    expect(log.handles).toHaveLength(2);
    // The early reply, on the first eager transcript: started on the EagerEndOfTurn, before the caller went on.
    expect(log.entries.indexOf('flux EagerEndOfTurn')).toBeLessThan(log.entries.indexOf('speech created 1'));
    expect(log.entries.indexOf('speech created 1')).toBeLessThan(log.entries.indexOf('flux TurnResumed'));
    expect(llm.requests.slice(requests).map(lastUserText)).toEqual(["I'd like to book a table for.", "I'd like to book a table for four people on Friday."]);
    // Dropped as the caller's next words arrived: when the first transcript with "four" reached agents-js, the early
    // reply was already interrupted (agents-js alone would keep it until the next eager end or the final).
    const firstNewWords = log.transcripts.find((t) => !t.final && /\bfour\b/i.test(t.text))!;
    expect(firstNewWords.interrupted).toContain(early!.id);
    const beforeNewWords = log.transcripts.slice(0, log.transcripts.indexOf(firstNewWords));
    expect(beforeNewWords.every((t) => !t.interrupted.includes(early!.id))).toBe(true);
    expect(early!.scheduled).toBe(false);
    // The reply played is the second, on the whole sentence, after the EndOfTurn.
    expect(reply!.scheduled).toBe(true);
    expect(reply!.interrupted).toBe(false);
    expect(log.entries.indexOf('flux EndOfTurn')).toBeLessThan(log.entries.indexOf('agent audio'));
    expect(h.call.messages().filter((m) => m.role === 'agent').map((m) => m.content)).toEqual(["You said: I'd like to book a table for four people on Friday."]);
  }, 60_000);

  it('backchannels over the agent (ignore_backchannels, barge_in pause) neither stop it nor become turns', async () => {
    const { h, conn } = await fluxCall('call_flux_backchannel', {
      turn_taking: { detection: 'stt', endpointing: 'fixed', min_delay_ms: 0, max_delay_ms: 5000, preemptive_generation: true, ignore_backchannels: true, barge_in: 'pause' },
      first_message:
        'Welcome to the reservation line. We are open every day from noon until late in the evening, and we can seat groups of up to twelve ' +
        'people at a time. We also have a quiet room at the back for birthdays and for business dinners, which you can book by phone.',
    });
    await waitUntil(() => h.out.playing && h.out.playedMs >= 1000, 30_000, 'a second of the greeting');
    const said = ['Yeah.', 'Uh-huh.', 'Okay.'];
    for (const [i, word] of said.entries()) {
      const { pcm, script } = await spoken([word, 600]);
      conn.expect(script);
      await h.line.say(pcm.samples);
      // Bounds on waits, not timings: a loaded machine's VAD can run seconds behind the line.
      await waitUntil(() => conn.finals().length >= i + 1, 30_000, `Flux's end of "${word}"`);
      await waitUntil(() => !h.out.paused, 30_000, 'the greeting resumed');
    }
    // Each was a whole Flux turn; none reached agents-js as one, and the greeting played on to its end.
    expect(conn.finals()).toEqual(said);
    await waitUntil(() => !h.out.playing, 60_000, 'the greeting played out');
    expect(h.out.interruptions).toBe(0);
    const report = await h.call.end('user_hangup');
    await h.line.close();
    expect(report.messages.map((m) => [m.role, m.interrupted ?? false])).toEqual([['agent', false]]);
  }, 180_000);
});
