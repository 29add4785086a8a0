// bench:turns: the agent's audio as the caller hears it (split from rig.ts, which re-exports it).
import { AudioStream, RoomEvent, TrackKind, type RemoteTrack } from '@livekit/rtc-node';
import { nowMs, rms, type RtcClient } from '../../test/support/rtc-client.ts';
import { SPEECH_RMS } from './corpus.ts';

/** A gap in the agent's audio this long means it stopped (espeak's pauses between words are shorter). */
export const STOP_GAP_MS = 400;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The agent's audio as the caller hears it: when each 10 ms window above the speech threshold arrived, and what
 * the trials read from that (a stop, a gap, the reply's length). Fed by the web caller (AgentEar) or the SIP
 * caller's RTP (sip-caller.ts).
 */
export class Ear {
  readonly speech: number[] = [];

  /** Records a stretch of the agent's audio at `rate` that arrived at `at` (wall-clock ms, as its last sample did). */
  hear(data: Int16Array, rate: number, at: number): void {
    const step = Math.round(rate / 100);
    const windows = Math.max(1, Math.floor(data.length / step));
    for (let w = 0; w < windows; w++) {
      if (rms(data.subarray(w * step, (w + 1) * step)) > SPEECH_RMS) this.speech.push(at - (windows - 1 - w) * 10);
    }
  }

  /** First speech at or after `t`. */
  firstAfter(t: number): number | undefined {
    return this.speech.find((s) => s >= t);
  }

  /** Milliseconds of the agent's audio that reached the client between `from` and `to` (10 ms frames). */
  speechMs(from: number, to: number): number {
    return this.speech.filter((s) => s >= from && s < to).length * 10;
  }

  /** The longest stretch between `from` and `to` with none of the agent's audio. */
  longestGap(from: number, to: number): number {
    let last = from;
    let longest = 0;
    for (const s of this.speech) {
      if (s < from) continue;
      if (s >= to) break;
      longest = Math.max(longest, s - last);
      last = s;
    }
    return Math.max(longest, Math.min(to, nowMs()) - last);
  }

  lastSpeech(): number {
    return this.speech.at(-1) ?? 0;
  }

  /** The end of the first stretch of speech after `t` followed by a gap of `gapMs` (undefined: still talking). */
  stopAfter(t: number, gapMs = STOP_GAP_MS, now = nowMs()): number | undefined {
    let i = this.speech.findIndex((s) => s >= t);
    if (i < 0) return undefined;
    for (; i < this.speech.length; i++) {
      const next = this.speech[i + 1];
      if (next === undefined) return now - this.speech[i]! >= gapMs ? this.speech[i]! + 10 : undefined;
      if (next - this.speech[i]! >= gapMs) return this.speech[i]! + 10;
    }
    return undefined;
  }

  async until(cond: () => boolean, timeoutMs: number): Promise<boolean> {
    const end = Date.now() + timeoutMs;
    while (!cond()) {
      if (Date.now() > end) return false;
      await sleep(20);
    }
    return true;
  }

  /** Waits until the agent has been quiet for `quietMs` (or the timeout). */
  async quiet(quietMs: number, timeoutMs = 30_000): Promise<boolean> {
    return this.until(() => nowMs() - this.lastSpeech() >= quietMs, timeoutMs);
  }
}

/** The agent's audio at a web caller (rtc-node), at 16 kHz. */
export class AgentEar extends Ear {
  #stream: AudioStream | null = null;
  #done: Promise<void> | null = null;
  #tap: { stream: AudioStream; done: Promise<void> } | null = null;
  #stopped = false;

  /** Listens to the agent; `tap` also gets its audio as it arrives, at 48 kHz (a dirty line's echo). */
  attach(client: RtcClient, tap?: (samples: Int16Array) => void): void {
    const offer = (track: RemoteTrack) => {
      if (this.#stream || track.kind !== TrackKind.KIND_AUDIO) return;
      this.#stream = new AudioStream(track, { sampleRate: 16000, numChannels: 1 });
      this.#done = this.#read(this.#stream);
      if (tap) {
        const stream = new AudioStream(track, { sampleRate: 48000, numChannels: 1 });
        this.#tap = { stream, done: this.#forward(stream, tap) };
      }
    };
    client.room.on(RoomEvent.TrackSubscribed, (track: RemoteTrack) => offer(track));
    for (const p of client.room.remoteParticipants.values()) for (const pub of p.trackPublications.values()) if (pub.track) offer(pub.track);
  }

  async #read(stream: AudioStream): Promise<void> {
    for await (const frame of stream) {
      if (this.#stopped) break;
      this.hear(frame.data.subarray(0, frame.samplesPerChannel), 16000, nowMs());
    }
  }

  async #forward(stream: AudioStream, tap: (samples: Int16Array) => void): Promise<void> {
    for await (const frame of stream) {
      if (this.#stopped) break;
      tap(frame.data.subarray(0, frame.samplesPerChannel));
    }
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    await this.#stream?.cancel().catch(() => {});
    await this.#done?.catch(() => {});
    await this.#tap?.stream.cancel().catch(() => {});
    await this.#tap?.done.catch(() => {});
  }
}
