// The media side of a SIP test peer (SipPhone, SipCallee): one UDP socket of this process that is the `m=audio`
// of the peer's SDP. It records the G.711 µ-law audio the bridge sends, decodes the RFC 4733 telephone events
// (keypad presses) it receives, and sends silence, speech, a live stream or keypad presses back, paced in real
// time as a phone does.
import dgram from 'node:dgram';
import type { Pcm } from './speech.ts';
import { ulawDecode, ulawEncode } from './g711.ts';

export interface RtpAddress {
  host: string;
  port: number;
}

const DTMF_EVENTS = '0123456789*#ABCD';
const FRAME = 160; // 20 ms at 8 kHz
const SILENCE = () => new Uint8Array(FRAME).fill(0xff);

export class RtpLeg {
  readonly received: number[] = [];
  /** Keys received as RFC 4733 telephone events, in order (one per event, however many packets carry it). */
  readonly keys: string[] = [];
  /** When the first non-silent audio arrived (performance.now()). */
  firstAudioAt: number | null = null;
  /** Gets each packet's decoded audio (8 kHz) as it arrives. */
  onAudio: ((samples: Int16Array) => void) | null = null;
  /** With VAP_DEBUG_RTP: one line per packet received (payload type, sequence, timestamp, SSRC, size, port). */
  readonly packets: string[] = [];
  /** Where to send; null sends to `remote()` or, failing that, to where the first packet came from. */
  peer: RtpAddress | null = null;
  private learned: RtpAddress | null = null;
  private lastEventTs: number | null = null;
  private keyWaiters: ((key: string) => void)[] = [];
  private seq = Math.floor(Math.random() * 1000);
  private ts = Math.floor(Math.random() * 100000);
  private readonly ssrc = Math.floor(Math.random() * 0xffffffff);
  private silence: NodeJS.Timeout | null = null;
  private sending = false;
  private closed = false;

  private readonly socket: dgram.Socket;
  private readonly remote: () => RtpAddress | null;

  private constructor(socket: dgram.Socket, remote: () => RtpAddress | null) {
    this.socket = socket;
    this.remote = remote;
    socket.on('message', (msg, rinfo) => this.onPacket(msg, rinfo));
  }

  /** Binds a socket on 127.0.0.1. `remote` says where to send when no `peer` is set (e.g. from the INVITE's SDP). */
  static async open(remote: () => RtpAddress | null = () => null): Promise<RtpLeg> {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((r) => socket.bind(0, '127.0.0.1', () => r()));
    return new RtpLeg(socket, remote);
  }

  get port(): number {
    return this.socket.address().port;
  }

  private onPacket(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    if (msg.length < 12) return;
    this.learned ??= { port: rinfo.port, host: rinfo.address };
    const pt = msg[1]! & 0x7f;
    if (process.env.VAP_DEBUG_RTP) this.packets.push(`${pt} ${msg.readUInt16BE(2)} ${msg.readUInt32BE(4)} ${msg.readUInt32BE(8)} ${msg.length} ${rinfo.port}`);
    const payloadAt = 12 + (msg[0]! & 0x0f) * 4;
    // A dynamic payload type of 4 bytes: a telephone event (RFC 4733), whatever number the offer gave it.
    if (pt >= 96 && msg.length === payloadAt + 4) {
      this.onTelephoneEvent(msg.readUInt32BE(4), msg[payloadAt]!);
      return;
    }
    if (pt !== 0) return;
    const samples = new Int16Array(Math.max(0, msg.length - payloadAt));
    for (let i = payloadAt, k = 0; i < msg.length; i++, k++) {
      const s = ulawDecode(msg[i]!);
      samples[k] = s;
      this.received.push(s);
      if (this.firstAudioAt === null && Math.abs(s) > 1500) this.firstAudioAt = performance.now();
    }
    this.onAudio?.(samples);
  }

  /** Every packet of one event (its start, updates, and the repeated end) has the event's RTP timestamp. */
  private onTelephoneEvent(timestamp: number, event: number): void {
    if (timestamp === this.lastEventTs) return;
    this.lastEventTs = timestamp;
    const key = DTMF_EVENTS[event] ?? '?';
    this.keys.push(key);
    for (const w of this.keyWaiters.splice(0)) w(key);
  }

  /** The next key pressed, or null after `timeoutMs`. */
  nextKey(timeoutMs: number): Promise<string | null> {
    return new Promise((resolve) => {
      const w = (k: string) => {
        clearTimeout(t);
        resolve(k);
      };
      const t = setTimeout(() => {
        this.keyWaiters = this.keyWaiters.filter((x) => x !== w);
        resolve(null);
      }, timeoutMs);
      this.keyWaiters.push(w);
    });
  }

  /** Keeps the media path alive with silence while nothing else is sent (the bridge hangs up on a silent leg). */
  startSilence(): void {
    this.silence ??= setInterval(() => {
      if (!this.sending) this.sendFrame(SILENCE(), 0);
    }, 20);
  }

  private sendFrame(payload: Uint8Array, pt: number, marker = false, ts = this.ts): void {
    const to = this.peer ?? this.remote() ?? this.learned;
    if (!to || this.closed) return;
    const h = Buffer.alloc(12);
    h[0] = 0x80;
    h[1] = (marker ? 0x80 : 0) | pt;
    h.writeUInt16BE(this.seq++ & 0xffff, 2);
    h.writeUInt32BE(ts >>> 0, 4);
    h.writeUInt32BE(this.ssrc >>> 0, 8);
    this.socket.send(Buffer.concat([h, payload]), to.port, to.host);
    if (pt === 0) this.ts += FRAME;
  }

  /** Sends G.711 µ-law frames of 20 ms in real time, frame `k` from `frame(k)`, until it returns null. */
  private async sendPaced(frame: (k: number) => Uint8Array | null): Promise<void> {
    const start = performance.now();
    for (let k = 0; ; k++) {
      const out = frame(k);
      if (!out) return;
      this.sendFrame(out, 0);
      const due = start + (k + 1) * 20 - performance.now();
      if (due > 0) await new Promise((r) => setTimeout(r, due));
    }
  }

  /** Plays speech in real time (resampled to 8 kHz, µ-law; the last frame padded with silence). */
  async speak(pcm: Pcm): Promise<void> {
    const rate = pcm.sampleRate;
    const n = Math.floor((pcm.samples.length * 8000) / rate);
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = ulawEncode(pcm.samples[Math.floor((i * rate) / 8000)]!);
    this.sending = true;
    try {
      await this.sendPaced((k) => {
        if (k * FRAME >= n) return null;
        const frame = SILENCE();
        frame.set(out.subarray(k * FRAME, Math.min(n, (k + 1) * FRAME)));
        return frame;
      });
    } finally {
      this.sending = false;
    }
  }

  /**
   * Sends audio from `next` (8 kHz, 160 samples a call) as 20 ms frames in real time, in place of the silence,
   * until the returned function is called: a microphone that never stops, as a dirty line's noise needs. Not
   * with speak() or pressKey() at the same time.
   */
  stream(next: (n: number) => Int16Array): () => Promise<void> {
    this.sending = true;
    let running = true;
    const loop = this.sendPaced(() => {
      if (!running || this.closed) return null;
      const samples = next(FRAME);
      const out = new Uint8Array(samples.length);
      for (let i = 0; i < samples.length; i++) out[i] = ulawEncode(samples[i]!);
      return out;
    });
    return async () => {
      running = false;
      await loop;
      this.sending = false;
    };
  }

  /** RFC 4733 telephone-event (payload type 101, as the peers' SDP offers it): one digit, 100 ms, three end packets. */
  async pressKey(digit: string): Promise<void> {
    const code = '0123456789*#'.indexOf(digit);
    if (code < 0) throw new Error(`not a keypad digit: ${digit}`);
    this.sending = true;
    try {
      const ts = this.ts;
      for (let i = 1; i <= 5; i++) {
        this.sendFrame(Buffer.from([code, 10, 0, i * FRAME]), 101, i === 1, ts);
        await new Promise((r) => setTimeout(r, 20));
      }
      const dur = 6 * FRAME;
      for (let i = 0; i < 3; i++) this.sendFrame(Buffer.from([code, 0x80 | 10, dur >> 8, dur & 0xff]), 101, false, ts);
      this.ts += dur;
    } finally {
      this.sending = false;
    }
  }

  /** The audio heard so far, 8 kHz. */
  audio(fromSample = 0): Pcm {
    return { samples: Int16Array.from(this.received.slice(fromSample)), sampleRate: 8000 };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.silence) clearInterval(this.silence);
    try {
      this.socket.close();
    } catch {
      // closed
    }
  }
}
