// A local stand-in for Deepgram's streaming speech-to-text (WebSocket /v1/listen), speaking the protocol as
// @livekit/agents-plugin-deepgram 1.9 uses it: query parameters (encoding=linear16, sample_rate, channels,
// interim_results, vad_events...), `Authorization: Token <key>`, binary linear16 audio, the KeepAlive,
// Finalize and CloseStream messages in, and SpeechStarted, Results (is_final / speech_final) and Metadata
// out. It hears speech by energy in the audio it receives and times its messages like the real service: an
// interim while speech runs, and a final once the audio holds `finalDelayMs` of silence after the last speech
// (150-300 ms in practice): the endpoint is on the audio's clock, so a sender that stalls does not cut a word.
//
// The words come from labels, not recognition: each connection has a queue of scripts (one per utterance
// the caller will speak), each a list of segments with their offsets in the utterance. A script's words are
// released as the audio reaches them (the speech time since the utterance's first speech), so a pause
// mid-sentence yields a final with the words before it, as Deepgram's endpointing does. The test or bench
// that drives the caller pushes the scripts: in process (`connection.expect(...)`) or over HTTP
// (`POST /_scripts/<connection id>`). Connections are taken in arrival order (`nextConnection()`), so a rig
// that starts calls one at a time knows which connection is which call's.
//
// That is an oracle: words out before they are finished, the script's punctuation, a fixed endpoint. The realistic
// mode (`realistic` option, or setRealistic()) releases each word a drawn lag after its end, finalizes after a drawn
// silence, punctuates on its own and can mishear (realistic-stt.ts); its draws are seeded per script.
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { REALISTIC_DEFAULTS, punctuated, realisticTranscript, timedWords, type RealisticSttOptions } from './realistic-stt.ts';
import { mixSeed } from './seeded-random.ts';
import { acceptWebSocket, type WsConnection } from './ws-server.ts';
import { acceptFlux, type FluxConnection } from './fake-deepgram-flux.ts';
import { voicedSpan } from './voiced.ts';

export { REALISTIC_DEFAULTS, type RealisticSttOptions } from './realistic-stt.ts';
export type { FluxConnection } from './fake-deepgram-flux.ts';

/** A streaming connection of either API: v1 (/v1/listen, Nova) or v2 (/v2/listen, Flux: fake-deepgram-flux.ts). */
export type SttConnection = DeepgramConnection | FluxConnection;

export interface ScriptSegment {
  text: string;
  /** Offsets in the utterance (ms); only differences matter (the first segment's start is the anchor). */
  startMs: number;
  endMs: number;
}

export interface Script {
  segments: ScriptSegment[];
  /** The realistic mode's draws for this script come from this seed (with the options' seed); default: its order. */
  seed?: number;
}

export interface FakeDeepgramOptions {
  /** From the end of speech to the final transcript (default 200 ms). */
  finalDelayMs?: number;
  /** Interim results while speech runs, at most this often (default 250 ms). */
  interimIntervalMs?: number;
  /** A 10 ms window is speech above this RMS, int16 scale (default 300). */
  speechRms?: number;
  /** Keys accepted in `Authorization: Token <key>`; default: any non-empty key. */
  apiKeys?: string[];
  /**
   * A realistic STT in place of the oracle (defaults in REALISTIC_DEFAULTS): finalDelayMs and interimIntervalMs
   * are then unused. Default: none (the oracle).
   */
  realistic?: RealisticSttOptions | null;
}

export interface SentMessage {
  at: number;
  type: string;
  is_final?: boolean;
  speech_final?: boolean;
  transcript?: string;
  /** Results: ms of silence in the audio after the last speech when it was sent (a final's: its endpoint delay). */
  silence_ms?: number;
}

interface Word {
  text: string;
  /** ms from the utterance's first speech. */
  start: number;
  end: number;
  /** Realistic mode: the audio time (ms from the utterance's first speech) from which an interim may show it. */
  release?: number;
  /** Realistic mode: the draw that decides a period when the word ends a message (realistic-stt.ts, punctuated). */
  periodDraw?: number;
}

/** The utterance being heard: its words, how many were finalized and shown, and its endpoint delays. */
interface Utterance {
  words: Word[];
  finalized: number;
  /** Realistic mode: words (from `finalized`) the last interim showed. */
  shown: number;
  /** The end of the script's speech (ms from its first speech). */
  endMs: number;
  nextFinalDelay: () => number;
  /** The silence that ends the current stretch of speech (drawn as it starts). */
  finalDelay: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** No audio at all for this long after speech (beyond the final delay): the client stopped streaming. */
const STREAM_STOPPED_MS = 2000;

const bare = (w: string) => w.toLowerCase().replace(/[^\p{L}\p{N}'-]+/gu, '');

/** One client connection: its parameters, its scripts and what it sent back. */
export class DeepgramConnection {
  readonly id = randomUUID();
  readonly params: URLSearchParams;
  readonly sent: SentMessage[] = [];
  /** Messages the client sent (KeepAlive, Finalize, CloseStream). */
  readonly control: string[] = [];
  /** Audio received, in ms of audio. */
  audioMs = 0;
  /** A 10 ms window is speech above this RMS; a caller on a noisy line can have it raised above the line's noise. */
  speechRms: number;
  closed = false;

  readonly #ws: WsConnection;
  readonly #opts: OracleOptions;
  /** The realistic mode's options, or null for the oracle. */
  readonly realistic: Required<RealisticSttOptions> | null;
  /** The connection's number on its server: the default seed of its scripts, with their order. */
  readonly #index: number;
  #scriptsStarted = 0;
  readonly #requestId = randomUUID();
  readonly #rate: number;
  readonly #channels: number;
  #scripts: Script[] = [];
  /** expectNext(): the next speech starts a new utterance, even if the last one was left open. */
  #restart = false;
  /** The script being spoken. */
  #current: Utterance | null = null;
  #speaking = false;
  /** Wall-clock ms of the last speech heard (the final is timed from it). */
  #lastSpeech = 0;
  /**
   * The utterance's first speech and its last speech in audio time (ms of audio received): which words have been
   * heard is read on this clock, as a real recogniser hears the audio itself; wall-clock arrival times bunch up
   * when the sender is delayed, and a final would then miss a last word that was in the audio.
   */
  #utteranceStartAudio = 0;
  #lastSpeechAudio = 0;
  /** Audio time (s) of the current segment of speech's start, for Deepgram's start/duration fields. */
  #segmentAudioStart = 0;
  #finalTimer: NodeJS.Timeout | null = null;
  #lastInterim = 0;
  #interimText = '';
  #pending: Buffer = Buffer.alloc(0);

  constructor(ws: WsConnection, params: URLSearchParams, opts: OracleOptions, realistic: Required<RealisticSttOptions> | null = null, index = 0) {
    this.#ws = ws;
    this.params = params;
    this.#opts = opts;
    this.realistic = realistic;
    this.#index = index;
    this.speechRms = opts.speechRms;
    this.#rate = Number(params.get('sample_rate') ?? 16000);
    this.#channels = Number(params.get('channels') ?? 1);
    ws.on('message', (data, isBinary) => {
      if (isBinary) this.#onAudio(data);
      else this.#onControl(data.toString('utf8'));
    });
    ws.on('close', () => {
      this.closed = true;
      if (this.#finalTimer) clearTimeout(this.#finalTimer);
    });
  }

  /** Queues the label of the next utterance the caller will speak. */
  expect(script: Script): void {
    this.#scripts.push(script);
  }

  /**
   * The label of the next utterance, whatever came before: labels not yet heard are dropped, and an utterance
   * whose words were not all heard (the audio's energy ended early, or it was never heard as speech) is closed
   * when the next speech starts. A driver that speaks one utterance at a time uses this, so one utterance heard
   * wrongly cannot put every later label out of step with its audio.
   */
  expectNext(script: Script): void {
    this.#scripts = [script];
    this.#restart = true;
  }

  /** Scripts queued and not started yet. */
  get queued(): number {
    return this.#scripts.length;
  }

  /** Final transcripts sent, in order. */
  finals(): string[] {
    return this.sent.filter((m) => m.type === 'Results' && m.is_final && m.transcript).map((m) => m.transcript!);
  }

  #send(msg: Record<string, unknown>): void {
    if (this.closed) return;
    this.#ws.send(JSON.stringify(msg));
    const results = msg.type === 'Results' ? { is_final: msg.is_final as boolean, speech_final: msg.speech_final as boolean, transcript: (msg.channel as { alternatives: { transcript: string }[] }).alternatives[0]!.transcript, silence_ms: this.audioMs - this.#lastSpeechAudio } : {};
    this.sent.push({ at: Date.now(), type: String(msg.type), ...results });
  }

  #onControl(text: string): void {
    let msg: { type?: string };
    try {
      msg = JSON.parse(text) as { type?: string };
    } catch {
      this.#ws.close(1008, 'invalid JSON');
      return;
    }
    this.control.push(msg.type ?? '?');
    if (msg.type === 'Finalize') {
      if (this.#speaking) this.#final(true);
    } else if (msg.type === 'CloseStream') {
      if (this.#speaking) this.#final(true);
      this.#send({ type: 'Metadata', transaction_key: 'deprecated', request_id: this.#requestId, sha256: '', created: new Date().toISOString(), duration: this.audioMs / 1000, channels: this.#channels });
      this.#ws.close(1000);
    }
    // KeepAlive: nothing to do.
  }

  #onAudio(buf: Buffer): void {
    const bytesPerFrame = 2 * this.#channels;
    const data = this.#pending.length ? Buffer.concat([this.#pending, buf]) : buf;
    const usable = data.length - (data.length % bytesPerFrame);
    this.#pending = data.subarray(usable);
    const frames = usable / bytesPerFrame;
    const chunkStartAudio = this.audioMs;
    this.audioMs += (frames / this.#rate) * 1000;
    // The chunk arrived as its last sample was captured (the client streams in real time): sample i was
    // spoken (frames - i) / rate before now.
    const now = Date.now();
    const { first: firstVoiced, last: lastVoiced } = voicedSpan(data, frames, bytesPerFrame, this.#rate, this.speechRms);
    if (firstVoiced < 0) {
      // The endpoint is found in the audio, as Deepgram's is: once the audio received holds finalDelayMs of
      // silence after the last speech. A sender held up mid-word (a busy worker's event loop) only delays it.
      if (this.#speaking && this.audioMs - this.#lastSpeechAudio >= this.#finalDelay()) this.#final(false);
      else if (this.#speaking && this.realistic) this.#releaseInterim();
      return;
    }
    const ago = (i: number) => ((frames - i) / this.#rate) * 1000;
    if (!this.#speaking) {
      this.#speaking = true;
      if (this.#restart) {
        this.#restart = false;
        this.#current = null;
      }
      if (!this.#current) {
        this.#current = this.#utterance(this.#scripts.shift());
        this.#utteranceStartAudio = chunkStartAudio + (firstVoiced / this.#rate) * 1000;
      }
      this.#current.finalDelay = this.#current.nextFinalDelay();
      this.#segmentAudioStart = (chunkStartAudio + (firstVoiced / this.#rate) * 1000) / 1000;
      this.#send({ type: 'SpeechStarted', channel: [0, 1], timestamp: this.#segmentAudioStart });
    }
    this.#lastSpeech = now - ago(lastVoiced);
    this.#lastSpeechAudio = chunkStartAudio + (lastVoiced / this.#rate) * 1000;
    // Only for a client that stops streaming altogether (Deepgram would wait for more audio or a Finalize).
    if (this.#finalTimer) clearTimeout(this.#finalTimer);
    this.#finalTimer = setTimeout(() => this.#final(false), Math.max(0, this.#lastSpeech + this.#finalDelay() + STREAM_STOPPED_MS - Date.now()));
    if (this.realistic) this.#releaseInterim();
    else if (now - this.#lastInterim >= this.#opts.interimIntervalMs) this.#interim();
  }

  /** A new utterance: the oracle's words as scripted, or what the realistic mode makes of them. */
  #utterance(script: Script | undefined): Utterance {
    const segments = script?.segments ?? [];
    if (this.realistic) {
      const seed = mixSeed(this.realistic.seed, script?.seed ?? mixSeed(this.#index, this.#scriptsStarted++));
      const t = realisticTranscript(segments, this.realistic, seed);
      return { words: t.words, finalized: 0, shown: 0, endMs: t.endMs, nextFinalDelay: t.nextFinalDelay, finalDelay: 0 };
    }
    const words = timedWords(segments);
    // Read at each stretch of speech: setFinalDelay() applies to the next one.
    return { words, finalized: 0, shown: 0, endMs: words.at(-1)?.end ?? 0, nextFinalDelay: () => this.#opts.finalDelayMs, finalDelay: this.#opts.finalDelayMs };
  }

  /** The silence (ms of audio) after the last speech that ends the current stretch with a final. */
  #finalDelay(): number {
    return this.#current?.finalDelay ?? this.#opts.finalDelayMs;
  }

  /**
   * Realistic interims: the words whose release time the audio has reached, in order (a prefix of those not yet
   * finalized), sent as soon as one more is due: the lag is the drawn one, not an interval's.
   */
  #releaseInterim(): void {
    const cur = this.#current;
    if (!cur) return;
    const clock = this.audioMs - this.#utteranceStartAudio;
    let upto = cur.finalized;
    while (upto < cur.words.length && cur.words[upto]!.release! <= clock) upto++;
    if (upto - cur.finalized <= cur.shown) return;
    cur.shown = upto - cur.finalized;
    this.#send(this.#results(cur.words.slice(cur.finalized, upto), false, false, false));
  }

  /** Words of the current script heard so far (their end reached), not yet finalized. */
  #heard(all: boolean): Word[] {
    const cur = this.#current;
    if (!cur) return [];
    const elapsed = this.#lastSpeechAudio - this.#utteranceStartAudio;
    // Within 120 ms of a word's end counts as heard: a chunk's edges and espeak's trailing fade.
    const upto = all ? cur.words.length : cur.words.findIndex((w) => w.end > elapsed + 120);
    return cur.words.slice(cur.finalized, upto < 0 ? cur.words.length : upto);
  }

  #results(heard: Word[], isFinal: boolean, speechFinal: boolean, fromFinalize: boolean): Record<string, unknown> {
    const base = this.#segmentAudioStart;
    // Realistic: the period decided now, from the words so far and the silence so far (none while speech goes on).
    const words = this.realistic ? punctuated(heard, this.audioMs - this.#lastSpeechAudio, this.realistic) : heard;
    // Word times are from the utterance's first speech. (The oracle adds them to the stretch's start, which puts a
    // later stretch's words late; kept as it was, the realistic mode reads them from the utterance's start.)
    const wordBase = this.realistic ? this.#utteranceStartAudio / 1000 : base;
    const transcript = words.map((w) => w.text).join(' ');
    // start + duration: the audio received when the message was sent (the realistic tests read the lag from it).
    const duration = Math.max(0, this.audioMs / 1000 - base);
    return {
      type: 'Results',
      channel_index: [0, 1],
      duration,
      start: base,
      is_final: isFinal,
      speech_final: speechFinal,
      from_finalize: fromFinalize,
      channel: {
        alternatives: [
          {
            transcript,
            confidence: words.length ? 0.99 : 0,
            words: words.map((w) => ({ word: bare(w.text), start: wordBase + w.start / 1000, end: wordBase + w.end / 1000, confidence: 0.99, punctuated_word: w.text })),
          },
        ],
      },
      metadata: { request_id: this.#requestId, model_info: { name: 'general-nova-3', version: 'stand-in', arch: 'nova-3' }, model_uuid: 'stand-in' },
    };
  }

  #interim(): void {
    const words = this.#heard(false);
    const text = words.map((w) => w.text).join(' ');
    this.#lastInterim = Date.now();
    if (!text || text === this.#interimText) return;
    this.#interimText = text;
    this.#send(this.#results(words, false, false, false));
  }

  /** The end of a stretch of speech: the words heard so far as a final, and the endpoint. */
  #final(fromFinalize: boolean): void {
    if (this.#finalTimer) clearTimeout(this.#finalTimer);
    this.#finalTimer = null;
    if (!this.#speaking) return;
    this.#speaking = false;
    this.#interimText = '';
    const cur = this.#current;
    const elapsed = this.#lastSpeechAudio - this.#utteranceStartAudio;
    // The last segment heard to its end (a word's tolerance) closes the utterance: all its words go out.
    const done = !cur || cur.words.length === 0 || elapsed + 250 >= cur.endMs;
    const words = this.#heard(done);
    if (cur) {
      cur.finalized += words.length;
      cur.shown = 0;
    }
    this.#send(this.#results(words, true, true, fromFinalize));
    if (done) this.#current = null;
  }
}

export interface FakeDeepgram {
  /** Base URL for the plugin's `baseUrl` (ws://127.0.0.1:<port>); the HTTP side endpoint shares it. */
  url: string;
  httpUrl: string;
  connections: DeepgramConnection[];
  /** Flux (v2) connections, in arrival order. */
  fluxConnections: FluxConnection[];
  /** The oldest v1 connection not yet taken, waiting for one if none is there. */
  nextConnection(timeoutMs?: number): Promise<DeepgramConnection>;
  /** The oldest Flux (v2) connection not yet taken. */
  nextFluxConnection(timeoutMs?: number): Promise<FluxConnection>;
  /** The oldest connection of either API not yet taken (a rig whose agents may use either). */
  nextAnyConnection(timeoutMs?: number): Promise<SttConnection>;
  setFinalDelay(ms: number): void;
  /** The mode of the connections made from now on: realistic with these options (over the defaults), or the oracle (null). */
  setRealistic(options: RealisticSttOptions | null): void;
  /** The speech threshold of the connections made from now on (each can change its own: `speechRms`). */
  setSpeechRms(rms: number): void;
  close(): Promise<void>;
}

type OracleOptions = Required<Pick<FakeDeepgramOptions, 'finalDelayMs' | 'interimIntervalMs' | 'speechRms'>>;

const realisticOptions = (o: RealisticSttOptions | null | undefined): Required<RealisticSttOptions> | null => (o ? { ...REALISTIC_DEFAULTS, ...o } : null);

export async function startFakeDeepgram(options: FakeDeepgramOptions = {}): Promise<FakeDeepgram> {
  const opts: OracleOptions = { finalDelayMs: options.finalDelayMs ?? 200, interimIntervalMs: options.interimIntervalMs ?? 250, speechRms: options.speechRms ?? 300 };
  let realistic = realisticOptions(options.realistic);
  const connections: DeepgramConnection[] = [];
  const fluxConnections: FluxConnection[] = [];
  // Connections of both APIs in arrival order; a waiter takes the first its filter accepts.
  const untaken: SttConnection[] = [];
  const waiters: { accepts: (c: SttConnection) => boolean; take: (c: SttConnection) => void }[] = [];
  const offer = (conn: SttConnection) => {
    const w = waiters.findIndex((x) => x.accepts(conn));
    if (w >= 0) waiters.splice(w, 1)[0]!.take(conn);
    else untaken.push(conn);
  };
  const isV1 = (c: SttConnection): c is DeepgramConnection => c instanceof DeepgramConnection;
  async function next<C extends SttConnection>(accepts: (c: SttConnection) => c is C, timeoutMs: number, what: string): Promise<C> {
    const i = untaken.findIndex(accepts);
    if (i >= 0) return untaken.splice(i, 1)[0] as C;
    let waiter!: { accepts: (c: SttConnection) => boolean; take: (c: SttConnection) => void };
    const got = new Promise<C>((r) => (waiter = { accepts, take: (c) => r(c as C) }));
    waiters.push(waiter);
    const res = await Promise.race([got, sleep(timeoutMs).then(() => null)]);
    if (!res) {
      waiters.splice(waiters.indexOf(waiter), 1);
      throw new Error(`no Deepgram ${what}connection within ${timeoutMs} ms`);
    }
    return res;
  }

  const server = http.createServer((req, res) => {
    // Side endpoint for a driver in another process: POST /_scripts/<id> {segments:[...]}; GET /_connections.
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET' && url.pathname === '/_connections') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(connections.map((c) => ({ id: c.id, closed: c.closed, queued: c.queued }))));
      return;
    }
    const m = /^\/_scripts\/([\w-]+)$/.exec(url.pathname);
    if (req.method === 'POST' && m) {
      const conn = connections.find((c) => c.id === m[1]);
      let body = '';
      req.on('data', (d: Buffer) => (body += d));
      req.on('end', () => {
        if (!conn) return void res.writeHead(404).end();
        try {
          conn.expect(JSON.parse(body) as Script);
          res.writeHead(204).end();
        } catch {
          res.writeHead(400).end();
        }
      });
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ err_code: 'NOT_FOUND', err_msg: 'not found' }));
  });

  const sockets = new Set<WsConnection>();
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const key = /^Token (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const reject = (status: number, text: string) => {
      socket.end(`HTTP/1.1 ${status} ${text}\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n${JSON.stringify({ err_code: text, err_msg: text })}`);
    };
    if (url.pathname === '/v2/listen') {
      const flux = acceptFlux(req, socket, head, { key, apiKeys: options.apiKeys, speechRms: opts.speechRms, realistic, index: fluxConnections.length });
      if (flux) {
        fluxConnections.push(flux);
        offer(flux);
      }
      return;
    }
    if (url.pathname !== '/v1/listen') return reject(404, 'Not Found');
    if (!key || (options.apiKeys && !options.apiKeys.includes(key))) return reject(401, 'Unauthorized');
    if (url.searchParams.get('encoding') !== 'linear16' || !Number(url.searchParams.get('sample_rate'))) return reject(400, 'Bad Request');
    const ws = acceptWebSocket(req, socket, head);
    sockets.add(ws);
    ws.on('close', () => sockets.delete(ws));
    const conn = new DeepgramConnection(ws, url.searchParams, opts, realistic, connections.length);
    connections.push(conn);
    offer(conn);
  });

  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    httpUrl: `http://127.0.0.1:${port}`,
    connections,
    fluxConnections,
    nextConnection: (timeoutMs = 30_000) => next(isV1, timeoutMs, ''),
    nextFluxConnection: (timeoutMs = 30_000) => next((c): c is FluxConnection => !isV1(c), timeoutMs, 'Flux '),
    nextAnyConnection: (timeoutMs = 30_000) => next((_c): _c is SttConnection => true, timeoutMs, ''),
    setFinalDelay(ms: number) {
      opts.finalDelayMs = ms;
    },
    setRealistic(o: RealisticSttOptions | null) {
      realistic = realisticOptions(o);
    },
    setSpeechRms(rms: number) {
      opts.speechRms = rms;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const c of sockets) c.terminate();
        for (const c of fluxConnections) c.terminate();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
