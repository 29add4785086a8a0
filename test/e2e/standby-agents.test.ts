// Standby agents end to end: the supervisor's LiveKit, control plane (STANDBY_AGENTS=1) and media worker. The
// worker's standby job joins its room and waits; a web call takes that room, a real WebRTC client hears the
// greeting of the call's own agent, and the pool refills with a new standby agent for the next call, which takes
// a different room. The worker counts a waiting standby agent apart from its calls. Then a SIP caller (SIPp through
// the real SIP bridge) dials a number: the standby agent joins the caller's room and greets them, and the job the
// number's dispatch rule offers is rejected by the worker.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sipBridgeVersion, type TestStack } from '../support/stack.ts';
import { stackFixture } from '../support/stack-fixture.ts';
import { createLocalAgent, createStandInModel } from '../support/stand-in-agent.ts';
import { SipPhone } from '../support/sip-phone.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../support/fake-openai.ts';
import { RtcClient, disposeRtc } from '../support/rtc-client.ts';
import { transcribe, type Pcm } from '../support/speech.ts';
import { untilEvery } from '../support/e2e.ts';
import { utterance } from '../support/phone-audio.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';

const GREETINGS = ['hello thank you for calling acme dental', 'good morning this is the north clinic'];
// With a grammar pocketsphinx picks the closest sentence: hearing the call's own agent's greeting, not the other
// agent's, shows the standby job took the config of the call it was given.
const GRAMMAR = `#JSGF V1.0;
grammar heard;
public <s> = ${GREETINGS.join(' | ')} | please hold while i transfer your call;`;

let stack: TestStack;
let llm: FakeOpenAI;
let sql: Sql;
const agents: string[] = [];
const fixture = stackFixture();
const { api } = fixture;
const until = untilEvery(200);

async function workerGauge(name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${stack.ports.workerMetrics}/metrics`)).text();
  return Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? NaN);
}

async function readyRooms(): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${stack.ports.controlPlaneMetrics}/metrics`)).text();
  return Number(/^vap_standby_rooms\{state="ready"\} (\d+)/m.exec(text)?.[1] ?? 0);
}

async function takes(result: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${stack.ports.controlPlaneMetrics}/metrics`)).text();
  return Number(new RegExp(`^vap_standby_takes_total\\{result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

/** Waiting as the worker sees it, and takeable as the control plane sees it (its request is held). */
const standbyReady = () =>
  until('a standby agent waiting', async () => (await workerGauge('voice_standby_agents')) === 1 && (await readyRooms()) === 1, 120_000);

beforeAll(async () => {
  llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder(() => ({ text: 'We open at nine.' }));
  ({ stack, sql } = await fixture.start({
    org: 'e2e',
    worker: true,
    sip: !!sipBridgeVersion(),
    env: { SSRF_ALLOWLIST: '127.0.0.1,localhost', STANDBY_AGENTS: '1', SIP_RINGING_TIMEOUT_SECONDS: '90' },
  }));
  const modelId = await createStandInModel(api, llm.url);
  for (const [i, greeting] of GREETINGS.entries()) {
    agents.push(await createLocalAgent(api, { name: `Agent ${i}`, llm_id: modelId, first_message: `${greeting[0]!.toUpperCase()}${greeting.slice(1)}.` }));
  }
}, 180_000);

afterAll(async () => {
  await disposeRtc();
  await fixture.stop();
  await llm?.close();
});

/** A web call on a standby agent's room: the greeting heard, then stopped; returns the room. */
async function standbyCall(agentId: string, greeting: string): Promise<string> {
  await standbyReady();
  const created = await api('POST', '/v1/calls/web', { agent_id: agentId });
  expect(created.status).toBe(201);
  const room = created.body.room_name as string;
  expect(room).toMatch(/^standby-/);
  const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
  try {
    await client.publishMicrophone();
    const heard = await transcribe(await client.record({}).utterance({ silenceMs: 1500, timeoutMs: 90_000 }), { jsgf: GRAMMAR });
    expect(heard).toBe(greeting);
    // The call is a call to the worker, no longer a standby agent; the control plane refills the pool.
    await until('the call counted as a call', async () => (await workerGauge('voice_active_calls')) === 1);
    const call = await api('GET', `/v1/calls/${created.body.id}`);
    expect(call.body).toMatchObject({ status: 'in_progress', room_name: room });
  } finally {
    await client.leave();
  }
  const stopped = await api('POST', `/v1/calls/${created.body.id}/stop`);
  expect(stopped.body).toMatchObject({ status: 'completed', end_reason: 'api_stop' });
  await until('the worker free of the call', async () => (await workerGauge('voice_active_calls')) === 0);
  return room;
}

describe('standby agents', () => {
  it("web calls take a waiting agent's room, hear their own agent, and each finds a new standby agent", async () => {
    const first = await standbyCall(agents[0]!, GREETINGS[0]!);
    const second = await standbyCall(agents[1]!, GREETINGS[1]!);
    expect(second).not.toBe(first);
    // Both took a standby room; none was dispatched, and none fell back.
    const text = await (await fetch(`http://127.0.0.1:${stack.ports.controlPlaneMetrics}/metrics`)).text();
    expect(/^vap_standby_takes_total\{result="claimed"\} (\d+)/m.exec(text)?.[1]).toBe('2');
    expect(/^vap_standby_takes_total\{result="fallback"\} (\d+)/m.exec(text)?.[1] ?? '0').toBe('0');
    await until('the pool refilled', async () => (await workerGauge('voice_standby_agents')) === 1, 120_000);
  }, 400_000);

  it.skipIf(!sipBridgeVersion())(
    "a SIP caller is answered by a standby agent, which joins the caller's room; the number's rule's job is not used",
    async () => {
      const bought = await api('POST', '/v1/phone-numbers', { agent_id: agents[1], area_code: '415' });
      expect(bought.status).toBe(200);
      await standbyReady();
      const claimedBefore = await takes('claimed');
      const phone = await SipPhone.call({ bridge: stack.sipAddress!, to: bought.body.phone_number, from: '+15550100199' });
      let audio: Pcm;
      try {
        await phone.startMedia();
        await phone.waitFor('the greeting', () => phone.received.some((v) => Math.abs(v) > 1500), 90_000);
        // The greeting, then some quiet.
        await utterance(phone, { quietSeconds: 2 });
        audio = phone.audio();
        // While the call is up: one call on the worker (the rule's job was rejected, not started), served by the
        // standby agent from its standby room.
        expect(await workerGauge('voice_active_calls')).toBe(1);
        await phone.hangUp();
      } finally {
        await phone.close();
      }
      expect(await transcribe(audio, { jsgf: GRAMMAR })).toBe(GREETINGS[1]);
      const [row] = await sql<{ id: string; room_name: string; metadata: { standby_agent?: boolean } }[]>`
      select id, room_name, metadata from calls where to_number = ${bought.body.phone_number}`;
      expect(row!.room_name).toMatch(new RegExp(`^pn-${bought.body.id}_`));
      expect(row!.metadata.standby_agent).toBe(true);
      expect(await takes('claimed')).toBe(claimedBefore + 1);
      expect(await takes('fallback')).toBe(0);
      const call = await until('the call to complete', async () => {
        const c = (await api('GET', `/v1/calls/${row!.id}`)).body;
        return c.status === 'completed' ? c : null;
      });
      expect(call).toMatchObject({ type: 'inbound', agent_id: agents[1], end_reason: 'user_hangup', from_number: '+15550100199' });
      await until('the worker free of the call', async () => (await workerGauge('voice_active_calls')) === 0);
    },
    400_000,
  );
});
