// Phone-menu navigation on outbound calls, over the real stack: POST /v1/calls with an `ivr_goal`, the dial job,
// LiveKit's CreateSIPParticipant through the real SIP bridge and the simulated carrier's edge, and SIPp as a phone
// system whose media socket plays a two-level menu in synthesized speech and decodes the keys the bridge sends as
// RFC 4733 telephone events. The real media worker hears the prompts through the Deepgram stand-in (labelled with
// each prompt's words as it is played: the offline recogniser cannot read 8 kHz phone audio), asks the model
// stand-in for each key (it answers from the goal and the menu in the worker's own request, so a request that
// lost either gets a wrong key), presses them, says nothing to the menus, and speaks its first message to the
// person the menu leads to. A menu that only ever repeats itself gets two presses, then the agent hangs up.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { startFakeOpenAI, contentText, type ChatRequest, type FakeOpenAI } from '../support/fake-openai.ts';
import { startFakeDeepgram, type DeepgramConnection, type FakeDeepgram } from '../support/fake-deepgram.ts';
import { synthesize, spokenSeconds, transcribe, writeWav, type Pcm } from '../support/speech.ts';
import { SipCallee, type MenuNode } from '../support/sip-callee.ts';
import { until } from '../support/e2e.ts';
import { soundSeconds, utterance } from '../support/phone-audio.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';
import type { SimulatedEdge } from '../../control-plane/src/modules/phone-numbers/carriers/simulated-edge.ts';
import { addOutboundNumber, startCalleeEdge } from '../support/outbound-edge.ts';

const LEVEL1 = 'For sales, press 1. For billing, press 2. For support, press 3.';
const LEVEL2 = 'For invoices, press 1. For payments, press 2.';
const PERSON = 'Hello, this is billing, how can I help you?';
const FIRST_MESSAGE = 'Hi, I am calling to pay the invoice for order forty two.';
const GOAL = 'reach the payments team in billing';
const NAVIGATION = 'You navigate an automated phone menu';
const REPLY = 'Thank you, that is all.';

const FROM = '+14155550100';
const TO_MENU = '+15550000021';
const TO_LOOP = '+15550000022';

let stack: TestStack;
let llm: FakeOpenAI;
let deepgram: FakeDeepgram;
let sql: Sql;
let agentId: string;
let edge: SimulatedEdge;
let menuCallee: SipCallee;
let loopCallee: SipCallee;
const speech = new Map<string, Pcm>();

const fixture = stackFixture();
const { api } = fixture;
const getCall = async (id: string) => (await api('GET', `/v1/calls/${id}`)).body;

const DIGITS: Record<string, string> = { one: '1', two: '2', three: '3', four: '4', five: '5', six: '6', seven: '7', eight: '8', nine: '9', zero: '0' };
const words = (t: string) => new Set((t.toLowerCase().match(/[a-z]+/g) ?? []).map((w) => w.replace(/s$/, '')));

/**
 * The model stand-in's answer to a navigation request, read from the request itself: the option of the menu
 * (`For X, press N`) whose words the goal shares. None of the goal's words in any option: "none".
 */
function navigationAnswer(req: ChatRequest): string {
  const user = contentText(req.messages.at(-1)!);
  const goal = /Goal: (.*)/.exec(user)?.[1] ?? '';
  const menu = /Menu: (.*)/s.exec(user)?.[1] ?? '';
  const want = words(goal);
  for (const m of menu.matchAll(/for ([^,.]+),? press (\w+)/gi)) {
    if ([...words(m[1]!)].some((w) => want.has(w))) return DIGITS[m[2]!.toLowerCase()] ?? m[2]!;
  }
  return 'none';
}

const isNavigation = (req: ChatRequest) => contentText(req.messages[0]!).startsWith(NAVIGATION);
const isAnalysis = (req: ChatRequest) => contentText(req.messages[0]!).startsWith('You analyse');

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    if (isNavigation(req)) return { text: navigationAnswer(req) };
    if (isAnalysis(req)) return { text: JSON.stringify({ summary: 'The agent reached billing.', outcome: 'reached' }) };
    return { text: REPLY };
  });
  deepgram = await startFakeDeepgram();
  for (const t of [LEVEL1, LEVEL2, PERSON]) speech.set(t, await synthesize(t));
  [menuCallee, loopCallee] = await Promise.all([SipCallee.start('answer'), SipCallee.start('answer')]);
  edge = await startCalleeEdge([
    [TO_MENU, menuCallee],
    [TO_LOOP, loopCallee],
  ]);
  ({ stack, sql } = await fixture.start({
    org: 'ivr',
    worker: true,
    sip: true,
    env: {
      SSRF_ALLOWLIST: '127.0.0.1,localhost',
      DEEPGRAM_BASE_URL: deepgram.httpUrl,
      DEEPGRAM_API_KEY: 'dg-test-key',
      WORKER_SILENCE_SECONDS: '15',
      DISPATCH_TIMEOUT_SECONDS: '30',
      OUTBOUND_RING_TIMEOUT_SECONDS: '15',
      STOP_REPORT_GRACE_SECONDS: '20',
    },
  }));
  const modelId = await createStandInModel(api, llm.url, { system_prompt: 'You call Acme to pay an invoice.' });
  // The menus are heard through the Deepgram stand-in (the offline recogniser cannot read 8 kHz phone audio).
  agentId = await createLocalAgent(api, { name: 'Payer', llm_id: modelId, transcriber: { provider: 'deepgram' }, first_message: FIRST_MESSAGE });
  const [org] = await sql<{ org_id: string }[]>`select org_id from agents where id = ${agentId}`;
  await addOutboundNumber(stack, sql, edge, { trunkName: 'ivr-test', orgId: org!.org_id, from: FROM, agentId });
}, 240_000);

afterAll(async () => {
  await fixture.stop();
  await Promise.all([menuCallee?.close(), loopCallee?.close()]);
  await edge?.close();
  await Promise.all([llm?.close(), deepgram?.close()]);
});

/** Labels each prompt for the worker's Deepgram stream as it is played (its words spread over its audio). */
function labeller(conn: DeepgramConnection, texts: Map<Pcm, string>) {
  return (node: MenuNode) => {
    const text = texts.get(node.prompt)!;
    conn.expectNext({ segments: [{ text, startMs: 0, endMs: Math.round((node.prompt.samples.length / node.prompt.sampleRate) * 1000) - 300 }] });
  };
}


/** The next utterance the callee hears after sample `from`: at least half a second of sound, then 1.2 s of quiet. */
const heard = (callee: SipCallee, from: number) => utterance(callee, { from, quietSeconds: 1.2, minSoundSeconds: 0.5 });
/** Loud sound the callee received between two indexes, in seconds from first to last. */
const soundBetween = (callee: SipCallee, from: number, to: number) => soundSeconds(callee.received, from, to);

describe.skipIf(!sipBridgeVersion())('phone-menu navigation on outbound calls', () => {
  it('presses 2 then 2 towards the goal, says nothing to the menus, and speaks its message to the person', { timeout: 240_000 }, async () => {
    const person: MenuNode = { name: 'person', prompt: speech.get(PERSON)! };
    const payments: MenuNode = { name: 'billing', prompt: speech.get(LEVEL2)!, next: { '2': person } };
    const root: MenuNode = { name: 'main', prompt: speech.get(LEVEL1)!, next: { '2': payments } };
    const texts = new Map<Pcm, string>([
      [root.prompt, LEVEL1],
      [payments.prompt, LEVEL2],
      [person.prompt, PERSON],
    ]);

    const created = await api('POST', '/v1/calls', { agent_id: agentId, to_number: TO_MENU, from_number: FROM, ivr_goal: GOAL });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body).toMatchObject({ ivr_goal: GOAL, ivr: { max_menus: 6 } });
    const id = created.body.id as string;
    await menuCallee.waitFor('the answer', () => menuCallee.answered, 60_000);
    menuCallee.startMedia();
    // The phone system speaks once the worker listens (its speech-to-text stream is open).
    const conn = await deepgram.nextConnection(60_000);
    const plays = await menuCallee.menu(root, { replayAfterMs: 15_000, maxPlays: 6, beforePrompt: labeller(conn, texts) });

    expect(plays.map((p) => [p.node, p.key])).toEqual([
      ['main', '2'],
      ['billing', '2'],
      ['person', null],
    ]);
    expect(menuCallee.keys).toEqual(['2', '2']);
    // Nothing of the agent's from the answer to the end of the person's line: no greeting, no words to the menus.
    const personEnd = plays[2]!.heardTo;
    expect(soundBetween(menuCallee, 0, personEnd)).toBe(0);
    // The model stand-in was asked twice, with the goal and each menu, before any conversation turn.
    const navigation = llm.requests.filter(isNavigation).map((r) => contentText(r.messages.at(-1)!));
    expect(navigation).toHaveLength(2);
    expect(navigation[0]).toContain(GOAL);
    expect(navigation[0]).toContain('For billing, press 2');
    expect(navigation[1]).toContain('For payments, press 2');

    // After the person's line: the first message, heard as long as the agent's voice says it.
    const said = await heard(menuCallee, personEnd);
    const expected = await spokenSeconds(FIRST_MESSAGE);
    expect(said.seconds).toBeGreaterThan(expected * 0.7);
    expect(said.seconds).toBeLessThan(expected * 1.6);

    if (process.env.VAP_DEBUG_AUDIO) writeWav(process.env.VAP_DEBUG_AUDIO, menuCallee.audio(personEnd));
    // Its words, by the offline recogniser held to the sentences of this call (free dictation cannot read 8 kHz
    // phone audio): the first message, not a menu's prompt, the person's line or a model reply.
    const spell = (t: string) =>
      t
        .toLowerCase()
        .replace(/\d/g, (d) => ` ${Object.keys(DIGITS).find((w) => DIGITS[w] === d)} `)
        .replace(/[^a-z ]/g, '')
        .replace(/\s+/g, ' ')
        .trim();
    const sentences = [FIRST_MESSAGE, LEVEL1, LEVEL2, PERSON, REPLY].map(spell);
    const jsgf = `#JSGF V1.0;\ngrammar said;\npublic <said> = ${sentences.join(' | ')};\n`;
    expect(await transcribe(menuCallee.audio(personEnd), { jsgf })).toBe(sentences[0]);
    const stopped = await api('POST', `/v1/calls/${id}/stop`);
    expect(stopped.body).toMatchObject({ status: 'completed', end_reason: 'api_stop' });
    // The worker's report after the stop brings the whole record (the partial transcripts before it carry words only).
    const done = await until('the worker\'s report', async () => {
      const c = await getCall(id);
      return c.messages?.some((m: { tool_call?: unknown }) => m.tool_call) ? c : null;
    }, 60_000);
    type Msg = { role: string; content: string; tool_call?: { name: string; arguments: string; output: string } };
    const messages = done.messages as Msg[];
    // The navigation in the record: the menus heard, the keys pressed, then the person and the first message.
    expect(messages.filter((m) => m.tool_call).map((m) => [m.tool_call!.name, JSON.parse(m.tool_call!.arguments)])).toEqual([
      ['ivr_press_keys', { keys: '2' }],
      ['ivr_press_keys', { keys: '2' }],
    ]);
    // Chosen by the model from its request (the keyword fallback would press the same keys).
    expect(messages.filter((m) => m.tool_call).map((m) => m.tool_call!.output)).toEqual([
      'Pressed 2 (billing); chosen by the model',
      'Pressed 2 (payments); chosen by the model',
    ]);
    const spoken = messages.filter((m) => !m.tool_call).map((m) => [m.role, m.content]);
    expect(spoken).toEqual([
      ['user', LEVEL1],
      ['user', LEVEL2],
      ['user', PERSON],
      ['agent', FIRST_MESSAGE],
    ]);
  });

  it('a menu that repeats itself whatever is pressed: two presses, then the agent hangs up (ivr_failed)', { timeout: 240_000 }, async () => {
    const root: MenuNode = { name: 'main', prompt: speech.get(LEVEL1)!, next: {} };
    const created = await api('POST', '/v1/calls', { agent_id: agentId, to_number: TO_LOOP, from_number: FROM, ivr_goal: 'reach billing' });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    await loopCallee.waitFor('the answer', () => loopCallee.answered, 60_000);
    loopCallee.startMedia();
    const conn = await deepgram.nextConnection(60_000);
    // The third prompt gets no key: the agent hangs up on hearing it.
    const plays = await loopCallee.menu(root, { replayAfterMs: 15_000, maxPlays: 3, beforePrompt: labeller(conn, new Map([[root.prompt, LEVEL1]])) });
    expect(plays.map((p) => p.key)).toEqual(['2', '2', null]);
    await loopCallee.waitFor('the BYE', () => loopCallee.hungUp, 60_000);
    expect(loopCallee.keys).toEqual(['2', '2']);
    expect(soundBetween(loopCallee, 0, loopCallee.received.length)).toBe(0);
    const done = await until('the call to end', async () => {
      const c = await getCall(id);
      return c.status === 'completed' && c.messages ? c : null;
    }, 60_000);
    expect(done).toMatchObject({ status: 'completed', end_reason: 'ivr_failed' });
    expect((done.messages as { role: string }[]).filter((m) => m.role === 'agent' && !('tool_call' in m))).toEqual([]);
  });
});
