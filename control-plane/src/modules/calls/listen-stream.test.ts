// The listen stream (POST /v1/calls/{id}/listen's stream_url), against a real LiveKit server: the format message and
// PCM frames with the caller on channel 0 and the agent on channel 1; the ticket's refusals (missing, wrong, used,
// expired, another call's or organisation's), a client that sends data, the caps; the end when the room goes; the
// stream's seat leaves the room on every way out; supervision[] and the audit log keep it.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestPlatform } from '../../../../test/support/platform.ts';
import type { TestStack } from '../../../../test/support/stack.ts';
import type { FakeOpenAI } from '../../../../test/support/fake-openai.ts';
import { createLocalAgent, startLiveCall, startLiveCallPlatform, WORKER_TOKEN as WORKER } from '../../../../test/support/live-call.ts';
import { RtcClient, disposeRtc } from '../../../../test/support/rtc-client.ts';
import { connectStream as connect, energy, opened, refused, type ListenStream, type Refused } from '../../../../test/support/listen-stream.ts';
import { FRAME_BYTES } from './listen-mixer.ts';

let stack: TestStack;
let tp: TestPlatform;
let llm: FakeOpenAI;
let org: { orgId: string; key: string };
let other: { orgId: string; key: string };
const agents = new Map<string, string>();

/** Waits for `cond`, checking every 50 ms, up to a bound that only keeps a broken run from hanging. */
async function until(what: string, cond: () => boolean | Promise<boolean>): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`never: ${what}`);
}

/** A web call in progress (as its worker reports). */
const liveCall = (o = org) => startLiveCall(tp, o, agents.get(o.orgId));
async function streamUrl(callId: string, o = org): Promise<string> {
  const res = await tp.request('post', `/v1/calls/${callId}/listen`, { key: o.key });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.stream_url as string;
}
const streamSeats = async (room: string) =>
  (await tp.platform.services.livekit.rooms.listParticipants(room).catch(() => [])).filter((p) => p.identity.startsWith('supervisor-stream-'));

/** 10 ms of a tone at 48 kHz (a whole number of cycles, so frames join smoothly). */
const tone = (hz: number) => Int16Array.from({ length: 480 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * hz * i) / 48000)));
const LOUD = 1000;
const QUIET = 200;

beforeAll(async () => {
  ({ stack, llm, tp } = await startLiveCallPlatform({
    LISTEN_TOKEN_TTL_SECONDS: 60,
    LISTEN_STREAMS_PER_ORG: 2,
    LISTEN_STREAMS_PER_PROCESS: 3,
  }));
  org = await tp.createOrg('listeners');
  other = await tp.createOrg('someone else');
  agents.set(org.orgId, await createLocalAgent(tp, org, llm.url));
  agents.set(other.orgId, await createLocalAgent(tp, other, llm.url));
}, 120_000);

afterAll(async () => {
  await disposeRtc();
  await llm?.close();
});

describe('the listen stream', () => {
  it('sends the format, then 20 ms stereo frames: the caller on channel 0, the agent on channel 1, each side only on its own', async () => {
    const call = await liveCall();
    const url = await streamUrl(call.id);
    expect(url).toMatch(new RegExp(`^ws://127\\.0\\.0\\.1:\\d+/v1/calls/${call.id}/listen/stream\\?ticket=[A-Za-z0-9_-]{43}$`));
    // No credential of the platform or the organisation is in it, and the ticket is kept as its hash only.
    for (const secret of [stack.apiSecret, stack.apiKey, org.key, tp.config.MASTER_KEY!, WORKER]) expect(url).not.toContain(secret);
    const ticket = new URL(url).searchParams.get('ticket')!;
    const [row] = await tp.sql`select ticket_hash from listen_stream_tickets where call_id = ${call.id}`;
    expect(Buffer.from(row!.ticket_hash).equals(createHash('sha256').update(ticket).digest())).toBe(true);

    const caller = await RtcClient.join(call.url, call.token);
    const agent = await RtcClient.join(call.url, await tp.platform.services.livekit.agentToken(call.room, `agent-${call.id}`));
    const s = opened(await connect(url));
    try {
      await until('the start message', () => s.texts.length > 0);
      expect(s.texts[0]).toEqual({
        type: 'start',
        call_id: call.id,
        sample_rate: 16000,
        channels: 2,
        channel_map: ['caller', 'agent'],
        encoding: 'pcm_s16le',
        frame_ms: 20,
      });
      await until("the stream's seat in the room", async () => (await streamSeats(call.room)).length === 1);
      const [seat] = await streamSeats(call.room);
      expect(seat!.permission).toMatchObject({ canPublish: false, canPublishData: false, hidden: true });
      await caller.waitForParticipant(`agent-${call.id}`);
      // The caller is never told: the stream's participant is not among those it sees.
      expect([...caller.room.remoteParticipants.keys()]).toEqual([`agent-${call.id}`]);

      // The caller speaks, the agent is quiet: channel 0 only.
      const loud = (ch: 0 | 1) => s.frames.filter((f) => energy(f, ch) > LOUD).length;
      for (let i = 0; i < 1000 && loud(0) < 50; i++) await caller.sendFrame(tone(400));
      expect(loud(0)).toBeGreaterThanOrEqual(50);
      expect(Math.max(...s.frames.map((f) => energy(f, 1)))).toBeLessThan(QUIET);
      // The caller's tail dies away (a few frames of concealment), then the agent speaks alone: channel 1 only.
      await until('the caller quiet on channel 0', () => s.frames.length > 25 && s.frames.slice(-25).every((f) => energy(f, 0) < QUIET));
      s.frames.length = 0;
      for (let i = 0; i < 1000 && loud(1) < 50; i++) await agent.sendFrame(tone(1000));
      expect(loud(1)).toBeGreaterThanOrEqual(50);
      expect(Math.max(...s.frames.map((f) => energy(f, 0)))).toBeLessThan(QUIET);
      expect(s.frames.every((f) => f.length === FRAME_BYTES)).toBe(true);

      // supervision[] and the audit log keep the stream as a `listen` of the key that asked for the ticket.
      const got = await tp.request('get', `/v1/calls/${call.id}`, { key: org.key });
      expect(got.body.supervision.map((e: { action: string; details: Record<string, unknown> }) => [e.action, e.details.stream ?? false])).toEqual([
        ['listen', false],
        ['listen', true],
      ]);
      expect(got.body.supervision[1]).toMatchObject({ actor_type: 'api_key', details: { stream: true, identity: seat!.identity } });
      const audits = await tp.sql`select action, details from audit_events where resource_id = ${call.id} and action = 'call.supervise.listen'`;
      expect(audits.map((a) => a.details.stream ?? false).sort()).toEqual([false, true]);
    } finally {
      s.ws.close();
      await caller.leave();
      await agent.leave();
    }
    // The client went: so did the stream's seat.
    expect(await s.closed).toMatchObject({ code: 1005 });
    await until('the seat gone', async () => (await streamSeats(call.room)).length === 0);
  }, 120_000);

  it("ends with `end` (call_ended) and a normal close when the call's room is deleted", async () => {
    const call = await liveCall();
    const s = opened(await connect(await streamUrl(call.id)));
    await until("the stream's seat in the room", async () => (await streamSeats(call.room)).length === 1);
    await tp.platform.services.livekit.rooms.deleteRoom(call.room);
    expect(await s.closed).toEqual({ code: 1000, reason: 'call_ended' });
    expect(s.texts.map((t) => t.type)).toEqual(['start', 'end']);
    expect(s.texts[1]).toEqual({ type: 'end', reason: 'call_ended' });
    expect(tp.platform.services.metrics.listenStreams).toBeDefined();
  }, 60_000);

  it('ends when the call does (stopped), even while its room lingers', async () => {
    const call = await liveCall();
    const s = opened(await connect(await streamUrl(call.id)));
    await until("the stream's seat in the room", async () => (await streamSeats(call.room)).length === 1);
    // The call completes without the room going (as if its deletion had failed): the stream sees the status.
    await tp.sql`update calls set status = 'completed', ended_at = now(), end_reason = 'api_stop' where id = ${call.id}`;
    expect(await s.closed).toEqual({ code: 1000, reason: 'call_ended' });
    await until('the seat gone', async () => (await streamSeats(call.room)).length === 0);
  }, 60_000);
});

describe('refusals before the upgrade (no room joined)', () => {
  it('a missing, wrong, used or expired ticket is a 401; another call or organisation a 404; a call not in progress a 409', async () => {
    const call = await liveCall();
    const url = await streamUrl(call.id);
    const base = url.replace(/\?.*$/, '');
    expect(refused(await connect(base))).toMatchObject({ status: 401, body: { type: 'unauthorized' } });
    expect(refused(await connect(`${base}?ticket=`))).toMatchObject({ status: 401 });
    expect(refused(await connect(`${base}?ticket=${'A'.repeat(43)}`))).toMatchObject({ status: 401 });
    expect(refused(await connect(`${base}?ticket=${encodeURIComponent("' or 1=1 --")}`))).toMatchObject({ status: 401 });

    // A ticket of another call of the org, and of another organisation's call, opens nothing here (404)...
    const second = await liveCall();
    const secondUrl = await streamUrl(second.id);
    expect(refused(await connect(secondUrl.replace(second.id, call.id)))).toMatchObject({ status: 404, body: { type: 'not_found' } });
    const foreign = await liveCall(other);
    const foreignUrl = await streamUrl(foreign.id, other);
    expect(refused(await connect(foreignUrl.replace(foreign.id, call.id)))).toMatchObject({ status: 404 });
    // ... and is not used up by the attempt.
    const s = opened(await connect(secondUrl));
    s.ws.close();
    await s.closed;

    // Used: the ticket opens one stream only.
    const first = opened(await connect(url));
    expect(refused(await connect(url))).toMatchObject({ status: 401, body: { type: 'unauthorized' } });
    first.ws.close();
    await first.closed;
    expect(refused(await connect(url))).toMatchObject({ status: 401 });

    // Expired (its expiry set in the past rather than waited for).
    const late = await streamUrl(call.id);
    await tp.sql`update listen_stream_tickets set expires_at = now() - interval '1 second' where call_id = ${call.id} and used_at is null`;
    expect(refused(await connect(late))).toMatchObject({ status: 401 });

    // A ticket of a call that ended since.
    const ending = await streamUrl(call.id);
    expect((await tp.request('post', `/v1/calls/${call.id}/control`, { key: org.key, body: { action: 'end' } })).status).toBe(200);
    expect(refused(await connect(ending))).toMatchObject({ status: 409, body: { type: 'conflict' } });

    // None of the refusals joined a room; the streams that opened left theirs.
    await until('no seats left', async () => (await streamSeats(second.room)).length === 0);
    expect(await streamSeats(foreign.room)).toEqual([]);
    // Only the two streams that opened were recorded.
    const [row] = await tp.sql`select supervision from calls where id = ${second.id}`;
    expect(row!.supervision.filter((e: { details: { stream?: boolean } }) => e.details.stream)).toHaveLength(1);
  }, 120_000);

  it('a client that sends anything is closed (1008, or 1009 past the size bound), and its seat leaves the room', async () => {
    const call = await liveCall();
    const s = opened(await connect(await streamUrl(call.id)));
    await until("the stream's seat in the room", async () => (await streamSeats(call.room)).length === 1);
    s.ws.send('hi');
    expect(await s.closed).toEqual({ code: 1008, reason: 'protocol_error' });
    expect(s.texts.at(-1)).toEqual({ type: 'end', reason: 'protocol_error' });
    await until('the seat gone', async () => (await streamSeats(call.room)).length === 0);

    const big = opened(await connect(await streamUrl(call.id)));
    big.ws.send(Buffer.alloc(64 * 1024));
    expect((await big.closed).code).toBe(1009);
    await until('the seat gone', async () => (await streamSeats(call.room)).length === 0);
  }, 60_000);

  it("caps the streams open at once: the organisation's (2 here), then the process's (3 here), with a 429", async () => {
    const a = await liveCall();
    const b = await liveCall(other);
    const open = [opened(await connect(await streamUrl(a.id))), opened(await connect(await streamUrl(a.id)))];
    const third = await streamUrl(a.id);
    expect(refused(await connect(third))).toMatchObject({ status: 429, body: { type: 'rate_limited', reason: 'listen_streams_per_org' } });
    open.push(opened(await connect(await streamUrl(b.id, other))));
    expect(refused(await connect(await streamUrl(b.id, other)))).toMatchObject({ status: 429, body: { reason: 'listen_streams_per_process' } });
    // A refused ticket is not used up: once a stream closes, it opens.
    const closing = open.shift()!;
    closing.ws.close();
    await closing.closed;
    let again: ListenStream | Refused = { status: 0, body: { type: '', detail: '' } };
    await until('a slot free again', async () => !('status' in (again = await connect(third))));
    open.push(opened(again));
    for (const s of open) s.ws.close();
    await Promise.all(open.map((s) => s.closed));
    await until('the seats gone', async () => (await streamSeats(a.room)).length + (await streamSeats(b.room)).length === 0);
  }, 120_000);
});
