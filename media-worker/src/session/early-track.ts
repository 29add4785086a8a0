// A standby agent publishes its audio track while it waits, so the caller subscribes to it as they join, and the
// greeting plays as soon as it is ready instead of after a publication and a subscription made on the call's
// path (docs/decisions/030-standby-agents.md). agents-js's ParticipantAudioOutput makes and publishes its own track
// when the session starts; the patch hands it the track published ahead, when the room and the audio format are
// the ones it would publish (else it publishes its own, as before, and the early track is taken down).
//
// ParticipantAudioOutput's publishTrack is private: like prompt-pause.ts, the patch is pinned to the agents-js
// release it was checked against, and any other version fails loudly (assertEarlyTrackTarget at the worker's start).
import { voice, waitForAbort } from '@livekit/agents';
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
  format: { sampleRate: number; numChannels: number; queueSizeMs: number };
  /** The publication: the early track can be taken while it is still being published. */
  published: Promise<LocalTrackPublication>;
  /** Resolves when someone in the room (the caller) has subscribed to it. */
  subscribed: Promise<void>;
}

/**
 * Outputs that took an early track, each with the promise of its track being heard: published and subscribed, or,
 * when the early publication failed, the output's own publication of the same source.
 */
const adopted = new WeakMap<OutputInternals, Promise<void>>();

let early: EarlyTrack | null = null;
let installed = false;

/**
 * Publishes the agent's audio track now, in the format the session's output will use, for the session to take.
 * The track can be taken as soon as this is called (a session that starts while it is published takes it then);
 * the promise settles with the publication.
 */
export async function publishEarlyTrack(room: Room, format: { sampleRate: number; numChannels: number; queueSizeMs: number } = ROOM_OUTPUT_DEFAULTS): Promise<void> {
  installEarlyTrack();
  const source = new AudioSource(format.sampleRate, format.numChannels, format.queueSizeMs);
  // The name agents-js gives its own track.
  const track = LocalAudioTrack.createAudioTrack('roomio_audio', source);
  const published = room.localParticipant!.publishTrack(track, new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
  const subscribed = published.then((p) => p.waitForSubscription());
  subscribed.catch(() => {});
  const e: EarlyTrack = { room, source, format: { ...format }, published, subscribed };
  early = e;
  try {
    await published;
  } catch (err) {
    // Not taken yet: nothing is left of it. Taken: the output publishes the source itself (adopt).
    if (early === e) {
      early = null;
      await source.close().catch(() => {});
    }
    throw err;
  }
}

/** Takes down the early track (a session that publishes its own, in another format). */
export async function dropEarlyTrack(): Promise<void> {
  const e = early;
  early = null;
  if (!e) return;
  const publication = await e.published.catch(() => null);
  if (publication?.sid) await e.room.localParticipant?.unpublishTrack(publication.sid).catch(() => {});
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

/**
 * The output takes the early track and its source in place of its own; resolves once the caller can hear it. If
 * the early publication fails, the output publishes the same source as agents-js would have (`publishOwn`).
 */
function adopt(out: OutputInternals, e: EarlyTrack, publishOwn: (out: OutputInternals) => Promise<void>): Promise<void> {
  early = null;
  const own = out.audioSource;
  out.audioSource = e.source;
  void own.close().catch(() => {});
  const heard = e.published.then(
    (publication) => {
      out.publication = publication;
      return e.subscribed;
    },
    () => publishOwn(out),
  );
  adopted.set(out, heard);
  return heard;
}

/**
 * Waits for the track to be heard, or for the output's start to be cancelled; true when heard. The start waits for
 * the caller's subscription, which never comes when the call ends first (a stop as the agent joins deletes the
 * room): agents-js cancels the start when its session closes (RoomIO.close, initTask.cancelAndWait), and a wait
 * that ignored the cancel held that close until agents-js's 60 s timeout, and the job process with it.
 */
async function untilHeardOrAborted(heard: Promise<void>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  // Not heard because it failed: the failure is the start's, as before. A failure after the cancel has no one left
  // to tell; before it, the race passes it on.
  const isHeard = heard.then(() => true as const);
  isHeard.catch(() => {});
  return Promise.race([isHeard, waitForAbort(signal).then(() => false as const)]);
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
  // Never aborted: a fallback publication is the output's own start, which agents-js does not abort either.
  const publishOwn = (out: OutputInternals) => publishTrack.call(out, new AbortController().signal);
  const started = (out: OutputInternals) => {
    if (!out.startedFuture.done) out.startedFuture.resolve();
  };
  proto.publishTrack = async function (this: OutputInternals, signal: AbortSignal) {
    // Taken by the first frame already (below).
    const heard = adopted.get(this);
    if (heard) {
      if (await untilHeardOrAborted(heard, signal)) started(this);
      return;
    }
    const e = early;
    if (!fitsOutput(e, this)) {
      // This session publishes its own track: the early one comes down, so the caller hears one track only.
      if (e) await dropEarlyTrack();
      await untilHeardOrAborted(publishTrack.call(this, signal), signal);
      return;
    }
    const taken = adopt(this, e, publishOwn);
    if (signal.aborted) return;
    if (await untilHeardOrAborted(taken, signal)) started(this);
  };
  // agents-js starts the output (publishTrack) only once the session has linked the caller's participant, which
  // LiveKit reports to the agent tens of milliseconds after the caller has subscribed to the early track: the
  // caller can hear from the subscription on, so the first frame plays from then.
  proto.captureFrame = async function (this: OutputInternals, frame: AudioFrame) {
    const e = early;
    const heard = adopted.get(this) ?? (!this.startedFuture.done && fitsOutput(e, this) ? adopt(this, e, publishOwn) : null);
    if (heard && !this.startedFuture.done) {
      const generation = this.interruptionGeneration;
      await heard;
      started(this);
      if (generation !== this.interruptionGeneration) return;
    }
    return captureFrame.call(this, frame);
  };
}
