// A client of the listen stream (POST /v1/calls/{id}/listen's stream_url) for the tests: the open stream with its
// text messages and binary frames as they come, or the refusal of the upgrade with its status and body.
import WebSocket from 'ws';
import { rms } from './rtc-client.ts';

export interface Refused {
  status: number;
  body: { type: string; detail: string; reason?: string };
}

export interface ListenStream {
  ws: WebSocket;
  texts: Record<string, unknown>[];
  /** Binary messages: 20 ms of s16le, channel 0 (caller) and 1 (agent) interleaved. */
  frames: Buffer[];
  closed: Promise<{ code: number; reason: string }>;
}

export function connectStream(url: string): Promise<ListenStream | Refused> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    const texts: Record<string, unknown>[] = [];
    const frames: Buffer[] = [];
    const closed = new Promise<{ code: number; reason: string }>((r) => ws.on('close', (code, reason) => r({ code, reason: reason.toString() })));
    ws.on('message', (data, binary) => (binary ? frames.push(data as Buffer) : texts.push(JSON.parse(String(data)))));
    ws.on('open', () => resolve({ ws, texts, frames, closed }));
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(body) }));
    });
    ws.on('error', reject);
  });
}

export function opened(s: ListenStream | Refused): ListenStream {
  if ('status' in s) throw new Error(`refused: ${s.status} ${JSON.stringify(s.body)}`);
  return s;
}

export function refused(s: ListenStream | Refused): Refused {
  if (!('status' in s)) throw new Error('the stream opened');
  return s;
}

/** One channel of a frame (or of frames, joined). */
export function channel(frames: Buffer | Buffer[], ch: 0 | 1): Int16Array {
  const all = Array.isArray(frames) ? Buffer.concat(frames) : frames;
  return Int16Array.from({ length: all.length / 4 }, (_, i) => all.readInt16LE(i * 4 + ch * 2));
}

/** RMS of one channel of a frame. */
export const energy = (frame: Buffer, ch: 0 | 1) => rms(channel(frame, ch));
