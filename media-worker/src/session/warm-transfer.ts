// Warm transfer (transfer_call with mode warm; docs/decisions/036-warm-transfer.md), without MoveParticipant
// (LiveKit Cloud only): everything happens in the call's own room, and who hears whom is decided by
// server-side subscriptions (RoomService.UpdateSubscriptions).
//   1. hold: the agent publishes a second track, `hold` (synthesised music); the caller is unsubscribed from the
//      agent's voice and the agent stops listening to the caller;
//   2. the control plane dials the person into the room (a second SIP participant, `transfer-<id>`) and answers
//      once they answered or the dial failed; meanwhile the person hears neither the caller nor the music, and
//      the caller does not hear the person;
//   3. answered: the agent says a short LLM briefing of the call on its voice track, which only the person hears;
//   4. join: caller and person subscribe to each other, the music stops, the control plane is told, and the
//      agent leaves (the call goes on without it);
//   5. not answered (busy, no answer, refused): the music stops, the caller hears the agent again, and the tool
//      gives the agent a sentence to tell the caller. The call goes on.
import { llm, type voice } from '@livekit/agents';
import { AudioFrame, AudioSource, LocalAudioTrack, RoomEvent, TrackKind, TrackPublishOptions, TrackSource, type RemoteParticipant, type Room } from '@livekit/rtc-node';
import type { TransferResult } from '../../../schemas/internal.ts';
import type { Logger } from '../../../shared/logger.ts';
import { conversationLines } from './squad.ts';
import { completeWithin } from './completion.ts';
import { sayFixed } from './fixed-sentence.ts';

export const HOLD_TRACK_NAME = 'hold';
/** agents-js's RoomIO publishes the agent's voice under this name (voice/room_io/_output.ts). */
export const VOICE_TRACK_NAME = 'roomio_audio';
export const TRANSFER_IDENTITY_PREFIX = 'transfer-';

/** The system prompt of the briefing the person hears before the caller is put through. */
export const BRIEFING_PROMPT =
  'You brief a colleague on the phone, just before a caller is put through to them. In one or two short spoken sentences, ' +
  "say who is calling and what they want, using the caller's own facts. Start with 'Hello,'. No preamble, no lists.";
const BRIEFING_TIMEOUT_MS = 8000;
/** The SIP bridge subscribes the person's leg to every track as its media starts, at the answer: undone this fast. */
const REAPPLY_MS = 250;
/** Said when the summary cannot be had: the person still learns that a caller is coming. */
export const FALLBACK_BRIEFING = 'Hello, I have a caller on the line who asked to speak with a person. I am putting them through now.';

// ---- Who hears whom: a pure plan, applied with UpdateSubscriptions -------------------------------------------

export type TransferPhase = 'holding' | 'briefing' | 'joined' | 'restored';

export interface TransferTracks {
  /** The agent's voice track (RoomIO's). */
  voice: string | null;
  hold: string | null;
  /** The caller's audio tracks. */
  caller: string[];
  /** The person's audio tracks, once they publish. */
  human: string[];
}

export interface SubscriptionChange {
  identity: string;
  trackSids: string[];
  subscribe: boolean;
}

/**
 * The subscriptions of each phase, for the caller and (once in the room) the person:
 *  - holding: the caller hears the music only; the person (ringing) hears nothing of the caller or the music;
 *  - briefing: the same, and the person hears the agent's voice;
 *  - joined: caller and person hear each other, and neither hears the agent or the music;
 *  - restored: the caller hears the agent again.
 */
export function subscriptionPlan(phase: TransferPhase, who: { caller: string; human: string | null }, t: TransferTracks): SubscriptionChange[] {
  const voice = t.voice ? [t.voice] : [];
  const hold = t.hold ? [t.hold] : [];
  const changes: SubscriptionChange[] = [];
  const add = (identity: string | null, trackSids: string[], subscribe: boolean) => {
    if (identity && trackSids.length) changes.push({ identity, trackSids, subscribe });
  };
  switch (phase) {
    case 'holding':
    case 'briefing':
      add(who.caller, voice, false);
      add(who.caller, hold, true);
      add(who.caller, t.human, false);
      add(who.human, [...t.caller, ...hold], false);
      add(who.human, voice, phase === 'briefing');
      break;
    case 'joined':
      add(who.caller, [...voice, ...hold], false);
      add(who.human, [...voice, ...hold], false);
      add(who.caller, t.human, true);
      add(who.human, t.caller, true);
      break;
    case 'restored':
      add(who.caller, voice, true);
      break;
  }
  return changes;
}

// ---- Hold music ----------------------------------------------------------------------------------------------

/** A slow pentatonic tune (Hz), one note each NOTE_SECONDS: clearly music, nothing like speech. */
const TUNE = [523.25, 659.25, 783.99, 880.0, 783.99, 659.25, 587.33, 659.25];
const NOTE_SECONDS = 0.4;

/**
 * One loop of the hold music at `sampleRate`: soft sine notes with a quick attack and a long decay, plus a
 * quiet octave for warmth. Peaks around a quarter of full scale, as loud as speech on a phone line.
 */
export function holdMusic(sampleRate: number): Int16Array {
  const perNote = Math.round(sampleRate * NOTE_SECONDS);
  const out = new Int16Array(perNote * TUNE.length);
  TUNE.forEach((f, n) => {
    for (let i = 0; i < perNote; i++) {
      const t = i / sampleRate;
      const env = Math.min(1, t / 0.02) * Math.exp(-3 * t);
      const s = Math.sin(2 * Math.PI * f * t) + 0.3 * Math.sin(2 * Math.PI * 2 * f * t);
      out[n * perNote + i] = Math.round(8000 * env * s);
    }
  });
  return out;
}

/** The `hold` track: the music looped in real time until stopped. */
export class HoldMusic {
  readonly #source: AudioSource;
  readonly #track: LocalAudioTrack;
  readonly #room: Room;
  #sid: string | null = null;
  #stopped = false;
  #loop: Promise<void> | null = null;

  readonly sampleRate: number;

  constructor(room: Room, sampleRate = 8000) {
    this.#room = room;
    this.sampleRate = sampleRate;
    this.#source = new AudioSource(sampleRate, 1);
    this.#track = LocalAudioTrack.createAudioTrack(HOLD_TRACK_NAME, this.#source);
  }

  get sid(): string | null {
    return this.#sid;
  }

  async start(): Promise<string> {
    const pub = await this.#room.localParticipant!.publishTrack(this.#track, new TrackPublishOptions({ source: TrackSource.SOURCE_UNKNOWN }));
    this.#sid = pub.sid ?? null;
    const loop = holdMusic(this.sampleRate);
    const frame = Math.round(this.sampleRate / 50); // 20 ms
    this.#loop = (async () => {
      // captureFrame waits while the source's queue is full: the loop runs at the pace of playout.
      for (let off = 0; !this.#stopped; off = (off + frame) % (loop.length - (loop.length % frame))) {
        await this.#source.captureFrame(new AudioFrame(loop.slice(off, off + frame), this.sampleRate, 1, frame));
      }
    })().catch(() => {});
    return this.#sid!;
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#source.clearQueue();
    await this.#loop;
    if (this.#sid) await this.#room.localParticipant?.unpublishTrack(this.#sid).catch(() => {});
    await this.#source.close().catch(() => {});
  }
}

// ---- Briefing ------------------------------------------------------------------------------------------------

/** The briefing: one completion by the call's own model over the conversation; a fixed sentence if it fails. */
export async function briefing(model: llm.LLM | null, history: llm.ChatContext, opts: { timeoutMs?: number; logger?: Logger } = {}): Promise<string> {
  if (!model) return FALLBACK_BRIEFING;
  const lines = conversationLines(history);
  const ctx = llm.ChatContext.empty();
  ctx.addMessage({ role: 'system', content: BRIEFING_PROMPT });
  ctx.addMessage({ role: 'user', content: lines.length ? lines.join('\n') : '(The caller asked for a person straight away.)' });
  try {
    const text = (await completeWithin(model, ctx, opts.timeoutMs ?? BRIEFING_TIMEOUT_MS))?.trim() ?? null;
    if (text) return text;
    opts.logger?.warn({ reason: text === null ? 'timeout' : 'empty' }, 'transfer briefing unavailable: a fixed sentence stands in');
  } catch (err) {
    opts.logger?.warn({ err: (err as Error).message }, 'transfer briefing failed: a fixed sentence stands in');
  }
  return FALLBACK_BRIEFING;
}

// ---- The transfer --------------------------------------------------------------------------------------------

export interface WarmTransferDeps {
  room: Room;
  /** The caller's SIP participant. */
  caller: RemoteParticipant;
  session: voice.AgentSession;
  /** The side-task text model (a realtime agent's: providers/side-llm.ts); null: the fixed sentence briefs the person. */
  model: llm.LLM | null;
  /** RoomService.UpdateSubscriptions. */
  updateSubscriptions(identity: string, trackSids: string[], subscribe: boolean): Promise<void>;
  /** The control plane dials the second leg and answers when it is answered or failed. */
  dial(destination: string): Promise<TransferResult>;
  /** Tells the control plane the legs are joined, or that the answered leg was let go. */
  report(transferId: string, state: 'joined' | 'abandoned'): Promise<void>;
  logger: Logger;
  sampleRate?: number;
}

export type WarmTransferOutcome = { ok: true; transferId: string } | { ok: false; message: string };

export async function warmTransfer(d: WarmTransferDeps, destination: string): Promise<WarmTransferOutcome> {
  const { room, caller, session, logger } = d;
  const hold = new HoldMusic(room, d.sampleRate);
  let phase: TransferPhase = 'holding';
  let human: string | null = null;

  const tracks = (): TransferTracks => {
    const local = [...(room.localParticipant?.trackPublications.values() ?? [])];
    const audioOf = (p: RemoteParticipant | undefined) => [...(p?.trackPublications.values() ?? [])].filter((t) => t.kind === TrackKind.KIND_AUDIO).map((t) => t.sid!);
    return {
      voice: local.find((t) => t.name === VOICE_TRACK_NAME)?.sid ?? null,
      hold: hold.sid,
      caller: audioOf(room.remoteParticipants.get(caller.identity)),
      human: human ? audioOf(room.remoteParticipants.get(human)) : [],
    };
  };
  // Applied again on every change in the room: LiveKit auto-subscribes every participant to every new track.
  let applying = Promise.resolve();
  let pending = 0;
  const apply = () => {
    const plan = subscriptionPlan(phase, { caller: caller.identity, human }, tracks());
    pending++;
    applying = applying.then(async () => {
      for (const c of plan) {
        await d.updateSubscriptions(c.identity, c.trackSids, c.subscribe).catch((err: unknown) => logger.warn({ err: (err as Error).message, identity: c.identity }, 'subscription change failed'));
      }
      pending--;
    });
    return applying;
  };
  // And every REAPPLY_MS while the person is rung and briefed: the SIP bridge subscribes its participant when it
  // sets up the media, which can come after the events above; the plan's changes are idempotent.
  const keeper = setInterval(() => {
    if ((phase === 'holding' || phase === 'briefing') && pending === 0) void apply();
  }, REAPPLY_MS);
  const onParticipant = (p: RemoteParticipant) => {
    if (p.identity.startsWith(TRANSFER_IDENTITY_PREFIX) && !human) human = p.identity;
    void apply();
  };
  const onTrack = (_pub: unknown, p: RemoteParticipant) => onParticipant(p);
  // sip.callStatus changes as the person's leg rings and answers.
  const onAttributes = (_changed: unknown, p: RemoteParticipant | { identity: string }) => {
    if (p.identity.startsWith(TRANSFER_IDENTITY_PREFIX)) onParticipant(p as RemoteParticipant);
  };
  let humanLeft = false;
  const onLeft = (p: RemoteParticipant) => {
    if (p.identity === human) humanLeft = true;
  };
  room.on(RoomEvent.ParticipantConnected, onParticipant);
  room.on(RoomEvent.ParticipantAttributesChanged, onAttributes);
  room.on(RoomEvent.TrackPublished, onTrack);
  room.on(RoomEvent.ParticipantDisconnected, onLeft);
  const unwire = () => {
    clearInterval(keeper);
    room.off(RoomEvent.ParticipantConnected, onParticipant);
    room.off(RoomEvent.ParticipantAttributesChanged, onAttributes);
    room.off(RoomEvent.TrackPublished, onTrack);
    room.off(RoomEvent.ParticipantDisconnected, onLeft);
  };

  const restore = async () => {
    phase = 'restored';
    unwire();
    await hold.stop();
    await apply();
    session.input.setAudioEnabled(true);
  };

  let transferId: string | null = null;
  try {
    session.input.setAudioEnabled(false);
    await hold.start();
    await apply();
    const result = await d.dial(destination);
    transferId = result.transfer_id;
    if (result.status !== 'answered' || !result.participant_identity) {
      await restore();
      logger.info({ status: result.status }, 'warm transfer not answered');
      return { ok: false, message: result.message ?? 'The transfer did not go through.' };
    }
    human = result.participant_identity;
    phase = 'briefing';
    await apply();
    const text = await briefing(d.model, session.history, { logger });
    if (!humanLeft) await sayFixed(session, text, { allowInterruptions: false, addToChatCtx: false }).waitForPlayout();
    if (humanLeft || !room.remoteParticipants.has(human)) {
      await d.report(result.transfer_id!, 'abandoned').catch(() => {});
      await restore();
      return { ok: false, message: 'The colleague hung up before the caller was put through.' };
    }
    // The caller hung up during the briefing: the session is ending; the person is let go with the room.
    if (!room.remoteParticipants.has(caller.identity)) {
      await d.report(result.transfer_id!, 'abandoned').catch(() => {});
      await restore().catch(() => {});
      return { ok: false, message: 'The caller hung up.' };
    }
    phase = 'joined';
    await apply();
    unwire();
    await hold.stop();
    await d.report(result.transfer_id!, 'joined');
    logger.info({ transfer_id: result.transfer_id }, 'warm transfer joined');
    return { ok: true, transferId: result.transfer_id! };
  } catch (err) {
    logger.warn({ err: (err as Error).message }, 'warm transfer failed');
    if (transferId && (phase as TransferPhase) !== 'restored') await d.report(transferId, 'abandoned').catch(() => {});
    await restore().catch(() => {});
    return { ok: false, message: 'The transfer did not go through.' };
  }
}
