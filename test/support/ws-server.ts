// The server side of a WebSocket (RFC 6455) for the test doubles of streaming APIs: the handshake on an
// HTTP upgrade, unmasking of client frames (fragmented or not), text and binary messages, ping/pong and the
// close handshake. No extensions are accepted, so clients send uncompressed frames. Node has a WebSocket
// client but no server, and the project adds no dependency for a test double.
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export interface WsConnectionEvents {
  message: [data: Buffer, isBinary: boolean];
  close: [code: number];
}

export class WsConnection extends EventEmitter<WsConnectionEvents> {
  #socket: Duplex;
  #buf: Buffer = Buffer.alloc(0);
  #fragments: Buffer[] = [];
  #fragmentBinary = false;
  #closed = false;

  constructor(socket: Duplex, head: Buffer) {
    super();
    this.#socket = socket;
    socket.on('data', (d: Buffer) => this.#onData(d));
    socket.on('close', () => this.#finish(1006));
    socket.on('error', () => this.#finish(1006));
    if (head.length) this.#onData(head);
  }

  get closed(): boolean {
    return this.#closed;
  }

  send(data: string | Buffer): void {
    if (this.#closed) return;
    const binary = typeof data !== 'string';
    this.#write(binary ? 2 : 1, binary ? data : Buffer.from(data, 'utf8'));
  }

  close(code = 1000, reason = ''): void {
    if (this.#closed) return;
    const body = Buffer.alloc(2 + Buffer.byteLength(reason));
    body.writeUInt16BE(code, 0);
    body.write(reason, 2);
    this.#write(8, body);
    this.#socket.end();
    this.#finish(code);
  }

  terminate(): void {
    this.#socket.destroy();
    this.#finish(1006);
  }

  #finish(code: number): void {
    if (this.#closed) return;
    this.#closed = true;
    this.emit('close', code);
  }

  #write(opcode: number, payload: Buffer): void {
    const n = payload.length;
    const header = n < 126 ? Buffer.alloc(2) : n < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
    header[0] = 0x80 | opcode;
    if (n < 126) header[1] = n;
    else if (n < 65536) {
      header[1] = 126;
      header.writeUInt16BE(n, 2);
    } else {
      header[1] = 127;
      header.writeBigUInt64BE(BigInt(n), 2);
    }
    this.#socket.write(Buffer.concat([header, payload]));
  }

  #onData(d: Buffer): void {
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, d]) : d;
    for (;;) {
      if (this.#buf.length < 2) return;
      const fin = (this.#buf[0]! & 0x80) !== 0;
      const opcode = this.#buf[0]! & 0x0f;
      const masked = (this.#buf[1]! & 0x80) !== 0;
      let len = this.#buf[1]! & 0x7f;
      let off = 2;
      if (len === 126) {
        if (this.#buf.length < 4) return;
        len = this.#buf.readUInt16BE(2);
        off = 4;
      } else if (len === 127) {
        if (this.#buf.length < 10) return;
        len = Number(this.#buf.readBigUInt64BE(2));
        off = 10;
      }
      const maskAt = off;
      if (masked) off += 4;
      if (this.#buf.length < off + len) return;
      const payload = Buffer.from(this.#buf.subarray(off, off + len));
      if (masked) for (let i = 0; i < len; i++) payload[i]! ^= this.#buf[maskAt + (i % 4)]!;
      this.#buf = this.#buf.subarray(off + len);
      this.#onFrame(fin, opcode, payload);
    }
  }

  #onFrame(fin: boolean, opcode: number, payload: Buffer): void {
    if (opcode === 8) {
      // The client's close: answer it and end.
      const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005;
      if (!this.#closed) {
        this.#write(8, payload.subarray(0, 2));
        this.#socket.end();
      }
      this.#finish(code);
      return;
    }
    if (opcode === 9) return this.#write(10, payload);
    if (opcode === 10) return;
    if (opcode === 1 || opcode === 2) {
      this.#fragments = [payload];
      this.#fragmentBinary = opcode === 2;
    } else if (opcode === 0) {
      this.#fragments.push(payload);
    }
    if (fin && this.#fragments.length) {
      const data = this.#fragments.length === 1 ? this.#fragments[0]! : Buffer.concat(this.#fragments);
      this.#fragments = [];
      this.emit('message', data, this.#fragmentBinary);
    }
  }
}

/** Completes the handshake of an HTTP upgrade request and returns the connection. */
export function acceptWebSocket(req: IncomingMessage, socket: Duplex, head: Buffer): WsConnection {
  const key = String(req.headers['sec-websocket-key'] ?? '');
  const accept = createHash('sha1').update(key + GUID).digest('base64');
  socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  return new WsConnection(socket, head);
}
