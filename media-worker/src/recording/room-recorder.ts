// Records a call as heard in its room: the remote participants' audio (the caller) and the agent's own
// published tracks (its voice, and background sound if any), mixed into one mono WAV in a temporary file,
// uploaded to the session config's signed URL when the call ends. It only listens: separate AudioStreams on
// the tracks, so the session's audio loop is never wrapped, awaited or slowed. Audio the agent cleared on an
// interruption was never sent, so it is not in the recording either.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { AudioStream, RoomEvent, TrackKind, type LocalTrackPublication, type Room, type Track } from '@livekit/rtc-node';
import type { Logger } from '../../../shared/logger.ts';
import { RecordingMixer } from './mixer.ts';
import { uploadRecording } from './upload.ts';

/** Web calls carry wideband speech; phone audio is 8 kHz at best, so 16 kHz keeps all of it. */
export const recordingSampleRate = (callType: string) => (callType === 'web' ? 24000 : 16000);

// The control plane refuses uploads over 512 MiB.
const MAX_BYTES = 500 * 1024 * 1024;
const FLUSH_INTERVAL_MS = 1000;

export interface RoomRecorderOptions {
  room: Room;
  callId: string;
  callType: string;
  uploadUrl: string;
  /** The call's capability, sent as `Authorization: Bearer` with the upload. */
  capability?: string;
  /** The call's logger, bound to its call id. */
  logger: Logger;
  sampleRate?: number;
  upload?: { attempts?: number; baseDelayMs?: number };
}

export class RoomRecorder {
  readonly mixer: RecordingMixer;
  #opts: RoomRecorderOptions;
  #dir: string;
  #streams = new Map<string, AudioStream>();
  #pumps: Promise<void>[] = [];
  #timer: NodeJS.Timeout;
  #stopped = false;
  #finished: Promise<boolean> | null = null;
  #detach: () => void;

  private constructor(opts: RoomRecorderOptions, dir: string) {
    this.#opts = opts;
    this.#dir = dir;
    const sampleRate = opts.sampleRate ?? recordingSampleRate(opts.callType);
    this.mixer = new RecordingMixer({ path: path.join(dir, 'recording.wav'), sampleRate, maxBytes: MAX_BYTES });
    this.#timer = setInterval(() => this.mixer.flush(), FLUSH_INTERVAL_MS);
    this.#timer.unref();

    const { room } = opts;
    const onSubscribed = (track: Track) => this.#listen(track);
    const onLocal = (pub: LocalTrackPublication) => pub.track && this.#listen(pub.track);
    room.on(RoomEvent.TrackSubscribed, onSubscribed);
    room.on(RoomEvent.LocalTrackPublished, onLocal);
    this.#detach = () => {
      room.off(RoomEvent.TrackSubscribed, onSubscribed);
      room.off(RoomEvent.LocalTrackPublished, onLocal);
    };
    for (const p of room.remoteParticipants.values()) for (const pub of p.trackPublications.values()) if (pub.track) this.#listen(pub.track);
    for (const pub of room.localParticipant?.trackPublications.values() ?? []) if (pub.track) this.#listen(pub.track);
  }

  static async start(opts: RoomRecorderOptions): Promise<RoomRecorder> {
    const dir = await mkdtemp(path.join(tmpdir(), 'vap-recording-'));
    return new RoomRecorder(opts, dir);
  }

  #listen(track: Track): void {
    if (this.#stopped || track.kind !== TrackKind.KIND_AUDIO || !track.sid || this.#streams.has(track.sid)) return;
    const id = track.sid;
    const stream = new AudioStream(track, { sampleRate: this.mixer.sampleRate, numChannels: 1 });
    this.#streams.set(id, stream);
    this.#pumps.push(
      (async () => {
        for await (const frame of stream) {
          if (this.#stopped) break;
          this.mixer.push(id, frame);
        }
      })().catch((err: unknown) => this.#opts.logger.warn({ err: (err as Error).message, track: id }, 'recording track stream failed')),
    );
  }

  /** Stops listening (the call is over). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#detach();
    for (const s of this.#streams.values()) await s.cancel().catch(() => {});
    await Promise.race([Promise.allSettled(this.#pumps), new Promise((r) => setTimeout(r, 1000).unref())]);
  }

  /**
   * Stops, closes the file and uploads it (with retries), then removes the temporary folder. Never throws:
   * a recording that could not be made or delivered is logged, and the call's other reports go on.
   */
  finish(): Promise<boolean> {
    // Once: the worker may reach this from both the end of the call and its shutdown callback.
    this.#finished ??= this.#finish();
    return this.#finished;
  }

  async #finish(): Promise<boolean> {
    const log = this.#opts.logger;
    try {
      await this.stop();
      const file = await this.mixer.close();
      if (file.truncated) log.warn('recording reached its size cap and was cut short');
      if (this.mixer.droppedSamples > 0) log.warn({ samples: this.mixer.droppedSamples }, 'recording dropped late audio');
      const started = Date.now();
      const up = await uploadRecording({
        url: this.#opts.uploadUrl,
        ...(this.#opts.capability ? { authorization: `Bearer ${this.#opts.capability}` } : {}),
        path: file.path,
        contentType: 'audio/wav',
        ...this.#opts.upload,
        onRetry: (info) => log.warn(info, 'recording upload failed, retrying'),
      });
      log.info(
        { call_id: this.#opts.callId, bytes: up.bytes, duration_seconds: Math.round(file.durationSeconds * 10) / 10, attempts: up.attempts, upload_ms: Date.now() - started },
        'recording uploaded',
      );
      return true;
    } catch (err) {
      log.error({ err: (err as Error).message }, 'recording not delivered');
      return false;
    } finally {
      await rm(this.#dir, { recursive: true, force: true }).catch(() => {});
    }
  }
}
