// A real WebRTC participant for the end-to-end tests, built on @livekit/rtc-node: it joins a room with a
// token, speaks PCM (synthesized speech) as a microphone track paced in real time, and records what the
// other participants say, noting when the first audio frame and the first speech arrived.
import { previousNodeEnv } from './quiet-rtc.ts';
import {
  AudioFrame,
  AudioSource,
  AudioStream,
  LocalAudioTrack,
  Room,
  RoomEvent,
  TrackKind,
  TrackPublishOptions,
  TrackSource,
  dispose,
  type RemoteParticipant,
  type RemoteTrack,
  type RemoteTrackPublication,
} from '@livekit/rtc-node';
import { AccessToken } from 'livekit-server-sdk';
import { encodeWav, readWav, resample, writeWav, type Pcm } from './speech.ts';

if (previousNodeEnv === undefined) delete process.env.NODE_ENV;
else process.env.NODE_ENV = previousNodeEnv;

/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes on one machine. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** RMS of int16 samples. */
export function rms(samples: Int16Array): number {
  if (samples.length === 0) return 0;
  let sum = 0;
  for (const s of samples) sum += s * s;
  return Math.sqrt(sum / samples.length);
}

export interface SpeakResult {
  /** When the first frame was handed to WebRTC. */
  startedAt: number;
  /** When the last frame had played out of the source's buffer. */
  endedAt: number;
  durationMs: number;
}

export interface RecorderOptions {
  /** Only this participant's audio (default: the first remote audio track of anyone). */
  from?: string;
  sampleRate?: number;
  /** A frame counts as speech above this RMS (int16 scale; decoded silence is near 0). */
  speechRms?: number;
}

/** Records one remote audio track as 16-bit mono PCM. */
export class Recorder {
  readonly sampleRate: number;
  /** Participant whose audio is recorded, once a track arrived. */
  identity: string | undefined;
  /** First decoded frame of any content (WebRTC sends frames of silence too). */
  firstFrameAt: number | undefined;
  /** First frame above the speech threshold. */
  firstSpeechAt: number | undefined;
  lastSpeechAt: number | undefined;
  private readonly chunks: Int16Array[] = [];
  private length = 0;
  private stream: AudioStream | null = null;
  private readonly speechRms: number;
  private readonly from: string | undefined;
  private readonly waiters = new Set<() => void>();
  private done: Promise<void> | null = null;
  private stopped = false;

  constructor(opts: RecorderOptions = {}) {
    this.sampleRate = opts.sampleRate ?? 16000;
    this.speechRms = opts.speechRms ?? 300;
    this.from = opts.from;
  }

  /** @internal Offered each subscribed remote track; takes the first that matches. */
  offer(track: RemoteTrack, participant: RemoteParticipant): void {
    if (this.stream || this.stopped || track.kind !== TrackKind.KIND_AUDIO) return;
    if (this.from && participant.identity !== this.from) return;
    this.identity = participant.identity;
    this.stream = new AudioStream(track, { sampleRate: this.sampleRate, numChannels: 1 });
    this.done = this.read(this.stream);
  }

  private async read(stream: AudioStream): Promise<void> {
    for await (const frame of stream) {
      if (this.stopped) break;
      const at = nowMs();
      const data = frame.data.slice(0, frame.samplesPerChannel * frame.channels);
      this.firstFrameAt ??= at;
      if (rms(data) > this.speechRms) {
        this.firstSpeechAt ??= at;
        this.lastSpeechAt = at;
      }
      this.chunks.push(data);
      this.length += data.length;
      for (const w of this.waiters) w();
    }
  }

  get durationMs(): number {
    return (this.length / this.sampleRate) * 1000;
  }

  /** Everything recorded so far. */
  pcm(): Pcm {
    const samples = new Int16Array(this.length);
    let at = 0;
    for (const c of this.chunks) {
      samples.set(c, at);
      at += c.length;
    }
    return { samples, sampleRate: this.sampleRate };
  }

  /** Clears what was recorded (the speech markers too), to record the next utterance on its own. */
  reset(): void {
    this.chunks.length = 0;
    this.length = 0;
    this.firstSpeechAt = undefined;
    this.lastSpeechAt = undefined;
  }

  wav(): Buffer {
    return encodeWav(this.pcm());
  }

  writeWav(file: string): void {
    writeWav(file, this.pcm());
  }

  /** Resolves when `cond` holds, re-checked on every frame and every 100 ms. */
  async until(cond: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, 100);
        this.waiters.add(wake);
      });
    }
  }

  /** Waits for speech, then for `silenceMs` without speech: one utterance of the other side. */
  async utterance({ silenceMs = 1200, timeoutMs = 30_000 } = {}): Promise<Pcm> {
    await this.until(() => this.firstSpeechAt !== undefined && this.lastSpeechAt !== undefined && nowMs() - this.lastSpeechAt >= silenceMs, timeoutMs, 'an utterance');
    return this.pcm();
  }

  async stop(): Promise<Pcm> {
    this.stopped = true;
    await this.stream?.cancel().catch(() => {});
    await this.done?.catch(() => {});
    return this.pcm();
  }
}

/** A token to join `room` as `identity`, publishing and subscribing, signed with the stack's key. */
export async function roomToken(keys: { apiKey: string; apiSecret: string }, room: string, identity: string, opts: { ttl?: string } = {}): Promise<string> {
  const at = new AccessToken(keys.apiKey, keys.apiSecret, { identity, ...(opts.ttl ? { ttl: opts.ttl } : {}) });
  at.addGrant({ roomJoin: true, room, canPublish: true, canSubscribe: true });
  return at.toJwt();
}

export interface JoinOptions {
  autoSubscribe?: boolean;
}

export class RtcClient {
  readonly room: Room;
  private source: AudioSource | null = null;
  private track: LocalAudioTrack | null = null;
  private readonly recorders = new Set<Recorder>();

  private constructor(room: Room) {
    this.room = room;
    room.on(RoomEvent.TrackSubscribed, (track: RemoteTrack, _pub: RemoteTrackPublication, participant: RemoteParticipant) => {
      for (const r of this.recorders) r.offer(track, participant);
    });
  }

  /** Joins the room the token grants; resolves once connected. */
  static async join(url: string, token: string, opts: JoinOptions = {}): Promise<RtcClient> {
    const room = new Room();
    const client = new RtcClient(room);
    await room.connect(url, token, { autoSubscribe: opts.autoSubscribe ?? true, dynacast: false });
    return client;
  }

  get identity(): string {
    return this.room.localParticipant?.identity ?? '';
  }

  /** Publishes a microphone track (once) at `sampleRate`; `speak` feeds it. */
  async publishMicrophone(sampleRate = 48000): Promise<void> {
    if (this.source) return;
    // A short queue, so captureFrame paces the feed at real time instead of buffering a whole utterance.
    this.source = new AudioSource(sampleRate, 1, 100);
    this.track = LocalAudioTrack.createAudioTrack('microphone', this.source);
    const opts = new TrackPublishOptions();
    opts.source = TrackSource.SOURCE_MICROPHONE;
    await this.room.localParticipant!.publishTrack(this.track, opts);
  }

  /**
   * Speaks `pcm` into the microphone track in 10 ms frames, in real time, then `trailingSilenceMs` of
   * silence (voice activity detectors need it to see the end of speech).
   */
  async speak(pcm: Pcm, { trailingSilenceMs = 0 } = {}): Promise<SpeakResult> {
    await this.publishMicrophone();
    const source = this.source!;
    const audio = resample(pcm, source.sampleRate);
    const step = source.sampleRate / 100;
    let startedAt: number | undefined;
    const total = audio.samples.length + Math.round((trailingSilenceMs / 1000) * source.sampleRate);
    for (let at = 0; at < total; at += step) {
      const frame = new Int16Array(step);
      if (at < audio.samples.length) frame.set(audio.samples.subarray(at, Math.min(at + step, audio.samples.length)));
      await source.captureFrame(new AudioFrame(frame, source.sampleRate, 1, step));
      startedAt ??= nowMs();
    }
    await source.waitForPlayout();
    const endedAt = nowMs();
    return { startedAt: startedAt ?? endedAt, endedAt, durationMs: (audio.samples.length / source.sampleRate) * 1000 };
  }

  /**
   * Captures one frame of microphone audio at the track's rate (48 kHz unless published otherwise), paced by the
   * source's short queue as speak() is; resolves with the ms of audio still queued ahead of it (its playout delay).
   */
  async sendFrame(samples: Int16Array): Promise<number> {
    await this.publishMicrophone();
    const source = this.source!;
    await source.captureFrame(new AudioFrame(samples, source.sampleRate, 1, samples.length));
    return source.queuedDuration;
  }

  /** Speaks a WAV file (any rate, mono or stereo). */
  async speakFile(file: string, opts: { trailingSilenceMs?: number } = {}): Promise<SpeakResult> {
    return this.speak(readWav(file), opts);
  }

  /** Starts recording a remote participant's audio (the track may arrive later). */
  record(opts: RecorderOptions = {}): Recorder {
    const r = new Recorder(opts);
    this.recorders.add(r);
    for (const p of this.room.remoteParticipants.values()) {
      for (const pub of p.trackPublications.values()) {
        if (pub.track) r.offer(pub.track, p);
      }
    }
    return r;
  }

  /** Waits until a remote participant (of that identity, or any) is in the room. */
  async waitForParticipant(identity?: string, timeoutMs = 15_000): Promise<RemoteParticipant> {
    const find = () => [...this.room.remoteParticipants.values()].find((p) => !identity || p.identity === identity);
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const p = find();
      if (p) return p;
      if (Date.now() > deadline) throw new Error(`no participant ${identity ?? ''} joined within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async leave(): Promise<void> {
    for (const r of this.recorders) await r.stop();
    this.recorders.clear();
    await this.track?.close(false).catch(() => {});
    await this.source?.close().catch(() => {});
    await this.room.disconnect();
  }
}

/** Releases the native WebRTC runtime; call once at the end of a test file that used RtcClient. */
export async function disposeRtc(): Promise<void> {
  await dispose();
}
