// A standby agent publishes its audio track while it waits, so the caller subscribes to it as they join, and the
// greeting plays as soon as it is ready instead of after a publication and a subscription made on the call's
// path (docs/decisions.md, "Standby agents"). agents-js's ParticipantAudioOutput makes and publishes its own track
// when the session starts; the patch hands it the track published ahead, when the room and the audio format are
// the ones it would publish (else it publishes its own, as before, and the early track is taken down).
//
// ParticipantAudioOutput's publishTrack is private: like prompt-pause.ts, the patch is pinned to the agents-js
// release it was checked against, and any other version fails loudly (assertEarlyTrackTarget at the worker's start).
import { voice } from '@livekit/agents';
import { type AudioFrame, AudioSource, LocalAudioTrack, type LocalTrackPublication, type Room, TrackPublishOptions, TrackSource } from '@livekit/rtc-node';
import { PinnedReleaseError, installedAgentsVersion } from './agents-release.ts';

/** The @livekit/agents release whose ParticipantAudioOutput this patch was checked against. */
export const EARLY_TRACK_AGENTS_VERSION = '1.9.0';

export class EarlyTrackVersionError extends PinnedReleaseError {
  constructor(installed: string) {
    const check =
      'ParticipantAudioOutput still publishes its track from its own audioSource in publishTrack(signal), then resolves startedFuture once subscribed, and captureFrame waits for startedFuture';
    super('early-track.ts', EARLY_TRACK_AGENTS_VERSION, installed, check, 'EARLY_TRACK_AGENTS_VERSION');
  }
}

export function assertEarlyTrackTarget(version = installedAgentsVersion()): void {
  if (version !== EARLY_TRACK_AGENTS_VERSION) throw new EarlyTrackVersionError(version);
}

/** agents-js's room output defaults (room_io.ts): what a web call's session publishes. */
export const ROOM_OUTPUT_DEFAULTS = { sampleRate: 24000, numChannels: 1, queueSizeMs: 200 } as const;

/** The private state of agents-js 1.9.0's ParticipantAudioOutput that its publishTrack uses. */
interface OutputInternals {
  room: Room;
  options: { sampleRate: number; numChannels: number; queueSizeMs?: number };
  audioSource: AudioSource;
  publication?: LocalTrackPublication;
  startedFuture: { done: boolean; resolve(): void };
  /** Bumped by clearBuffer: a frame that waited across an interruption is dropped, as agents-js drops it. */
  interruptionGeneration: number;
}

interface EarlyTrack {
  room: Room;
  source: AudioSource;
  publication: LocalTrackPublication;
  format: { sampleRate: number; numChannels: number; queueSizeMs: number };
  /** Resolves when someone in the room (the caller) has subscribed to it. */
  subscribed: Promise<void>;
}

/** Outputs that took an early track (their publishTrack then has nothing left to publish). */
const adopted = new WeakSet<OutputInternals>();

let early: EarlyTrack | null = null;
let installed = false;

/** Publishes the agent's audio track now, in the format the session's output will use, for the session to take. */
export async function publishEarlyTrack(room: Room, format: { sampleRate: number; numChannels: number; queueSizeMs: number } = ROOM_OUTPUT_DEFAULTS): Promise<void> {
  installEarlyTrack();
  const source = new AudioSource(format.sampleRate, format.numChannels, format.queueSizeMs);
  // The name agents-js gives its own track.
  const track = LocalAudioTrack.createAudioTrack('roomio_audio', source);
  const publication = await room.localParticipant!.publishTrack(track, new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
  const subscribed = publication.waitForSubscription();
  subscribed.catch(() => {});
  early = { room, source, publication, format: { ...format }, subscribed };
}

/** Takes down the early track (a session that publishes its own, in another format). */
export async function dropEarlyTrack(): Promise<void> {
  const e = early;
  early = null;
  if (!e) return;
  if (e.publication.sid) await e.room.localParticipant?.unpublishTrack(e.publication.sid).catch(() => {});
  await e.source.close().catch(() => {});
}


/** The early track can serve this output: same room, same audio format. */
function fitsOutput(e: EarlyTrack | null, out: OutputInternals): e is EarlyTrack {
  return (
    e !== null &&
    e.room === out.room &&
    e.format.sampleRate === out.options.sampleRate &&
    e.format.numChannels === out.options.numChannels &&
    e.format.queueSizeMs === (out.options.queueSizeMs ?? ROOM_OUTPUT_DEFAULTS.queueSizeMs)
  );
}

/** The output takes the early track and its source in place of its own. */
function adopt(out: OutputInternals, e: EarlyTrack): void {
  early = null;
  adopted.add(out);
  const own = out.audioSource;
  out.audioSource = e.source;
  void own.close().catch(() => {});
  out.publication = e.publication;
}

/** Installs the patch (once per process). */
export function installEarlyTrack(): void {
  if (installed) return;
  assertEarlyTrackTarget();
  installed = true;
  const proto = voice.ParticipantAudioOutput.prototype as unknown as {
    publishTrack: (this: OutputInternals, signal: AbortSignal) => Promise<void>;
    captureFrame: (this: OutputInternals, frame: AudioFrame) => Promise<void>;
  };
  const publishTrack = proto.publishTrack;
  const captureFrame = proto.captureFrame;
  proto.publishTrack = async function (this: OutputInternals, signal: AbortSignal) {
    // Taken by the first frame already (below): published and subscribed.
    if (adopted.has(this)) {
      if (!this.startedFuture.done) this.startedFuture.resolve();
      return;
    }
    const e = early;
    if (!fitsOutput(e, this)) {
      // This session publishes its own track: the early one comes down, so the caller hears one track only.
      if (e) await dropEarlyTrack();
      return publishTrack.call(this, signal);
    }
    adopt(this, e);
    if (signal.aborted) return;
    await e.subscribed;
    if (!this.startedFuture.done) this.startedFuture.resolve();
  };
  // agents-js starts the output (publishTrack) only once the session has linked the caller's participant, which
  // LiveKit reports to the agent tens of milliseconds after the caller has subscribed to the early track: the
  // caller can hear from the subscription on, so the first frame plays from then.
  proto.captureFrame = async function (this: OutputInternals, frame: AudioFrame) {
    const e = early;
    if (!this.startedFuture.done && fitsOutput(e, this)) {
      const generation = this.interruptionGeneration;
      adopt(this, e);
      await e.subscribed;
      if (!this.startedFuture.done) this.startedFuture.resolve();
      if (generation !== this.interruptionGeneration) return;
    }
    return captureFrame.call(this, frame);
  };
}
