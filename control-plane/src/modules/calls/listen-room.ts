// The listen stream's seat in the call's room: the control plane joins as a hidden participant that can only
// subscribe (a server-minted listen token), and feeds each remote audio track into the mixer on its side. The
// caller's side is the web caller (`user-<call id>`) or the phone line (the SIP participant that is not a warm
// transfer's leg); every other voice (the agent, a person who took over, a warm transfer's destination) is the
// agent's side.
import type { AudioFrame, RemoteParticipant, RemoteTrack, RemoteTrackPublication } from '@livekit/rtc-node';
import { importRtcQuietly } from '../../../../shared/rtc-import.ts';
import { STREAM_FRAME_MS, STREAM_SAMPLE_RATE, type Side, type StereoMixer } from './listen-mixer.ts';
import { transferIdentity } from './transfers.ts';

let rtc: Promise<typeof import('@livekit/rtc-node')> | undefined;
const loadRtc = () => (rtc ??= importRtcQuietly(() => import('@livekit/rtc-node')));

/** rtc-node's ParticipantKind.SIP. */
const SIP_KIND = 3;

export function sideOf(p: { identity: string; kind?: number }, callId: string): Side {
  if (p.identity === `user-${callId}`) return 0;
  if (p.kind === SIP_KIND && !p.identity.startsWith(transferIdentity(''))) return 0;
  return 1;
}

export interface ListenSeat {
  /** Leaves the room; safe to call more than once. */
  leave(): Promise<void>;
}

export interface JoinOptions {
  url: string;
  token: string;
  callId: string;
  mixer: StereoMixer;
  /** The room went away (deleted at the call's end) or dropped us. */
  onGone: () => void;
  /** The stream ended while joining: stop waiting, and leave. */
  signal: AbortSignal;
}

/** Joins the room and starts feeding the mixer. Leaves again if the join fails. */
export async function joinAsListener(opts: JoinOptions): Promise<ListenSeat> {
  const { AudioStream, Room, RoomEvent, TrackKind } = await loadRtc();
  const room = new Room();
  const readers = new Map<string, ReadableStreamDefaultReader<AudioFrame>>();
  let left = false;

  const stopTrack = (sid: string) => {
    const reader = readers.get(sid);
    readers.delete(sid);
    opts.mixer.remove(sid);
    void reader?.cancel().catch(() => {});
  };
  room.on(RoomEvent.TrackSubscribed, (track: RemoteTrack, pub: RemoteTrackPublication, p: RemoteParticipant) => {
    if (left || track.kind !== TrackKind.KIND_AUDIO || !pub.sid || readers.has(pub.sid)) return;
    const sid = pub.sid;
    const stream = new AudioStream(track, { sampleRate: STREAM_SAMPLE_RATE, numChannels: 1, frameSizeMs: STREAM_FRAME_MS });
    const reader = stream.getReader();
    readers.set(sid, reader);
    opts.mixer.add(sid, sideOf({ identity: p.identity, kind: p.kind }, opts.callId));
    void (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done || !readers.has(sid)) return;
        opts.mixer.push(sid, value.data);
      }
    })().catch(() => stopTrack(sid));
  });
  room.on(RoomEvent.TrackUnsubscribed, (_t: RemoteTrack, pub: RemoteTrackPublication) => pub.sid && stopTrack(pub.sid));
  room.on(RoomEvent.Disconnected, () => {
    if (!left) opts.onGone();
  });

  // rtc-node's connect can wait for good when the room is deleted while it connects, and its disconnect when it
  // comes right after the connect (seen in listen-stream.test.ts: LiveKit had the participant leave, the SDK never
  // answered): both waits are bounded, and a connect that completes after we gave up is left at once.
  const connecting = room.connect(opts.url, opts.token, { autoSubscribe: true, dynacast: false });
  let settled = false;
  const disconnect = () =>
    connecting.then(
      () => room.disconnect(),
      () => {},
    );
  void connecting.then(
    () => (settled = true),
    () => (settled = true),
  );
  const leave = async () => {
    if (left) return;
    left = true;
    for (const sid of [...readers.keys()]) stopTrack(sid);
    // Still connecting: it leaves once connected, and nobody waits for that.
    if (!settled) return void disconnect().catch(() => {});
    await bounded(disconnect(), LEAVE_TIMEOUT_MS).catch(() => {});
  };
  try {
    await bounded(connecting, JOIN_TIMEOUT_MS, opts.signal);
  } catch (err) {
    await leave();
    throw err;
  }
  return { leave };
}

const JOIN_TIMEOUT_MS = 15_000;
const LEAVE_TIMEOUT_MS = 5_000;

/** `p`, or a rejection after `ms` or on `signal`. */
function bounded<T>(p: Promise<T>, ms: number, signal?: AbortSignal): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort = () => {};
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the room within ${ms} ms`)), ms);
    onAbort = () => reject(new Error('the stream ended while joining'));
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([p, late]).finally(() => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
  });
}
