// A worker-less message on an inbound call no agent took (unanswered.ts): the control plane joins the call's
// room as a plain participant, which makes the SIP bridge answer (livekit-sip v1.8 rings until someone in the
// room subscribes to the caller's audio), plays the number's voicemail_message in the platform's local voice
// (festival, the offline profile's voice), and leaves. No agent worker, model or provider key is involved, so
// it works when no worker runs at all.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from '../../../../shared/logger.ts';
import { WavStreamParser } from '../../../../shared/wav-stream.ts';
import { importRtcQuietly } from '../../../../shared/rtc-import.ts';

export interface Pcm {
  samples: Int16Array;
  sampleRate: number;
}

/** festival's HTS voice that setup installs (the same voice as the local TTS's default). */
const VOICE = 'cmu_us_slt_arctic_hts';
const FRAME_MS = 20;

/** The message as mono 16-bit PCM, from festival's text2wave (to a file: on a pipe it cannot write the sizes). */
export async function synthesizeMessage(text: string, opts: { text2wave?: string; timeoutMs?: number } = {}): Promise<Pcm> {
  const dir = await mkdtemp(path.join(tmpdir(), 'vap-announce-'));
  try {
    const out = path.join(dir, 'message.wav');
    await new Promise<void>((resolve, reject) => {
      const child = spawn(opts.text2wave ?? 'text2wave', ['-eval', `(voice_${VOICE})`, '-o', out], { stdio: ['pipe', 'ignore', 'pipe'] });
      let stderr = '';
      const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 20_000);
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
      child.on('close', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`text2wave failed (exit ${code}): ${stderr.trim().slice(0, 300)}`));
      });
      child.stdin.end(text);
    });
    const parser = new WavStreamParser();
    const pcm = Buffer.concat(parser.push(await readFile(out)));
    const format = parser.format;
    if (!format || pcm.length === 0) throw new Error('text2wave wrote no audio');
    const all = new Int16Array(pcm.buffer, pcm.byteOffset, Math.floor(pcm.length / 2));
    const ch = format.numChannels;
    // Mono: the first channel of each frame.
    const samples = ch === 1 ? Int16Array.from(all) : Int16Array.from({ length: Math.floor(all.length / ch) }, (_, i) => all[i * ch]!);
    return { samples, sampleRate: format.sampleRate };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** rtc-node, loaded once, quiet (shared/rtc-import.ts). */
let rtc: Promise<typeof import('@livekit/rtc-node')> | undefined;
function loadRtc(): Promise<typeof import('@livekit/rtc-node')> {
  rtc ??= importRtcQuietly(() => import('@livekit/rtc-node'));
  return rtc;
}

export interface AnnounceOptions {
  url: string;
  token: string;
  pcm: Pcm;
  logger: Logger;
  /** Longest wait for the bridge to answer the caller and take our audio. */
  answerTimeoutMs?: number;
}

/**
 * Joins the room, waits until the caller is answered and the bridge takes our track, plays the PCM in real
 * time and leaves. Resolves with whether the message was played (false: the caller was gone, or no answer).
 */
export async function announce(opts: AnnounceOptions): Promise<boolean> {
  const { AudioFrame, AudioSource, LocalAudioTrack, ParticipantKind, Room, RoomEvent, TrackPublishOptions, TrackSource } = await loadRtc();
  const room = new Room();
  const source = new AudioSource(opts.pcm.sampleRate, 1);
  try {
    await room.connect(opts.url, opts.token, { autoSubscribe: true, dynacast: false });
    const track = LocalAudioTrack.createAudioTrack('announcement', source);
    const ready = new Promise<boolean>((resolve) => {
      let subscribed = false;
      const timer = setTimeout(() => done(false), opts.answerTimeoutMs ?? 10_000);
      const answered = () =>
        [...room.remoteParticipants.values()].some((p) => p.kind === ParticipantKind.SIP && (p.attributes?.['sip.callStatus'] ?? 'active') === 'active');
      const check = () => {
        if (subscribed && answered()) done(true);
      };
      const onSubscribed = () => {
        subscribed = true;
        check();
      };
      const gone = () => done(false);
      function done(ok: boolean) {
        clearTimeout(timer);
        room.off(RoomEvent.LocalTrackSubscribed, onSubscribed);
        room.off(RoomEvent.ParticipantAttributesChanged, check);
        room.off(RoomEvent.ParticipantDisconnected, gone);
        room.off(RoomEvent.Disconnected, gone);
        resolve(ok);
      }
      room.on(RoomEvent.LocalTrackSubscribed, onSubscribed);
      room.on(RoomEvent.ParticipantAttributesChanged, check);
      room.on(RoomEvent.ParticipantDisconnected, gone);
      room.on(RoomEvent.Disconnected, gone);
    });
    await room.localParticipant!.publishTrack(track, new TrackPublishOptions({ source: TrackSource.SOURCE_MICROPHONE }));
    if (!(await ready)) {
      opts.logger.info('announcement not played: the caller was not answered or left');
      return false;
    }
    // The caller's first RTP after the 200 OK: a short lead-in of silence keeps the first word whole.
    const { samples, sampleRate } = opts.pcm;
    const frame = Math.round((sampleRate * FRAME_MS) / 1000);
    const lead = new Int16Array(frame);
    for (let i = 0; i < 15; i++) await source.captureFrame(new AudioFrame(lead, sampleRate, 1, frame));
    for (let at = 0; at < samples.length; at += frame) {
      const chunk = new Int16Array(frame);
      chunk.set(samples.subarray(at, Math.min(at + frame, samples.length)));
      await source.captureFrame(new AudioFrame(chunk, sampleRate, 1, frame));
    }
    await source.waitForPlayout();
    return true;
  } finally {
    await source.close().catch(() => {});
    await room.disconnect().catch(() => {});
  }
}
