// The realtime transcription side of the OpenAI stand-in (fake-openai.ts serves it on the same port, as the real
// API serves both on one host): a WebSocket at /v1/realtime?intent=transcription, speaking the protocol as
// @livekit/agents-plugin-openai 1.9's streaming STT uses it. In: `Authorization: Bearer <key>`, `session.update`
// (a `transcription` session: 24 kHz `audio/pcm` input, the transcription model and language, `turn_detection`),
// `input_audio_buffer.append` (base64 PCM16), `input_audio_buffer.commit` and `.clear`. Out: `session.created`,
// `session.updated`, `input_audio_buffer.speech_started` / `speech_stopped` (server VAD), `.committed`,
// `.cleared`, `conversation.item.input_audio_transcription.delta` and `.completed` (with token usage), and
// `error` events shaped as the real ones (an empty commit, a bad session).
//
// It hears speech by energy on the audio's own clock, as fake-deepgram.ts does. With `turn_detection` set
// (server VAD) an item starts at the first speech and is committed once the audio holds the session's
// `silence_duration_ms` of silence after it; with `turn_detection: null` only the client's commit ends an item,
// and a commit of less than 100 ms of audio is refused. The words come from a scripted transcriber, not
// recognition; they follow the commit after `transcribeMs`, as deltas a word at a time `deltaMs` apart, then the
// completed transcript.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { acceptWebSocket, type WsConnection } from './ws-server.ts';
import { Pcm16Windows } from './pcm-windows.ts';

/** The audio of one committed item, handed to the transcriber. */
export interface TranscriptionItem {
  /** The connection's index (in arrival order) and the item's within it. */
  connection: number;
  index: number;
  /** The item's audio (ms) and, of it, the speech heard by energy. */
  audioMs: number;
  speechMs: number;
}

export type Transcriber = (item: TranscriptionItem) => string | Promise<string>;

export interface TranscriptionOptions {
  /** From an item's commit to its first delta (ms; default 150). */
  transcribeMs?: number;
  /** Between deltas, and from the last to the completed transcript (ms; default 30): the model streams its words. */
  deltaMs?: number;
  /** A 10 ms window is speech above this RMS, int16 scale (default 300). */
  speechRms?: number;
  /** Keys accepted as bearer tokens; default: any non-empty key. */
  apiKeys?: string[];
}

/** The session's input as the client set it (`session.update`), for a test to check. */
export interface TranscriptionSession {
  type?: string;
  audio?: { input?: { format?: { type?: string; rate?: number }; transcription?: { model?: string; language?: string; prompt?: string }; turn_detection?: { type?: string; silence_duration_ms?: number; prefix_padding_ms?: number } | null } };
}

type ConnectionOptions = Required<Omit<TranscriptionOptions, 'apiKeys'>>;

const RATE = 24000;
const WINDOW = RATE / 100;
/** The real API's smallest commit. */
const MIN_COMMIT_MS = 100;
/** The real API's default silence for server VAD, when the session gives none. */
const DEFAULT_SILENCE_MS = 500;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let eventCounter = 0;
const eventId = () => `event_${(++eventCounter).toString(36)}`;

export class TranscriptionConnection {
  readonly index: number;
  readonly headers: IncomingMessage['headers'];
  readonly params: URLSearchParams;
  /** Every session.update's `session`, in order. */
  readonly sessions: TranscriptionSession[] = [];
  /** Client event types received, in order (appends counted, not listed: `appends`). */
  readonly received: string[] = [];
  appends = 0;
  /** Server events sent, in order. */
  readonly sent: { type: string; transcript?: string; delta?: string; code?: string }[] = [];
  /** Audio received (ms, on the audio's clock). */
  audioMs = 0;
  closed = false;
  readonly #ws: WsConnection;
  readonly #opts: ConnectionOptions;
  readonly #transcriber: () => Transcriber;
  #items = 0;
  #itemId = '';
  /** Audio in the buffer not yet committed (ms) and, of it, speech. */
  #bufferMs = 0;
  #bufferSpeechMs = 0;
  #speaking = false;
  #lastSpeechAt = 0;
  #previousItem: string | null = null;
  readonly #windows = new Pcm16Windows(WINDOW);
  /** Transcriptions run one after another, in commit order, as the real API's items complete. */
  #queue: Promise<void> = Promise.resolve();

  constructor(ws: WsConnection, req: IncomingMessage, index: number, opts: ConnectionOptions, transcriber: () => Transcriber) {
    this.#ws = ws;
    this.index = index;
    this.headers = req.headers;
    this.params = new URL(req.url ?? '/', 'http://x').searchParams;
    this.#opts = opts;
    this.#transcriber = transcriber;
    ws.on('message', (data, binary) => (binary ? this.#error('invalid_request_error', 'binary_not_supported', 'Binary messages are not supported.') : this.#onEvent(data.toString('utf8'))));
    ws.on('close', () => (this.closed = true));
    this.#send({ type: 'session.created', session: { type: 'transcription', id: `sess_${index}` } });
  }

  /** The last session.update's turn detection: server VAD unless the client set it to null. */
  get #turnDetection(): { silence_duration_ms?: number } | null {
    const input = this.sessions.at(-1)?.audio?.input;
    return input && 'turn_detection' in input ? (input.turn_detection ?? null) : { silence_duration_ms: DEFAULT_SILENCE_MS };
  }

  /** Drops the connection without a close handshake (the stand-in shutting down). */
  terminate(): void {
    this.#ws.terminate();
  }

  /** Completed transcripts sent, in order. */
  completed(): string[] {
    return this.sent.filter((m) => m.type === 'conversation.item.input_audio_transcription.completed').map((m) => m.transcript ?? '');
  }

  #send(event: Record<string, unknown>): void {
    if (this.closed) return;
    this.#ws.send(JSON.stringify({ event_id: eventId(), ...event }));
    const e = event as { type: string; transcript?: string; delta?: string; error?: { code?: string } };
    this.sent.push({ type: e.type, ...(e.transcript !== undefined ? { transcript: e.transcript } : {}), ...(e.delta !== undefined ? { delta: e.delta } : {}), ...(e.error?.code ? { code: e.error.code } : {}) });
  }

  #error(type: string, code: string, message: string, param: string | null = null): void {
    this.#send({ type: 'error', error: { type, code, message, param, event_id: null } });
  }

  #onEvent(text: string): void {
    let event: { type?: string; session?: TranscriptionSession; audio?: string };
    try {
      event = JSON.parse(text) as typeof event;
    } catch {
      return this.#error('invalid_request_error', 'invalid_json', 'The server could not parse the message as JSON.');
    }
    if (event.type !== 'input_audio_buffer.append') this.received.push(event.type ?? '?');
    switch (event.type) {
      case 'session.update': {
        const s = event.session ?? {};
        const format = s.audio?.input?.format;
        if (s.type !== 'transcription') return this.#error('invalid_request_error', 'invalid_value', "Invalid value: session.type must be 'transcription' on a transcription intent.", 'session.type');
        if (format && (format.type !== 'audio/pcm' || (format.rate !== undefined && format.rate !== RATE))) {
          return this.#error('invalid_request_error', 'invalid_value', 'Invalid value: audio.input.format must be audio/pcm at 24000 Hz.', 'session.audio.input.format');
        }
        this.sessions.push(s);
        return this.#send({ type: 'session.updated', session: s });
      }
      case 'input_audio_buffer.append':
        this.appends++;
        if (typeof event.audio !== 'string') return this.#error('invalid_request_error', 'missing_required_parameter', "Missing required parameter: 'audio'.", 'audio');
        return this.#onAudio(Buffer.from(event.audio, 'base64'));
      case 'input_audio_buffer.commit':
        if (this.#bufferMs < MIN_COMMIT_MS) {
          return this.#error(
            'invalid_request_error',
            'input_audio_buffer_commit_empty',
            `Error committing input audio buffer: buffer too small. Expected at least ${MIN_COMMIT_MS}ms of audio, but buffer only has ${this.#bufferMs.toFixed(2)}ms of audio.`,
          );
        }
        return this.#commit();
      case 'input_audio_buffer.clear':
        this.#emptyBuffer();
        return this.#send({ type: 'input_audio_buffer.cleared' });
      default:
        return this.#error('invalid_request_error', 'unknown_event', `Invalid value: '${event.type}'. Supported values are: 'session.update', 'input_audio_buffer.append', 'input_audio_buffer.commit' and 'input_audio_buffer.clear'.`, 'type');
    }
  }

  #onAudio(buf: Buffer): void {
    const vad = this.#turnDetection;
    for (const w of this.#windows.push(buf)) {
      const ms = (w.samples / RATE) * 1000;
      this.audioMs += ms;
      this.#bufferMs += ms;
      if (w.rms > this.#opts.speechRms) {
        this.#bufferSpeechMs += ms;
        this.#lastSpeechAt = this.audioMs;
        if (!this.#speaking) {
          this.#speaking = true;
          this.#itemId ||= `item_${this.index}_${this.#items}`;
          if (vad) this.#send({ type: 'input_audio_buffer.speech_started', audio_start_ms: Math.round(this.audioMs - ms), item_id: this.#itemId });
        }
      } else if (this.#speaking && vad && this.audioMs - this.#lastSpeechAt >= (vad.silence_duration_ms ?? DEFAULT_SILENCE_MS)) {
        // Server VAD: the turn ends once the audio holds the session's silence after the speech.
        this.#speaking = false;
        this.#send({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: Math.round(this.#lastSpeechAt), item_id: this.#itemId });
        this.#commit();
      }
    }
  }

  #commit(): void {
    const itemId = this.#itemId || `item_${this.index}_${this.#items}`;
    const item: TranscriptionItem = { connection: this.index, index: this.#items++, audioMs: this.#bufferMs, speechMs: this.#bufferSpeechMs };
    this.#send({ type: 'input_audio_buffer.committed', previous_item_id: this.#previousItem, item_id: itemId });
    this.#previousItem = itemId;
    this.#emptyBuffer();
    const transcriber = this.#transcriber();
    this.#queue = this.#queue.then(() => this.#transcribe(itemId, item, transcriber));
  }

  /** Committed or cleared: the next audio starts a new item. */
  #emptyBuffer(): void {
    this.#itemId = '';
    this.#bufferMs = 0;
    this.#bufferSpeechMs = 0;
    this.#speaking = false;
  }

  async #transcribe(itemId: string, item: TranscriptionItem, transcriber: Transcriber): Promise<void> {
    await sleep(this.#opts.transcribeMs);
    const transcript = item.speechMs > 0 ? await transcriber(item) : '';
    for (const piece of transcript.match(/\S+\s*/g) ?? []) {
      this.#send({ type: 'conversation.item.input_audio_transcription.delta', item_id: itemId, content_index: 0, delta: piece });
      await sleep(this.#opts.deltaMs);
    }
    const audioTokens = Math.ceil(item.audioMs / 100);
    const textTokens = Math.max(1, transcript.split(/\s+/).filter(Boolean).length);
    this.#send({
      type: 'conversation.item.input_audio_transcription.completed',
      item_id: itemId,
      content_index: 0,
      transcript,
      usage: { type: 'tokens', input_tokens: audioTokens, input_token_details: { audio_tokens: audioTokens, text_tokens: 0 }, output_tokens: textTokens, total_tokens: audioTokens + textTokens },
    });
  }
}

/**
 * Takes an HTTP upgrade for the realtime transcription endpoint, or refuses it as the real API does (a JSON error
 * body over HTTP): false when the path is not /v1/realtime, so the caller can refuse it as it refuses others.
 */
export function acceptTranscription(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  ctx: { options: TranscriptionOptions; transcriber: () => Transcriber; connections: TranscriptionConnection[] },
): boolean {
  const url = new URL(req.url ?? '/', 'http://x');
  if (url.pathname !== '/v1/realtime') return false;
  const refuse = (status: number, reason: string, code: string, message: string) => {
    const body = JSON.stringify({ error: { type: 'invalid_request_error', code, message, param: null } });
    socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    return true;
  };
  const key = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
  if (!key || (ctx.options.apiKeys && !ctx.options.apiKeys.includes(key))) return refuse(401, 'Unauthorized', 'invalid_api_key', 'Incorrect API key provided.');
  // A conversation session is another protocol, which nothing here speaks.
  if (url.searchParams.get('intent') !== 'transcription') return refuse(400, 'Bad Request', 'unsupported_intent', 'Only intent=transcription is served here.');
  const ws = acceptWebSocket(req, socket, head);
  const opts = { transcribeMs: ctx.options.transcribeMs ?? 150, deltaMs: ctx.options.deltaMs ?? 30, speechRms: ctx.options.speechRms ?? 300 };
  ctx.connections.push(new TranscriptionConnection(ws, req, ctx.connections.length, opts, ctx.transcriber));
  return true;
}
