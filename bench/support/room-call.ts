// One web call through the API, the worker and LiveKit with a real rtc-node client (bench:webrtc's room path;
// bench:browser runs it as the baseline next to Chromium): POST /v1/calls/web, join, hear the first message,
// then speak clips and time each reply.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { RtcClient, nowMs } from '../../test/support/rtc-client.ts';
import type { CallLatency } from '../../schemas/internal.ts';
import type { RunningStack } from '../../scripts/stack/supervisor.ts';
import type { Pcm } from '../../test/support/speech.ts';
import { Mic } from './mic.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Clip {
  text: string;
  pcm48: Pcm;
  pcm16: Pcm;
  speechEnd48: number;
  speechEnd16: number;
  trailingMs: number;
}

export interface Turn {
  v2v_ms: number;
}

export interface RoomTurn extends Turn {
  /** Wall-clock ms (nowMs): the end of the clip's speech as it left the caller, and the first speech heard back. */
  speech_end_at: number;
  heard_at: number;
}

export async function api<T = any>(stack: RunningStack, key: string, method: string, route: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(stack.controlPlaneUrl + route, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as T };
}

/** The development API key the control plane logs at start, waiting up to `timeoutMs` for it. */
export async function devKey(stack: RunningStack, timeoutMs = 20_000): Promise<string> {
  const log = path.join(stack.logDir, 'control-plane.log');
  const end = Date.now() + timeoutMs;
  for (;;) {
    const m = /API key: (\S+)/.exec(readFileSync(log, 'utf8'));
    if (m) return m[1]!;
    if (Date.now() > end) throw new Error(`no development key in ${log}`);
    await sleep(100);
  }
}

export interface RoomCall {
  call_id: string;
  /** POST /v1/calls/web sent -> 201 received. */
  create_ms: number;
  /** 201 -> connected to the room. */
  join_ms: number;
  /** POST sent -> first decoded frame of the agent (WebRTC sends silence too). */
  first_frame_ms: number | null;
  /** POST sent -> first frame of the first message above the speech threshold. */
  first_message_ms: number;
  turns: RoomTurn[];
  latency: CallLatency | null;
}

export interface ConverseOptions {
  /** Called before each turn's clip is spoken (a stand-in STT is told what the caller will say). */
  beforeTurn?: (turn: number, clip: Clip) => void | Promise<void>;
}

/**
 * The caller's side of a call in a room it has joined: publish the microphone, hear the agent's first message, then
 * speak `turns` clips (from `offset`) and time each reply. `t0` is when the call began (first_* are from it).
 */
export async function converse(client: RtcClient, clips: Clip[], turns: number, offset: number, t0: number, opts: ConverseOptions = {}): Promise<Pick<RoomCall, 'first_frame_ms' | 'first_message_ms' | 'turns'>> {
  const result: Pick<RoomCall, 'first_frame_ms' | 'first_message_ms' | 'turns'> = { first_frame_ms: null, first_message_ms: 0, turns: [] };
  let mic: Mic | null = null;
  try {
    const agent = client.record({});
    await client.publishMicrophone();
    mic = new Mic(client);
    await agent.utterance({ silenceMs: 800, timeoutMs: 60_000 });
    result.first_message_ms = agent.firstSpeechAt! - t0;
    result.first_frame_ms = agent.firstFrameAt !== undefined ? agent.firstFrameAt - t0 : null;
    for (let i = 0; i < turns; i++) {
      const clip = clips[(offset + i) % clips.length]!;
      await sleep(300);
      await opts.beforeTurn?.(i, clip);
      agent.reset();
      const endedAt = (await mic.say(clip.pcm48)).end;
      // The source plays in real time: the last speech sample left it (what followed it) before endedAt.
      const totalMs = (Math.ceil(clip.pcm48.samples.length / 480) * 480) / 48;
      const speechEnd = endedAt - (totalMs - clip.speechEnd48);
      await agent.until(() => agent.firstSpeechAt !== undefined, 20_000, `a reply (room, turn ${i})`);
      result.turns.push({ v2v_ms: agent.firstSpeechAt! - speechEnd, speech_end_at: speechEnd, heard_at: agent.firstSpeechAt! });
      await agent.utterance({ silenceMs: 700, timeoutMs: 20_000 });
    }
  } finally {
    await mic?.stop();
  }
  return result;
}

/** `waitForReport: false` skips waiting for the worker's latency summary (calls without user turns have none). */
export async function roomCall(stack: RunningStack, key: string, agentId: string, clips: Clip[], turns: number, offset: number, opts: { waitForReport?: boolean } & ConverseOptions = {}): Promise<RoomCall> {
  const t0 = nowMs();
  const created = await api(stack, key, 'POST', '/v1/calls/web', { agent_id: agentId });
  const t1 = nowMs();
  if (created.status !== 201) throw new Error(`POST /v1/calls/web answered ${created.status}: ${JSON.stringify(created.body)}`);
  const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
  const t2 = nowMs();
  const result: RoomCall = { call_id: created.body.id, create_ms: t1 - t0, join_ms: t2 - t1, first_frame_ms: null, first_message_ms: 0, turns: [], latency: null };
  try {
    Object.assign(result, await converse(client, clips, turns, offset, t0, opts));
  } finally {
    await client.leave();
    await api(stack, key, 'POST', `/v1/calls/${result.call_id}/stop`);
  }
  // The worker's latency summary arrives with its ended report.
  const end = opts.waitForReport === false ? 0 : Date.now() + 15_000;
  while (Date.now() < end) {
    const c = await api(stack, key, 'GET', `/v1/calls/${result.call_id}`);
    if (c.body?.status === 'completed' && c.body.latency?.llm_ttft?.samples) {
      result.latency = c.body.latency;
      break;
    }
    await sleep(250);
  }
  return result;
}
