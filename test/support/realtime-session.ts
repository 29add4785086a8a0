// One connection of the OpenAI Realtime double (fake-openai-realtime.ts): the session, the input audio buffer
// with its energy VAD, the conversation's items, and the response in progress. See that file for the protocol.
import type { IncomingMessage } from 'node:http';
import { seededRandom } from './seeded-random.ts';
import type { WsConnection } from './ws-server.ts';
import { Pcm16Windows } from './pcm-windows.ts';

export interface RealtimeOptions {
  /** From the end of a turn (speech_stopped, or the client's response.create) to the first audio: [min, max] ms, drawn uniformly. Default [300, 500]. */
  firstAudioMs?: [number, number];
  /** Seed of the draws (default 54). */
  seed?: number;
  /** Audio streams this many times faster than real time once it starts (default 4). */
  pace?: number;
  /** From a commit to its input transcription (ms; default 120). */
  transcribeMs?: number;
  /** A 10 ms window is speech above this RMS, int16 scale (default 300). */
  speechRms?: number;
  /** Keys accepted as bearer tokens; default: any non-empty key. */
  apiKeys?: string[];
}

/** The conversation as the responder sees it when a response starts. */
export interface RealtimeTurn {
  connection: number;
  /** The response's index in the connection. */
  index: number;
  /** The last user message's text (its transcript), '' when none. */
  lastUser: string;
  /** Items in order: messages as text, function calls and their outputs. */
  items: { type: string; role?: string; text?: string; name?: string; call_id?: string; output?: string }[];
  instructions: string;
  /** Per-response instructions of response.create. */
  responseInstructions: string | null;
  tools: string[];
}

export interface RealtimeReply {
  text?: string;
  toolCalls?: { name: string; arguments: Record<string, unknown> | string }[];
  /** Fail the response (response.done status failed) with this error. */
  error?: { type: string; code: string; message: string };
}

export type RealtimeResponder = (turn: RealtimeTurn) => RealtimeReply | Promise<RealtimeReply>;
/** The words of a committed user item, by its index in the connection (and how much speech it held). */
export type RealtimeTranscriber = (item: { connection: number; index: number; speechMs: number }) => string;

export interface RealtimeResponseRecord {
  id: string;
  index: number;
  lastUser: string;
  text: string;
  toolCalls: string[];
  status: 'in_progress' | 'completed' | 'cancelled' | 'failed';
  reason?: string;
  /** Wall-clock times: the turn's end (speech_stopped or response.create), and the first audio delta sent. */
  turnEndedAt: number;
  firstAudioAt?: number;
  /** Audio sent (ms of speech). */
  audioMs: number;
}

type Item = RealtimeTurn['items'][number] & { id: string };
interface Speaker {
  speaker: () => (text: string) => Int16Array | Promise<Int16Array>;
  responder: () => RealtimeResponder;
  transcriber: () => RealtimeTranscriber;
}

const RATE = 24000;
const WINDOW = RATE / 100;
const MIN_COMMIT_MS = 100;
const SILENCE_BY_EAGERNESS: Record<string, number> = { low: 900, medium: 500, auto: 500, high: 250 };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let counter = 0;
const id = (prefix: string) => `${prefix}_${(++counter).toString(36).padStart(6, '0')}`;

export class RealtimeConnection {
  readonly index: number;
  readonly headers: IncomingMessage['headers'];
  readonly params: URLSearchParams;
  /** The session as the client's updates made it. */
  session: Record<string, any> = { type: 'realtime', audio: { input: { turn_detection: { type: 'server_vad', silence_duration_ms: 500 } }, output: {} }, instructions: '', tools: [] };
  /** Client event types received, in order (appends counted in `appends`). */
  readonly received: string[] = [];
  appends = 0;
  /** Server event types sent, in order (audio deltas counted in `audioDeltas`). */
  readonly sent: string[] = [];
  audioDeltas = 0;
  readonly responses: RealtimeResponseRecord[] = [];
  /** conversation.item.truncate requests: the item and the audio the client played of it. */
  readonly truncations: { itemId: string; audioEndMs: number }[] = [];
  readonly items: Item[] = [];
  audioMs = 0;
  closed = false;
  readonly #ws: WsConnection;
  readonly #opts: Required<Omit<RealtimeOptions, 'apiKeys'>>;
  readonly #script: Speaker;
  readonly #random: () => number;
  #bufferMs = 0;
  #bufferSpeechMs = 0;
  #speaking = false;
  #lastSpeechAt = 0;
  #itemId = '';
  #userItems = 0;
  readonly #windows = new Pcm16Windows(WINDOW);
  #active: { record: RealtimeResponseRecord; cancel: (reason: string) => void } | null = null;
  #transcripts: Promise<void> = Promise.resolve();
  #finishing: Promise<void> = Promise.resolve();

  constructor(ws: WsConnection, req: IncomingMessage, index: number, opts: RealtimeOptions, script: Speaker) {
    this.#ws = ws;
    this.index = index;
    this.headers = req.headers;
    this.params = new URL(req.url ?? '/', 'http://x').searchParams;
    this.#opts = { firstAudioMs: opts.firstAudioMs ?? [300, 500], seed: opts.seed ?? 54, pace: opts.pace ?? 4, transcribeMs: opts.transcribeMs ?? 120, speechRms: opts.speechRms ?? 300 };
    this.#random = seededRandom(this.#opts.seed + index);
    this.#script = script;
    this.session.model = this.params.get('model');
    ws.on('message', (data, binary) => (binary ? this.#error('invalid_request_error', 'binary_not_supported', 'Binary messages are not supported.') : this.#onEvent(data.toString('utf8'))));
    ws.on('close', () => {
      this.closed = true;
      this.#active?.cancel('client_disconnected');
    });
    this.#send({ type: 'session.created', session: this.session });
  }

  terminate(): void {
    this.#ws.terminate();
  }

  /** Completed input transcripts and output transcripts, in order. */
  transcript(): { role: string; text: string }[] {
    return this.items.filter((i) => i.type === 'message').map((i) => ({ role: i.role ?? '', text: i.text ?? '' }));
  }

  get #turnDetection(): { type?: string; silence_duration_ms?: number; eagerness?: string; create_response?: boolean; interrupt_response?: boolean } | null {
    return this.session.audio?.input?.turn_detection ?? null;
  }

  #send(event: Record<string, unknown>): void {
    if (this.closed) return;
    this.#ws.send(JSON.stringify({ event_id: id('event'), ...event }));
    if (event.type === 'response.output_audio.delta') this.audioDeltas++;
    else this.sent.push(String(event.type));
  }

  #error(type: string, code: string, message: string, param: string | null = null, eventId: string | null = null): void {
    this.#send({ type: 'error', error: { type, code, message, param, event_id: eventId } });
  }

  #onEvent(text: string): void {
    let e: Record<string, any>;
    try {
      e = JSON.parse(text) as Record<string, any>;
    } catch {
      return this.#error('invalid_request_error', 'invalid_json', 'The server could not parse the message as JSON.');
    }
    const eventId: string | null = e.event_id ?? null;
    if (e.type !== 'input_audio_buffer.append') this.received.push(String(e.type));
    switch (e.type) {
      case 'session.update':
        return this.#update(e.session ?? {}, eventId);
      case 'input_audio_buffer.append':
        this.appends++;
        if (typeof e.audio !== 'string') return this.#error('invalid_request_error', 'missing_required_parameter', "Missing required parameter: 'audio'.", 'audio', eventId);
        return this.#onAudio(Buffer.from(e.audio, 'base64'));
      case 'input_audio_buffer.commit':
        if (this.#bufferMs < MIN_COMMIT_MS) {
          return this.#error('invalid_request_error', 'input_audio_buffer_commit_empty', `Error committing input audio buffer: buffer too small. Expected at least ${MIN_COMMIT_MS}ms of audio, but buffer only has ${this.#bufferMs.toFixed(2)}ms of audio.`, null, eventId);
        }
        return this.#commit();
      case 'input_audio_buffer.clear':
        this.#emptyBuffer();
        return this.#send({ type: 'input_audio_buffer.cleared' });
      case 'conversation.item.create':
        return this.#createItem(e.item ?? {}, e.previous_item_id, eventId);
      case 'conversation.item.delete': {
        const at = this.items.findIndex((i) => i.id === e.item_id);
        if (at < 0) return this.#error('invalid_request_error', 'item_not_found', `Error deleting item: the item with id '${e.item_id}' does not exist.`, 'item_id', eventId);
        this.items.splice(at, 1);
        return this.#send({ type: 'conversation.item.deleted', item_id: e.item_id });
      }
      case 'conversation.item.truncate': {
        const item = this.items.find((i) => i.id === e.item_id);
        if (!item) return this.#error('invalid_request_error', 'item_not_found', `Error truncating item: the item with id '${e.item_id}' does not exist.`, 'item_id', eventId);
        this.truncations.push({ itemId: e.item_id, audioEndMs: Number(e.audio_end_ms) });
        return this.#send({ type: 'conversation.item.truncated', item_id: e.item_id, content_index: e.content_index ?? 0, audio_end_ms: e.audio_end_ms });
      }
      case 'response.create':
        if (this.#active) return this.#error('invalid_request_error', 'conversation_already_has_active_response', `Conversation already has an active response in progress: ${this.#active.record.id}. Wait until the response is finished before creating a new one.`, null, eventId);
        return void this.#respond(e.response ?? {});
      case 'response.cancel':
        if (!this.#active || (e.response_id && e.response_id !== this.#active.record.id)) {
          return this.#error('invalid_request_error', 'response_cancel_not_active', 'Cancellation failed: no active response found', null, eventId);
        }
        return this.#active.cancel('client_cancelled');
      default:
        return this.#error('invalid_request_error', 'invalid_value', `Invalid value: '${e.type}'. Supported values are: 'session.update', 'input_audio_buffer.append', 'input_audio_buffer.commit', 'input_audio_buffer.clear', 'conversation.item.create', 'conversation.item.truncate', 'conversation.item.delete', 'response.create', and 'response.cancel'.`, 'type', eventId);
    }
  }

  #update(s: Record<string, any>, eventId: string | null): void {
    if (s.type !== undefined && s.type !== 'realtime') return this.#error('invalid_request_error', 'invalid_value', "Invalid value: session.type must be 'realtime'.", 'session.type', eventId);
    for (const dir of ['input', 'output'] as const) {
      const f = s.audio?.[dir]?.format;
      if (f && (f.type !== 'audio/pcm' || (f.rate !== undefined && f.rate !== RATE))) {
        return this.#error('invalid_request_error', 'invalid_value', `Invalid value: audio.${dir}.format must be audio/pcm at 24000 Hz.`, `session.audio.${dir}.format`, eventId);
      }
    }
    const td = s.audio?.input?.turn_detection;
    if (td && !['server_vad', 'semantic_vad'].includes(td.type)) {
      return this.#error('invalid_request_error', 'invalid_value', "Invalid value: turn_detection.type must be 'server_vad' or 'semantic_vad'.", 'session.audio.input.turn_detection.type', eventId);
    }
    const { audio, ...rest } = s;
    this.session = { ...this.session, ...rest };
    if (audio) {
      this.session.audio = {
        input: { ...this.session.audio.input, ...(audio.input ?? {}) },
        output: { ...this.session.audio.output, ...(audio.output ?? {}) },
      };
    }
    this.#send({ type: 'session.updated', session: this.session });
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
          this.#itemId ||= id('item');
          if (vad) {
            this.#send({ type: 'input_audio_buffer.speech_started', audio_start_ms: Math.round(this.audioMs - ms), item_id: this.#itemId });
            // The caller talks over the model: its response stops (interrupt_response, default true).
            if (vad.interrupt_response !== false) this.#active?.cancel('turn_detected');
          }
        }
      } else if (this.#speaking && vad) {
        const silence = vad.type === 'semantic_vad' ? (SILENCE_BY_EAGERNESS[vad.eagerness ?? 'auto'] ?? 500) : (vad.silence_duration_ms ?? 500);
        if (this.audioMs - this.#lastSpeechAt >= silence) {
          this.#speaking = false;
          this.#send({ type: 'input_audio_buffer.speech_stopped', audio_end_ms: Math.round(this.#lastSpeechAt), item_id: this.#itemId });
          this.#commit();
          // A response still closing (cancelled by this very turn) finishes first.
          if (vad.create_response !== false) void this.#finishing.then(() => this.#respond({}));
        }
      }
    }
  }

  #commit(): void {
    const itemId = this.#itemId || id('item');
    const index = this.#userItems++;
    const speechMs = this.#bufferSpeechMs;
    const previous = this.items.at(-1)?.id ?? null;
    this.#send({ type: 'input_audio_buffer.committed', previous_item_id: previous, item_id: itemId });
    const item: Item = { id: itemId, type: 'message', role: 'user', text: '' };
    this.items.push(item);
    this.#send({ type: 'conversation.item.added', previous_item_id: previous, item: { id: itemId, object: 'realtime.item', type: 'message', status: 'completed', role: 'user', content: [{ type: 'input_audio', transcript: null }] } });
    this.#emptyBuffer();
    // The words are known at once (the responder needs them); the transcription events follow after transcribeMs.
    item.text = speechMs > 0 ? this.#script.transcriber()({ connection: this.index, index, speechMs }) : '';
    if (this.session.audio?.input?.transcription) {
      const transcript = item.text;
      this.#transcripts = this.#transcripts.then(async () => {
        await sleep(this.#opts.transcribeMs);
        for (const piece of transcript.match(/\S+\s*/g) ?? []) this.#send({ type: 'conversation.item.input_audio_transcription.delta', item_id: itemId, content_index: 0, delta: piece });
        const tokens = Math.max(1, transcript.split(/\s+/).filter(Boolean).length);
        this.#send({ type: 'conversation.item.input_audio_transcription.completed', item_id: itemId, content_index: 0, transcript, usage: { type: 'tokens', input_tokens: Math.ceil(speechMs / 100), output_tokens: tokens, total_tokens: Math.ceil(speechMs / 100) + tokens } });
      });
    }
  }

  #emptyBuffer(): void {
    this.#itemId = '';
    this.#bufferMs = 0;
    this.#bufferSpeechMs = 0;
    this.#speaking = false;
  }

  #createItem(raw: Record<string, any>, previousId: string | undefined, eventId: string | null): void {
    if (!['message', 'function_call', 'function_call_output'].includes(raw.type)) {
      return this.#error('invalid_request_error', 'invalid_value', "Invalid value: item.type must be 'message', 'function_call' or 'function_call_output'.", 'item.type', eventId);
    }
    if (raw.id && this.items.some((i) => i.id === raw.id)) return this.#error('invalid_request_error', 'duplicate_item_id', `Item with id '${raw.id}' already exists.`, 'item.id', eventId);
    const item: Item = { id: raw.id ?? id('item'), type: raw.type };
    if (raw.type === 'message') {
      item.role = raw.role;
      item.text = (Array.isArray(raw.content) ? raw.content : []).map((c: { text?: string; transcript?: string }) => c.text ?? c.transcript ?? '').join('');
    } else {
      Object.assign(item, { name: raw.name, call_id: raw.call_id, ...(raw.output !== undefined ? { output: String(raw.output) } : {}) });
    }
    const at = previousId ? this.items.findIndex((i) => i.id === previousId) + 1 : this.items.length;
    this.items.splice(at > 0 ? at : previousId ? this.items.length : 0, 0, item);
    const previous = this.items[this.items.indexOf(item) - 1]?.id ?? null;
    this.#send({ type: 'conversation.item.added', previous_item_id: previous, item: { ...raw, id: item.id, object: 'realtime.item', status: 'completed' } });
    this.#send({ type: 'conversation.item.done', previous_item_id: previous, item: { ...raw, id: item.id, object: 'realtime.item', status: 'completed' } });
  }

  #respond(request: { instructions?: string; metadata?: Record<string, string> | null }): Promise<void> {
    this.#finishing = this.#response(request).catch(() => {});
    return this.#finishing;
  }

  async #response(request: { instructions?: string; metadata?: Record<string, string> | null }): Promise<void> {
    const turnEndedAt = Date.now();
    const record: RealtimeResponseRecord = { id: id('resp'), index: this.responses.length, lastUser: '', text: '', toolCalls: [], status: 'in_progress', turnEndedAt, audioMs: 0 };
    this.responses.push(record);
    let cancelled: string | null = null;
    let wake: () => void = () => {};
    this.#active = {
      record,
      cancel: (reason) => {
        cancelled ??= reason;
        wake();
      },
    };
    const wait = (ms: number) => new Promise<void>((r) => {
      const t = setTimeout(r, ms);
      wake = () => (clearTimeout(t), r());
    });
    const output: Record<string, unknown>[] = [];
    const base = { object: 'realtime.response', conversation_id: `conv_${this.index}`, output_modalities: this.session.output_modalities ?? ['audio'], metadata: request.metadata ?? null };
    this.#send({ type: 'response.created', response: { id: record.id, status: 'in_progress', status_details: null, output: [], usage: null, ...base } });
    const lastUser = [...this.items].reverse().find((i) => i.type === 'message' && i.role === 'user');
    record.lastUser = lastUser?.text ?? '';
    const turn: RealtimeTurn = {
      connection: this.index,
      index: record.index,
      lastUser: record.lastUser,
      items: this.items.map(({ id: _id, ...rest }) => rest),
      instructions: String(this.session.instructions ?? ''),
      responseInstructions: request.instructions ?? null,
      tools: ((this.session.tools ?? []) as { name: string }[]).map((t) => t.name),
    };
    const [lo, hi] = this.#opts.firstAudioMs;
    const latency = lo + (hi - lo) * this.#random();
    const [reply] = await Promise.all([Promise.resolve(this.#script.responder()(turn)), wait(latency)]);
    let failed: RealtimeReply['error'] | null = null;
    if (!cancelled && reply.error) failed = reply.error;
    const speak = !cancelled && !failed && reply.text ? reply.text : '';
    if (speak) {
      const item = { id: id('item'), object: 'realtime.item', type: 'message', status: 'in_progress', role: 'assistant', content: [] as unknown[] };
      const stored: Item = { id: item.id, type: 'message', role: 'assistant', text: '' };
      const previous = this.items.at(-1)?.id ?? null;
      this.items.push(stored);
      const at = { response_id: record.id, item_id: item.id, output_index: output.length, content_index: 0 };
      this.#send({ type: 'response.output_item.added', response_id: record.id, output_index: at.output_index, item });
      this.#send({ type: 'conversation.item.added', previous_item_id: previous, item });
      this.#send({ type: 'response.content_part.added', ...at, part: { type: 'audio', transcript: '' } });
      const pcm = await this.#script.speaker()(speak);
      const words = speak.match(/\S+\s*/g) ?? [speak];
      // The audio streams in 100 ms chunks, `pace` times faster than real time; the transcript's words go along with
      // their share of the audio.
      const chunk = RATE / 10;
      const chunks = Math.max(1, Math.ceil(pcm.length / chunk));
      let said = 0;
      let spoken = '';
      for (let c = 0; c < chunks && !cancelled; c++) {
        if (c === 0) record.firstAudioAt = Date.now();
        const slice = pcm.subarray(c * chunk, (c + 1) * chunk);
        this.#send({ type: 'response.output_audio.delta', ...at, delta: Buffer.from(slice.buffer, slice.byteOffset, slice.byteLength).toString('base64') });
        record.audioMs += (slice.length / RATE) * 1000;
        while (said < words.length && said / words.length <= (c + 1) / chunks) {
          this.#send({ type: 'response.output_audio_transcript.delta', ...at, delta: words[said] });
          spoken += words[said++];
          stored.text = spoken;
        }
        if (c + 1 < chunks) await wait(100 / this.#opts.pace);
      }
      record.text = spoken;
      const part = { type: 'audio', transcript: spoken };
      this.#send({ type: 'response.output_audio.done', ...at });
      this.#send({ type: 'response.output_audio_transcript.done', ...at, transcript: spoken });
      this.#send({ type: 'response.content_part.done', ...at, part });
      const done = { ...item, status: cancelled ? 'incomplete' : 'completed', content: [{ type: 'output_audio', transcript: spoken }] };
      this.#send({ type: 'response.output_item.done', response_id: record.id, output_index: at.output_index, item: done });
      output.push(done);
    }
    for (const call of !cancelled && !failed ? (reply.toolCalls ?? []) : []) {
      const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments);
      const item = { id: id('item'), object: 'realtime.item', type: 'function_call', status: 'in_progress', name: call.name, call_id: id('call'), arguments: '' };
      const previous = this.items.at(-1)?.id ?? null;
      this.items.push({ id: item.id, type: 'function_call', name: call.name, call_id: item.call_id });
      const at = { response_id: record.id, item_id: item.id, output_index: output.length };
      this.#send({ type: 'response.output_item.added', response_id: record.id, output_index: at.output_index, item });
      this.#send({ type: 'conversation.item.added', previous_item_id: previous, item });
      this.#send({ type: 'response.function_call_arguments.delta', ...at, call_id: item.call_id, delta: args });
      this.#send({ type: 'response.function_call_arguments.done', ...at, call_id: item.call_id, name: call.name, arguments: args });
      const done = { ...item, status: 'completed', arguments: args };
      this.#send({ type: 'response.output_item.done', response_id: record.id, output_index: at.output_index, item: done });
      output.push(done);
      record.toolCalls.push(call.name);
    }
    record.status = cancelled ? 'cancelled' : failed ? 'failed' : 'completed';
    if (cancelled) record.reason = cancelled;
    const statusDetails = cancelled ? { type: 'cancelled', reason: cancelled } : failed ? { type: 'failed', error: failed } : null;
    const outTokens = Math.max(1, Math.ceil(record.audioMs / 50));
    const inTokens = 10 * this.items.length;
    const usage = {
      total_tokens: inTokens + outTokens,
      input_tokens: inTokens,
      output_tokens: outTokens,
      input_token_details: { text_tokens: inTokens, audio_tokens: 0, cached_tokens: 0 },
      output_token_details: { text_tokens: Math.ceil(record.text.length / 4), audio_tokens: outTokens },
    };
    this.#active = null;
    this.#send({ type: 'response.done', response: { id: record.id, status: record.status, status_details: statusDetails, output, usage, ...base } });
  }
}
