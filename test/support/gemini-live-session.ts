// One connection of the Gemini Live double (fake-gemini-live.ts): the setup, the caller's audio with the double's
// activity detection, the conversation's turns, and the model's turn in progress. See that file for the protocol.
// The script (responder, transcriber) and the response records are the OpenAI Realtime double's types
// (realtime-session.ts), so a test or a benchmark scripts either double the same way.
import type { IncomingMessage } from 'node:http';
import type { RealtimeReply, RealtimeResponder, RealtimeResponseRecord, RealtimeTranscriber, RealtimeTurn } from './realtime-session.ts';
import { Pcm16Windows } from './pcm-windows.ts';
import { seededRandom } from './seeded-random.ts';
import type { WsConnection } from './ws-server.ts';

export interface GeminiLiveOptions {
  /** From the end of a turn (the activity's end, or a client turn) to the first audio: [min, max] ms, uniform. Default [300, 500]. */
  firstAudioMs?: [number, number];
  /** Seed of the draws (default 54). */
  seed?: number;
  /** Audio streams this many times faster than real time once it starts (default 4). */
  pace?: number;
  /** The silence that ends a turn when the setup names none (ms; default 500). */
  silenceMs?: number;
  /** A 10 ms window is speech above this RMS, int16 scale (default 300). */
  speechRms?: number;
  /** Keys accepted (`?key=` or x-goog-api-key); default: any non-empty key. */
  apiKeys?: string[];
}

export interface GeminiLiveScript {
  speaker: () => (text: string) => Int16Array | Promise<Int16Array>;
  responder: () => RealtimeResponder;
  transcriber: () => RealtimeTranscriber;
}

type Item = RealtimeTurn['items'][number];
/** A model turn: the Realtime double's record, and for one the caller interrupted, when and how much of it was heard. */
export type LiveResponseRecord = RealtimeResponseRecord & { interruptedAt?: number; heardMs?: number };
type Json = Record<string, any>;

const IN_RATE = 16000;
const OUT_RATE = 24000;
let counter = 0;
const id = (prefix: string) => `${prefix}-${(++counter).toString(36).padStart(6, '0')}`;

/** Close codes and reasons as the API sends them (a WebSocket close reason holds at most 123 bytes). */
export const LIVE_CLOSE = {
  badKey: [1007, 'API key not valid. Please pass a valid API key.'],
  badJson: [1007, 'Request contains an invalid argument.'],
  noSetup: [1007, 'Invalid JSON payload received. The first message must be setup.'],
  internal: [1011, 'Internal error encountered.'],
} as const;

export class GeminiLiveConnection {
  readonly index: number;
  readonly headers: IncomingMessage['headers'];
  /** The key the client sent (the SDK's `?key=`, or the header), null when none. */
  readonly key: string | null;
  /** The client's setup message (`setup`), once received. */
  setup: Json | null = null;
  /** Client message kinds received, in order (audio chunks counted in `audioChunks`). */
  readonly received: string[] = [];
  audioChunks = 0;
  /** Server message kinds sent, in order (audio parts counted in `audioParts`). */
  readonly sent: string[] = [];
  audioParts = 0;
  readonly responses: (LiveResponseRecord)[] = [];
  /** Tool responses received: the call id, the function and its response. */
  readonly toolResponses: { id: string; name: string; response: unknown }[] = [];
  readonly items: Item[] = [];
  /** Caller audio received (ms), and the close the double sent, if any. */
  audioMs = 0;
  closedWith: { code: number; reason: string } | null = null;
  closed = false;
  readonly #ws: WsConnection;
  readonly #opts: Required<Omit<GeminiLiveOptions, 'apiKeys'>>;
  readonly #script: GeminiLiveScript;
  readonly #random: () => number;
  readonly #windows = new Pcm16Windows(IN_RATE / 100);
  #speaking = false;
  #activity = false;
  #speechMs = 0;
  #lastSpeechAt = 0;
  #userTurns = 0;
  /** Wall-clock time the model's last audio would end playing at the client (real time), for interruptions. */
  #playoutEndsAt = 0;
  #lastSpoken: LiveResponseRecord | null = null;
  #active: { record: LiveResponseRecord; cancel: (reason: string) => void; streaming: boolean; instructions: string[] } | null = null;
  #finishing: Promise<void> = Promise.resolve();

  constructor(ws: WsConnection, req: IncomingMessage, key: string | null, index: number, opts: GeminiLiveOptions, script: GeminiLiveScript) {
    this.#ws = ws;
    this.index = index;
    this.headers = req.headers;
    this.key = key;
    this.#opts = { firstAudioMs: opts.firstAudioMs ?? [300, 500], seed: opts.seed ?? 54, pace: opts.pace ?? 4, silenceMs: opts.silenceMs ?? 500, speechRms: opts.speechRms ?? 300 };
    this.#random = seededRandom(this.#opts.seed + index);
    this.#script = script;
    ws.on('message', (data) => this.#onMessage(data.toString('utf8')));
    ws.on('close', () => {
      this.closed = true;
      this.#active?.cancel('client_disconnected');
    });
    // The API takes the upgrade, then closes with the reason (the SDK's onclose is where errors surface).
    if (!key || (opts.apiKeys && !opts.apiKeys.includes(key))) this.#close(...LIVE_CLOSE.badKey);
  }

  terminate(): void {
    this.#ws.terminate();
  }

  /** The conversation's messages in order: the caller's transcribed turns, client turns and the model's words. */
  transcript(): { role: string; text: string }[] {
    return this.items.filter((i) => i.type === 'message').map((i) => ({ role: i.role ?? '', text: i.text ?? '' }));
  }

  /** True when the setup turned Gemini's automatic activity detection off (the client sends activity start and end). */
  get manualActivity(): boolean {
    return this.setup?.realtimeInputConfig?.automaticActivityDetection?.disabled === true;
  }

  get #silenceMs(): number {
    return Number(this.setup?.realtimeInputConfig?.automaticActivityDetection?.silenceDurationMs ?? this.#opts.silenceMs);
  }

  /** The API sends JSON in binary frames. */
  #send(message: Json): void {
    if (this.closed) return;
    this.#ws.send(Buffer.from(JSON.stringify(message), 'utf8'));
    const kind = message.serverContent ? Object.keys(message.serverContent).join('+') : Object.keys(message).join('+');
    if (message.serverContent?.modelTurn) this.audioParts++;
    else this.sent.push(kind);
  }

  #close(code: number, reason: string): void {
    if (this.closed) return;
    this.closedWith = { code, reason };
    this.#active?.cancel('closed');
    this.#ws.close(code, reason);
    this.closed = true;
  }

  #onMessage(text: string): void {
    let m: Json;
    try {
      m = JSON.parse(text) as Json;
    } catch {
      return this.#close(...LIVE_CLOSE.badJson);
    }
    const kind = Object.keys(m)[0] ?? '';
    if (!(kind === 'realtimeInput' && (m.realtimeInput.audio || m.realtimeInput.mediaChunks))) this.received.push(kind === 'realtimeInput' ? `realtimeInput.${Object.keys(m.realtimeInput)[0]}` : kind);
    if (!this.setup && kind !== 'setup') return this.#close(...LIVE_CLOSE.noSetup);
    switch (kind) {
      case 'setup':
        return this.#onSetup(m.setup ?? {});
      case 'realtimeInput':
        return this.#onRealtimeInput(m.realtimeInput ?? {});
      case 'clientContent':
        return this.#onClientContent(m.clientContent ?? {});
      case 'toolResponse':
        return this.#onToolResponse(m.toolResponse ?? {});
      default:
        return this.#close(1007, `Invalid JSON payload received. Unknown name "${kind.slice(0, 40)}": Cannot find field.`);
    }
  }

  #onSetup(setup: Json): void {
    if (this.setup) return this.#close(1007, 'Request contains an invalid argument. Setup may be sent only once.');
    const model = String(setup.model ?? '');
    // Live models only: a text model is not served over BidiGenerateContent.
    if (!/^models\/\S*(live|native-audio|flash-exp)/.test(model)) {
      return this.#close(1008, `${model || 'models/'} is not found for API version v1beta, or is not supported for bidiGenerateContent.`.slice(0, 123));
    }
    const modalities: string[] = setup.generationConfig?.responseModalities ?? ['AUDIO'];
    if (!modalities.every((x) => x === 'AUDIO')) return this.#close(1007, 'Request contains an invalid argument. Only the AUDIO response modality is supported.');
    this.setup = setup;
    this.#send({ setupComplete: {} });
  }

  #onRealtimeInput(input: Json): void {
    const chunks: Json[] = input.audio ? [input.audio] : (input.mediaChunks ?? []);
    for (const chunk of chunks) {
      this.audioChunks++;
      const mime = String(chunk.mimeType ?? '');
      const rate = Number(/rate=(\d+)/.exec(mime)?.[1] ?? IN_RATE);
      if (!mime.startsWith('audio/pcm') || rate !== IN_RATE) return this.#close(1007, 'Request contains an invalid argument. Audio must be audio/pcm at 16000 Hz.');
      this.#onAudio(Buffer.from(String(chunk.data ?? ''), 'base64'));
    }
    if (input.activityStart) {
      if (!this.manualActivity) return this.#close(1007, 'Request contains an invalid argument. activityStart requires automatic activity detection to be disabled.');
      this.#startActivity();
    }
    if (input.activityEnd) {
      if (!this.manualActivity) return this.#close(1007, 'Request contains an invalid argument. activityEnd requires automatic activity detection to be disabled.');
      if (this.#activity) this.#endTurn();
    }
    if (typeof input.text === 'string' && input.text) {
      this.items.push({ type: 'message', role: 'user', text: input.text });
      this.#respondAfter();
    }
  }

  #onAudio(buf: Buffer): void {
    for (const w of this.#windows.push(buf)) {
      const ms = (w.samples / IN_RATE) * 1000;
      this.audioMs += ms;
      if (this.manualActivity) {
        // The client says when the caller speaks; the audio only counts.
        if (this.#activity && w.rms > this.#opts.speechRms) this.#speechMs += ms;
        continue;
      }
      if (w.rms > this.#opts.speechRms) {
        this.#speechMs += ms;
        this.#lastSpeechAt = this.audioMs;
        if (!this.#speaking) {
          this.#speaking = true;
          this.#startActivity();
        }
      } else if (this.#speaking && this.audioMs - this.#lastSpeechAt >= this.#silenceMs) {
        this.#speaking = false;
        this.#endTurn();
      }
    }
  }

  /** The caller starts speaking: a model turn still going (or still playing at the client) is interrupted. */
  #startActivity(): void {
    this.#activity = true;
    this.#speechMs = 0;
    if (this.setup?.realtimeInputConfig?.activityHandling === 'NO_INTERRUPTION') return;
    if (this.#active) this.#active.cancel('interrupted');
    else if (Date.now() < this.#playoutEndsAt) {
      this.#playoutEndsAt = 0;
      const spoken = this.#lastSpoken;
      if (spoken?.firstAudioAt !== undefined) Object.assign(spoken, { interruptedAt: Date.now(), heardMs: Date.now() - spoken.firstAudioAt });
      this.#send({ serverContent: { interrupted: true } });
    }
  }

  /** The caller's turn ends: its words (the input transcription), then the model's turn. */
  #endTurn(): void {
    this.#activity = false;
    const speechMs = this.#speechMs;
    this.#speechMs = 0;
    if (speechMs <= 0) return;
    const words = this.#script.transcriber()({ connection: this.index, index: this.#userTurns++, speechMs });
    this.items.push({ type: 'message', role: 'user', text: words });
    if (this.setup?.inputAudioTranscription) for (const piece of words.match(/\S+\s*/g) ?? []) this.#send({ serverContent: { inputTranscription: { text: piece } } });
    this.#respondAfter();
  }

  #onClientContent(content: Json): void {
    const instructions: string[] = [];
    for (const turn of (content.turns ?? []) as Json[]) {
      const text = ((turn.parts ?? []) as Json[]).map((p) => p.text ?? '').join('');
      const role = turn.role === 'model' ? 'assistant' : 'user';
      this.items.push({ type: 'message', role, text });
      if (turn.role === 'model') instructions.push(text);
    }
    if (!content.turnComplete) return;
    // A turn already waiting for its first audio takes this one's text (the plugin ends an activity, then asks).
    if (this.#active && !this.#active.streaming) this.#active.instructions.push(...instructions);
    else this.#respondAfter(instructions);
  }

  #onToolResponse(toolResponse: Json): void {
    const responses = (toolResponse.functionResponses ?? []) as Json[];
    if (!responses.length) return this.#close(1007, 'Request contains an invalid argument. functionResponses is required.');
    for (const r of responses) {
      const call = this.items.find((i) => i.type === 'function_call' && i.call_id === r.id);
      if (!call) return this.#close(1007, `Request contains an invalid argument. Unknown function call id: ${String(r.id).slice(0, 40)}`);
      this.toolResponses.push({ id: String(r.id), name: String(r.name), response: r.response });
      const output = r.response?.output ?? r.response;
      this.items.push({ type: 'function_call_output', call_id: String(r.id), name: String(r.name), output: typeof output === 'string' ? output : JSON.stringify(output) });
    }
    // Blocking function calls: the model goes on with the results.
    this.#respondAfter();
  }

  /** A model turn, after any turn still closing (the one this very turn interrupted). */
  #respondAfter(instructions: string[] = []): void {
    this.#finishing = this.#finishing.then(() => this.#respond(instructions)).catch(() => {});
  }

  async #respond(instructions: string[]): Promise<void> {
    if (this.closed) return;
    const record: LiveResponseRecord = { id: id('turn'), index: this.responses.length, lastUser: '', text: '', toolCalls: [], status: 'in_progress', turnEndedAt: Date.now(), audioMs: 0 };
    this.responses.push(record);
    let cancelled: string | null = null;
    let wake: () => void = () => {};
    const active = {
      record,
      streaming: false,
      instructions: [...instructions],
      cancel: (reason: string) => {
        cancelled ??= reason;
        wake();
      },
    };
    this.#active = active;
    const wait = (ms: number) =>
      new Promise<void>((r) => {
        const t = setTimeout(r, ms);
        wake = () => (clearTimeout(t), r());
      });
    const [lo, hi] = this.#opts.firstAudioMs;
    await wait(lo + (hi - lo) * this.#random());
    active.streaming = true;
    const reply: RealtimeReply = cancelled ? {} : await this.#script.responder()(this.#turn(record, active.instructions));
    if (!cancelled && reply.error) {
      record.status = 'failed';
      this.#active = null;
      return this.#close(...LIVE_CLOSE.internal);
    }
    if (!cancelled && reply.text) await this.#speak(record, reply.text, wait, () => cancelled);
    const calls = !cancelled ? (reply.toolCalls ?? []) : [];
    if (calls.length) {
      const functionCalls = calls.map((c) => ({ id: id('function-call'), name: c.name, args: typeof c.arguments === 'string' ? JSON.parse(c.arguments || '{}') : c.arguments }));
      for (const fc of functionCalls) this.items.push({ type: 'function_call', name: fc.name, call_id: fc.id });
      record.toolCalls.push(...calls.map((c) => c.name));
      // The turn waits for the tool responses (blocking calls): no turnComplete until the model goes on.
      this.#send({ toolCall: { functionCalls } });
    }
    record.status = cancelled ? 'cancelled' : 'completed';
    if (cancelled) {
      record.reason = cancelled;
      if (cancelled === 'interrupted') {
        record.interruptedAt = Date.now();
        // Heard at the client: the real time since the first audio, at most what was sent.
        if (record.firstAudioAt !== undefined) record.heardMs = Math.min(record.audioMs, Date.now() - record.firstAudioAt);
        this.#send({ serverContent: { interrupted: true } });
      }
    }
    this.#active = null;
    if (calls.length) return;
    if (!cancelled) this.#send({ serverContent: { generationComplete: true } });
    const inTokens = 10 * this.items.length;
    const outTokens = Math.max(1, Math.ceil(record.audioMs / 40));
    this.#send({
      serverContent: { turnComplete: true },
      usageMetadata: {
        promptTokenCount: inTokens,
        responseTokenCount: outTokens,
        totalTokenCount: inTokens + outTokens,
        promptTokensDetails: [{ modality: 'AUDIO', tokenCount: inTokens }],
        responseTokensDetails: [{ modality: 'AUDIO', tokenCount: outTokens }],
      },
    });
  }

  #turn(record: RealtimeResponseRecord, instructions: string[]): RealtimeTurn {
    record.lastUser = [...this.items].reverse().find((i) => i.type === 'message' && i.role === 'user')?.text ?? '';
    const system = ((this.setup?.systemInstruction?.parts ?? []) as Json[]).map((p) => p.text ?? '').join('');
    const tools = ((this.setup?.tools ?? []) as Json[]).flatMap((t) => ((t.functionDeclarations ?? []) as Json[]).map((f) => String(f.name)));
    return { connection: this.index, index: record.index, lastUser: record.lastUser, items: this.items.map((i) => ({ ...i })), instructions: system, responseInstructions: instructions.length ? instructions.join('\n') : null, tools };
  }

  /**
   * The model's audio in 100 ms parts, `pace` times faster than real time, each word of the output transcription
   * with its share of the audio.
   */
  async #speak(record: RealtimeResponseRecord, text: string, wait: (ms: number) => Promise<void>, cancelled: () => string | null): Promise<void> {
    const pcm = await this.#script.speaker()(text);
    const words = text.match(/\S+\s*/g) ?? [text];
    const item: Item = { type: 'message', role: 'assistant', text: '' };
    this.items.push(item);
    const chunk = OUT_RATE / 10;
    const chunks = Math.max(1, Math.ceil(pcm.length / chunk));
    const transcribe = !!this.setup?.outputAudioTranscription;
    let said = 0;
    for (let c = 0; c < chunks && !cancelled(); c++) {
      if (c === 0) {
        record.firstAudioAt = Date.now();
        this.#lastSpoken = record;
      }
      const slice = pcm.subarray(c * chunk, (c + 1) * chunk);
      const data = Buffer.from(slice.buffer, slice.byteOffset, slice.byteLength).toString('base64');
      this.#send({ serverContent: { modelTurn: { parts: [{ inlineData: { mimeType: `audio/pcm;rate=${OUT_RATE}`, data } }] } } });
      record.audioMs += (slice.length / OUT_RATE) * 1000;
      this.#playoutEndsAt = record.firstAudioAt! + record.audioMs;
      let piece = '';
      while (said < words.length && said / words.length <= (c + 1) / chunks) piece += words[said++];
      if (piece) {
        record.text += piece;
        item.text = record.text;
        if (transcribe) this.#send({ serverContent: { outputTranscription: { text: piece } } });
      }
      if (c + 1 < chunks) await wait(100 / this.#opts.pace);
    }
    if (!item.text) this.items.splice(this.items.indexOf(item), 1);
  }
}
