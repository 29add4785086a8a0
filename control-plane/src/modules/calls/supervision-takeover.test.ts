// Taking a live call over and handing it back, against a real LiveKit server: the person's token (microphone and
// subscribe only, joins, is heard by the caller, can publish no data), one takeover at a time (two racing, one
// wins), hand_back (removes the person), who may do either, and what the record, the audit log, the events and the
// worker's outbox keep.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalAudioTrack, AudioSource, RoomEvent, TrackPublishOptions, TrackSource, type RemoteParticipant } from '@livekit/rtc-node';
import { createHash } from 'node:crypto';
import { AccessToken, TokenVerifier } from 'livekit-server-sdk';
import { WebhookEvent } from '@livekit/protocol';
import type { TestPlatform } from '../../../../test/support/platform.ts';
import type { TestStack } from '../../../../test/support/stack.ts';
import type { FakeOpenAI } from '../../../../test/support/fake-openai.ts';
import { createLocalAgent, startLiveCall, startLiveCallPlatform, workerRequest } from '../../../../test/support/live-call.ts';
import { RtcClient, disposeRtc } from '../../../../test/support/rtc-client.ts';
import { SUPERVISION_TOPIC } from '../../../../schemas/supervision.ts';
import { PUBLISH_ON_BEHALF } from './supervision-takeover.ts';

let stack: TestStack;
let tp: TestPlatform;
let llm: FakeOpenAI;
let org: { orgId: string; key: string };
let agentId: string;

const internal = (method: string, path: string, body?: unknown) => workerRequest(tp, method, path, body);
const control = (callId: string, body: Record<string, unknown>, key = org.key) => tp.request('post', `/v1/calls/${callId}/control`, { key, body });
const tone = new Int16Array(480).map((_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 440 * i) / 48000)));

const liveCall = () => startLiveCall(tp, org, agentId);

beforeAll(async () => {
  ({ stack, llm, tp } = await startLiveCallPlatform({
    STOP_REPORT_GRACE_SECONDS: 1,
    TAKEOVER_TOKEN_TTL_SECONDS: 20,
  }));
  org = await tp.createOrg('takeovers');
  agentId = await createLocalAgent(tp, org, llm.url);
}, 120_000);

afterAll(async () => {
  await disposeRtc();
  await llm?.close();
});

describe('takeover', () => {
  it("gives a token that may publish the microphone only, heard by the caller, marked as the agent's; recorded without the token", async () => {
    const call = await liveCall();
    const agentIdentity = `agent-${call.id}`;
    const agent = await RtcClient.join(call.url, await tp.platform.services.livekit.agentToken(call.room, agentIdentity));
    const caller = await RtcClient.join(call.url, call.token);
    let person: RtcClient | null = null;
    try {
      const res = await control(call.id, { action: 'takeover' });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const t = res.body.takeover;
      expect(t).toEqual({ server_url: stack.livekitUrl, participant_token: expect.any(String), identity: expect.stringMatching(/^supervisor-[0-9a-f-]{36}$/), expires_at: expect.any(String) });
      expect(res.body.supervision).toMatchObject({ seq: 1, action: 'takeover', actor_type: 'api_key', details: { identity: t.identity, expires_at: t.expires_at } });

      const claims = await new TokenVerifier(stack.apiKey, stack.apiSecret).verify(t.participant_token);
      expect(claims.name).toBe('Supervisor');
      expect(claims.video).toMatchObject({ room: call.room, roomJoin: true, canSubscribe: true, canPublish: true, canPublishData: false, canUpdateOwnMetadata: false });
      expect(claims.video!.canPublishSources).toEqual(['microphone']);
      expect(claims.video!.hidden).toBeFalsy();
      // agents-js's RoomIO never links a participant that speaks on its agent's behalf: the person is not the caller.
      expect(claims.attributes).toEqual({ [PUBLISH_ON_BEHALF]: agentIdentity });
      expect(claims.exp! - claims.nbf!).toBeLessThanOrEqual(20);

      // Joined, its microphone reaches the caller.
      person = await RtcClient.join(t.server_url, t.participant_token);
      const heard = caller.record({ from: t.identity });
      await person.publishMicrophone();
      for (let i = 0; i < 300 && heard.firstSpeechAt === undefined; i++) await person.sendFrame(tone);
      expect(heard.firstSpeechAt).toBeDefined();

      // Nothing but its microphone: no data (it reaches nobody), no other source.
      const callerData: string[] = [];
      caller.room.on(RoomEvent.DataReceived, (_d: Uint8Array, p?: RemoteParticipant) => callerData.push(p?.identity ?? 'server'));
      await person.room.localParticipant!.publishData(new Uint8Array([1]), { reliable: true, topic: SUPERVISION_TOPIC }).catch(() => {});
      const screen = new AudioSource(48000, 1, 100);
      const screenTrack = LocalAudioTrack.createAudioTrack('screen', screen);
      const refused = await person.room.localParticipant!
        .publishTrack(screenTrack, new TrackPublishOptions({ source: TrackSource.SOURCE_SCREENSHARE_AUDIO }))
        .then(() => false, () => true);
      const me = (await tp.platform.services.livekit.rooms.listParticipants(call.room)).find((p) => p.identity === t.identity);
      expect(me?.permission).toMatchObject({ canPublish: true, canPublishData: false, canSubscribe: true });
      expect(me?.tracks.map((tr) => tr.source)).toEqual([2 /* TrackSource.MICROPHONE */]);
      expect(refused || me?.tracks.length === 1).toBe(true);
      await screenTrack.close(false).catch(() => {});
      await screen.close().catch(() => {});
      expect(callerData).toEqual([]);

      // The worker gets the person's identity; the record, the audit log and the event keep it, never the token.
      expect((await internal('GET', `/calls/${call.id}/supervision`)).body.items).toEqual([{ seq: 1, action: 'takeover', identity: t.identity }]);
      const got = await tp.request('get', `/v1/calls/${call.id}`, { key: org.key });
      expect(got.body.supervision).toEqual([res.body.supervision]);
      const [audit] = await tp.sql`select action, details::text as d from audit_events where resource_id = ${call.id} and action like 'call.supervise.%'`;
      expect(audit).toMatchObject({ action: 'call.supervise.takeover' });
      const [event] = await tp.sql`select payload::text as p from events where call_id = ${call.id} and type = 'call.supervised'`;
      for (const text of [audit!.d, event!.p, JSON.stringify(got.body)]) {
        expect(text).toContain(t.identity);
        expect(text).not.toContain(t.participant_token);
      }
    } finally {
      await person?.leave().catch(() => {});
      await caller.leave();
      await agent.leave();
    }
  }, 60_000);

  it('one at a time: a second takeover and a say are 409 (two racing, one wins); hand_back removes the person, then another may take over', async () => {
    const call = await liveCall();
    const [a, b] = await Promise.all([control(call.id, { action: 'takeover' }), control(call.id, { action: 'takeover' })]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const won = a.status === 200 ? a : b;
    const lost = a.status === 200 ? b : a;
    expect(lost.body).toMatchObject({ type: 'conflict', detail: 'The call is already taken over: hand it back first' });
    expect((await control(call.id, { action: 'takeover' })).status).toBe(409);
    const say = await control(call.id, { action: 'say', text: 'Hello?' });
    expect(say.status).toBe(409);
    expect(say.body.detail).toContain('taken over');
    // A whisper still reaches the model: it is no speech.
    expect((await control(call.id, { action: 'whisper', text: 'Be kind.' })).status).toBe(200);

    const identity = won.body.takeover.identity as string;
    const person = await RtcClient.join(won.body.takeover.server_url, won.body.takeover.participant_token);
    let gone = false;
    person.room.on(RoomEvent.Disconnected, () => (gone = true));
    try {
      const rooms = tp.platform.services.livekit.rooms;
      expect((await rooms.listParticipants(call.room)).map((p) => p.identity)).toContain(identity);
      const back = await control(call.id, { action: 'hand_back' });
      expect(back.status, JSON.stringify(back.body)).toBe(200);
      expect(back.body).toEqual({ call_id: call.id, supervision: expect.objectContaining({ action: 'hand_back', details: { identity } }) });
      expect(back.body.takeover).toBeUndefined();
      // Out of the room: its microphone no longer reaches the caller.
      expect((await rooms.listParticipants(call.room)).map((p) => p.identity)).not.toContain(identity);
      for (let i = 0; i < 100 && !gone; i++) await new Promise((r) => setTimeout(r, 100));
      expect(gone).toBe(true);
    } finally {
      await person.leave().catch(() => {});
    }
    expect((await control(call.id, { action: 'hand_back' })).status).toBe(409);
    expect((await control(call.id, { action: 'say', text: 'I am back.' })).status).toBe(200);
    const again = await control(call.id, { action: 'takeover' });
    expect(again.status).toBe(200);
    expect(again.body.takeover.identity).not.toBe(identity);
    // A person who already left is handed back from all the same (the removal is best effort).
    expect((await control(call.id, { action: 'hand_back' })).status).toBe(200);

    const taken = await internal('GET', `/calls/${call.id}/supervision`);
    expect(taken.body.items.map((i: { action: string; identity?: string }) => [i.action, i.identity])).toEqual([
      ['takeover', identity],
      ['whisper', undefined],
      ['hand_back', identity],
      ['say', undefined],
      ['takeover', again.body.takeover.identity],
      ['hand_back', again.body.takeover.identity],
    ]);
    const audits = await tp.sql`select action from audit_events where resource_id = ${call.id} and action like 'call.supervise.%' order by (details->>'seq')::int`;
    expect(audits.map((r) => r.action)).toEqual([
      'call.supervise.takeover',
      'call.supervise.whisper',
      'call.supervise.hand_back',
      'call.supervise.say',
      'call.supervise.takeover',
      'call.supervise.hand_back',
    ]);
    const events = await tp.sql`select payload from events where call_id = ${call.id} and type = 'call.supervised' order by seq`;
    expect(events.map((e) => (typeof e.payload === 'string' ? JSON.parse(e.payload) : e.payload).action)).toEqual(['takeover', 'whisper', 'hand_back', 'say', 'takeover', 'hand_back']);
  }, 60_000);

  it('refuses: hand_back with no takeover (409), stray fields (422), another org (404), a publishable key (403), a call no longer in progress (409)', async () => {
    const call = await liveCall();
    const none = await control(call.id, { action: 'hand_back' });
    expect(none.status).toBe(409);
    expect(none.body).toMatchObject({ type: 'conflict', detail: 'The call is not taken over' });
    const stray = await control(call.id, { action: 'takeover', text: 'hi', when: 'now', destination: '+14155550123' });
    expect(stray.status).toBe(422);
    expect(stray.body.detail.map((d: { loc: string[]; type: string }) => [d.loc[1], d.type])).toEqual([
      ['text', 'extra_forbidden'],
      ['when', 'extra_forbidden'],
      ['destination', 'extra_forbidden'],
    ]);
    expect((await control(call.id, { action: 'hand_back', text: 'x' })).status).toBe(422);

    const other = await tp.createOrg('not theirs');
    expect((await control(call.id, { action: 'takeover' }, other.key)).status).toBe(404);
    expect((await control(call.id, { action: 'hand_back' }, other.key)).status).toBe(404);
    const pk = await tp.request('post', '/v1/publishable-keys', { key: org.key, body: { name: 'site', allowed_origins: ['https://shop.example'], scopes: ['calls:web'] } });
    expect(pk.status, JSON.stringify(pk.body)).toBe(201);
    const viaPk = await tp.request('post', `/v1/calls/${call.id}/control`, { key: pk.body.key, headers: { origin: 'https://shop.example' }, body: { action: 'takeover' } });
    expect(viaPk.status).toBe(403);
    expect((await tp.request('get', `/v1/calls/${call.id}`, { key: org.key })).body.supervision).toEqual([]);

    // Taken over, then ended: the end needs no hand_back, and nothing more is accepted.
    expect((await control(call.id, { action: 'takeover' })).status).toBe(200);
    expect((await control(call.id, { action: 'end' })).status).toBe(200);
    for (const action of ['takeover', 'hand_back']) {
      const late = await control(call.id, { action });
      expect(late.status).toBe(409);
      expect(late.body.detail).toContain('not in progress');
    }
    const ended = await tp.request('get', `/v1/calls/${call.id}`, { key: org.key });
    expect(ended.body).toMatchObject({ status: 'completed', end_reason: 'api_stop' });
    expect(ended.body.supervision.map((s: { action: string }) => s.action)).toEqual(['takeover', 'end']);
  }, 60_000);

  it('takes out a person handed back who joins again with their unexpired token (LiveKit cannot revoke it); a listener stays', async () => {
    const call = await liveCall();
    const taken = await control(call.id, { action: 'takeover' });
    expect(taken.status).toBe(200);
    const { server_url: url, participant_token: token, identity } = taken.body.takeover as { server_url: string; participant_token: string; identity: string };
    expect((await control(call.id, { action: 'hand_back' })).status).toBe(200);
    const listen = await tp.request('post', `/v1/calls/${call.id}/listen`, { key: org.key });
    expect(listen.status).toBe(200);
    // Back in with the same token: LiveKit lets it join.
    const again = await RtcClient.join(url, token);
    const listener = await RtcClient.join(listen.body.server_url, listen.body.participant_token);
    const rooms = tp.platform.services.livekit.rooms;
    try {
      expect((await rooms.listParticipants(call.room)).map((p) => p.identity)).toEqual(expect.arrayContaining([identity, listen.body.identity]));
      // LiveKit's participant_joined webhooks for both, signed as LiveKit signs them.
      for (const who of [identity, listen.body.identity as string]) {
        const body = new WebhookEvent({ event: 'participant_joined', room: { name: call.room }, participant: { identity: who } }).toJsonString();
        const at = new AccessToken(stack.apiKey, stack.apiSecret);
        at.sha256 = createHash('sha256').update(body).digest('base64');
        const res = await tp.request('post', '/internal/livekit/webhook', { rawBody: body, headers: { 'content-type': 'application/webhook+json', authorization: await at.toJwt() } });
        expect(res.status).toBe(200);
      }
      const left = (await rooms.listParticipants(call.room)).map((p) => p.identity);
      expect(left).not.toContain(identity);
      expect(left).toContain(listen.body.identity);
    } finally {
      await again.leave().catch(() => {});
      await listener.leave().catch(() => {});
    }
  }, 60_000);
});
