// The live view's LiveKit side (call-live.ts): joining a call's room with a token the API gave (a listener's, which
// only subscribes, or a takeover's, which also publishes the browser's microphone), playing every remote audio
// track through its own <audio> element, and reading the words as they are spoken from the transcription text
// streams the agent publishes (`lk.transcription`, the same ones the web SDK reads).
import { Room, RoomEvent, Track, type RemoteParticipant, type RemoteTrack, type TextStreamReader } from 'livekit-client';
import { TRANSCRIPTION_SEGMENT_ATTRIBUTE, TRANSCRIPTION_TOPIC, isFinalSegment } from '../../sdk/protocol.ts';

/** agents-js names the track a caller's transcription is of (the agent publishes it for the caller). */
const TRANSCRIBED_TRACK_ATTRIBUTE = 'lk.transcribed_track_id';

export interface Words {
  /** The transcription segment: one line of speech, updated as its words arrive. */
  id: string;
  role: 'agent' | 'caller';
  text: string;
  final: boolean;
}

export interface JoinOptions {
  /** Where the remote tracks' <audio> elements go (they are removed again when the room is left). */
  audio: HTMLElement;
  /** Each update of a segment's words. */
  onWords: (w: Words) => void;
  /** The room went away without leave() (the call ended, the network dropped). */
  onLeft: () => void;
  /** Publish the browser's microphone (a takeover's token may). */
  microphone?: boolean;
}

export interface Joined {
  /** This page's participant identity in the room. */
  identity: string;
  leave(): Promise<void>;
}

/** Joins the call's room; resolves once connected (and, with `microphone`, once the microphone is published). */
export async function joinCallRoom(serverUrl: string, token: string, opts: JoinOptions): Promise<Joined> {
  const room = new Room({ adaptiveStream: false, dynacast: false });
  const players = new Map<string, HTMLMediaElement>();
  let leaving = false;
  room.on(RoomEvent.TrackSubscribed, (track: RemoteTrack, _pub, p: RemoteParticipant) => {
    if (track.kind !== Track.Kind.Audio) return;
    const el = track.attach();
    el.dataset.identity = p.identity;
    el.setAttribute('aria-label', p.isAgent ? 'The agent' : 'The caller');
    players.set(track.sid ?? p.identity, el);
    opts.audio.append(el);
  });
  room.on(RoomEvent.TrackUnsubscribed, (track: RemoteTrack) => {
    for (const el of track.detach()) el.remove();
    players.delete(track.sid ?? '');
  });
  room.on(RoomEvent.Disconnected, () => {
    for (const el of players.values()) el.remove();
    players.clear();
    if (!leaving) opts.onLeft();
  });
  room.registerTextStreamHandler(TRANSCRIPTION_TOPIC, (reader, from) => void readWords(room, reader, from.identity, opts.onWords));
  await room.connect(serverUrl, token, { autoSubscribe: true });
  // The page's click started this, so the browser lets it play.
  void room.startAudio().catch(() => undefined);
  if (opts.microphone) {
    try {
      await room.localParticipant.setMicrophoneEnabled(true);
    } catch (err) {
      leaving = true;
      await room.disconnect();
      throw err;
    }
  }
  return {
    identity: room.localParticipant.identity,
    async leave() {
      leaving = true;
      // Silent at once: the disconnect itself may take a moment.
      for (const el of players.values()) el.remove();
      players.clear();
      await room.disconnect();
    },
  };
}

/** Whose words these are: the participant whose track was transcribed, else the stream's sender. */
function roleOf(room: Room, identity: string, attrs: Record<string, string> | undefined): 'agent' | 'caller' {
  const trackId = attrs?.[TRANSCRIBED_TRACK_ATTRIBUTE];
  if (trackId) {
    for (const p of room.remoteParticipants.values()) if (p.trackPublications.has(trackId)) return p.isAgent ? 'agent' : 'caller';
  }
  return room.remoteParticipants.get(identity)?.isAgent ? 'agent' : 'caller';
}

async function readWords(room: Room, reader: TextStreamReader, identity: string, onWords: (w: Words) => void): Promise<void> {
  const attrs = reader.info.attributes;
  const role = roleOf(room, identity, attrs);
  const id = attrs?.[TRANSCRIPTION_SEGMENT_ATTRIBUTE] ?? reader.info.id;
  let text = '';
  try {
    for await (const chunk of reader) {
      // The agent's side is one stream of deltas per segment; the caller's, one stream per update of the segment.
      text += chunk;
      onWords({ id, role, text, final: false });
    }
  } catch {
    return; // the room closed mid-stream
  }
  if (text) onWords({ id, role, text, final: isFinalSegment(role === 'agent' ? 'agent' : 'user', attrs) });
}
