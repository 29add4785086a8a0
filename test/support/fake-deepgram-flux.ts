// A local stand-in for Deepgram Flux (WebSocket /v2/listen), speaking the v2 protocol as Deepgram documents it and
// as @livekit/agents-plugin-deepgram 1.9's STTv2 uses it: query parameters (model, encoding=linear16, sample_rate,
// eot_threshold, eager_eot_threshold, eot_timeout_ms...), `Authorization: Token <key>`, binary linear16 audio and
// the CloseStream / ForceEndTurn messages in; Connected, then TurnInfo messages out (event StartOfTurn, Update,
// EagerEndOfTurn, TurnResumed, EndOfTurn; turn_index, audio_window_start/end, transcript, words with
// confidence, end_of_turn_confidence, request_id and sequence_id). Served by the Deepgram stand-in's own server
// (fake-deepgram.ts), so the base-URL override that reaches v1 reaches it too.
//
// Its turn state machine is Deepgram's: StartOfTurn once a word is transcribed; Updates every 250 ms of audio;
// with eager_eot_threshold set, EagerEndOfTurn when the end-of-turn confidence reaches it, then TurnResumed if
// speech comes back, or EndOfTurn (with the eager transcript) once the confidence reaches eot_threshold or the
// silence eot_timeout_ms. The words come from labels (scripts, as the v1 stand-in's), released a drawn lag after
// each word's end and timed on the audio's clock; the Eager/EndOfTurn transcript holds every word heard.
//
// Its END-OF-TURN RULE IS A STAND-IN, NOT FLUX'S MODEL. It decides from what a recogniser has at that moment,
// never from the label's future: the silence so far and the last word heard. The confidence grows with the
// silence and reaches 0.7 (Deepgram's default threshold) after a silence drawn like the v1 stand-in's realistic
// final delay (100-400 ms; Deepgram's own figure for Flux is about 260 ms at the median); after a word that leaves
// the sentence open ("for", "the", "and", "um"...) it stops at 0.6, so such a pause gives an EagerEndOfTurn and
// only the timeout ends it. This proves the wiring and the timing of a client, not Flux's judgement: a cut-off rate
// measured through this double is this rule's, never Flux's.
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { REALISTIC_DEFAULTS, timedWords, unpunctuated, type RealisticSttOptions } from './realistic-stt.ts';
import { mixSeed, seededRandom, uniform } from './seeded-random.ts';
import { voicedSpan } from './voiced.ts';
import { acceptWebSocket, type WsConnection } from './ws-server.ts';

/** The label of an utterance (fake-deepgram.ts's Script). */
export interface FluxScript {
  segments: { text: string; startMs: number; endMs: number }[];
  seed?: number;
}

export const FLUX_MODELS = ['flux-general-en', 'flux-general-multi'] as const;

/** The confidence a finished-sounding turn reaches after its drawn silence: Deepgram's default eot_threshold. */
const CLOSED_AT = 0.7;
/** The most an open last word's pause reaches: over an eager threshold of 0.5, under 0.7. */
const OPEN_CAP = 0.6;
/** Words after which a sentence is not finished. */
const OPEN_WORDS = new Set(
  'a an the and or but so because for to of in on at with from by about into than as if that which who my your our their his her its is are was were be am i um uh er erm like'.split(' '),
);
/** Messages carry what the audio has reached at least this often (Deepgram: about every 0.25 s of audio). */
const UPDATE_EVERY_MS = 250;
/** Silence shorter than this is inside speech (a stop consonant, a breath between words): no turn event in it. */
const GAP_MS = 100;
/** Within this of a word's end the word counts as heard (a chunk's edges, espeak's trailing fade). */
const HEARD_TOLERANCE_MS = 120;

export interface FluxParams {
  model: string;
  sampleRate: number;
  eotThreshold: number;
  eagerThreshold: number | null;
  eotTimeoutMs: number;
}

/** The handshake's parameters as Deepgram checks them; a string is the 400's reason. */
export function fluxParams(q: URLSearchParams): FluxParams | string {
  const model = q.get('model') ?? '';
  if (!(FLUX_MODELS as readonly string[]).includes(model)) return `model must be one of ${FLUX_MODELS.join(', ')}`;
  if (q.get('encoding') !== 'linear16') return 'encoding must be linear16';
  const sampleRate = Number(q.get('sample_rate'));
  if (![8000, 16000, 24000, 44100, 48000].includes(sampleRate)) return 'unsupported sample_rate';
  const num = (name: string, fallback: number | null, min: number, max: number): number | null | string => {
    const v = q.get(name);
    if (v === null) return fallback;
    const n = Number(v);
    return Number.isFinite(n) && n >= min && n <= max ? n : `${name} must be between ${min} and ${max}`;
  };
  const eot = num('eot_threshold', 0.7, 0.5, 1);
  const eager = num('eager_eot_threshold', null, 0.3, 0.9);
  const timeout = num('eot_timeout_ms', 5000, 500, 60000);
  for (const v of [eot, eager, timeout]) if (typeof v === 'string') return v;
  if (eager !== null && (eager as number) > (eot as number)) return 'eager_eot_threshold must not exceed eot_threshold';
  return { model, sampleRate, eotThreshold: eot as number, eagerThreshold: eager as number | null, eotTimeoutMs: timeout as number };
}

/** A message the stand-in sent, as tests read it. */
export interface FluxSent {
  /** Date.now() when sent, and the audio received by then (ms). */
  at: number;
  audioMs: number;
  type: 'Connected' | 'TurnInfo' | 'Error';
  event?: string;
  transcript?: string;
  confidence?: number;
  turnIndex?: number;
}

interface Word {
  text: string;
  /** ms from the utterance's first speech. */
  end: number;
  /** The audio time (ms from the utterance's first speech) from which an Update may show it. */
  release: number;
}

interface Utterance {
  words: Word[];
  /** Words already in a turn that ended. */
  finalized: number;
  endMs: number;
  /** The silence (ms) at which a finished-sounding turn reaches CLOSED_AT, drawn per stretch of speech. */
  nextEndSilence: () => number;
}

type State = 'idle' | 'ongoing' | 'eager';

/** One client connection: its parameters, its scripts and what it sent back. */
export class FluxConnection extends EventEmitter<{ sent: [FluxSent] }> {
  readonly id = randomUUID();
  readonly params: URLSearchParams;
  readonly flux: FluxParams;
  /** The key the client authenticated with (`Authorization: Token <key>`). */
  readonly key: string;
  readonly sent: FluxSent[] = [];
  /** Text messages the client sent (CloseStream, ForceEndTurn...). */
  readonly control: string[] = [];
  audioMs = 0;
  speechRms: number;
  closed = false;

  readonly #ws: WsConnection;
  readonly #timing: Required<RealisticSttOptions>;
  readonly #index: number;
  readonly #requestId = randomUUID();
  #sequence = 0;
  #scriptsStarted = 0;
  #scripts: FluxScript[] = [];
  #restart = false;
  #current: Utterance | null = null;
  #utteranceStartAudio = 0;
  #lastSpeechAudio = 0;
  #speaking = false;
  #endSilence = 300;
  #state: State = 'idle';
  #turnIndex = 0;
  #turnStartAudio = 0;
  /** Words of the turn from utterances the turn began in before a new script restarted it. */
  #carried: string[] = [];
  #eagerTranscript = '';
  /** How many of the current utterance's words the last EagerEndOfTurn of the turn held. */
  #eagerWords = 0;
  #lastMessageAudio = 0;
  #pending: Buffer = Buffer.alloc(0);

  constructor(ws: WsConnection, params: URLSearchParams, flux: FluxParams, opts: { key: string; speechRms: number; timing: Required<RealisticSttOptions>; index: number }) {
    super();
    this.#ws = ws;
    this.params = params;
    this.flux = flux;
    this.key = opts.key;
    this.speechRms = opts.speechRms;
    this.#timing = opts.timing;
    this.#index = opts.index;
    ws.on('message', (data, isBinary) => {
      if (isBinary) this.#onAudio(data);
      else this.#onControl(data.toString('utf8'));
    });
    ws.on('close', () => {
      this.closed = true;
    });
    this.#send({ type: 'Connected', request_id: this.#requestId });
  }

  /** Queues the label of the next utterance the caller will speak. */
  expect(script: FluxScript): void {
    this.#scripts.push(script);
  }

  /** The label of the next utterance, whatever came before (fake-deepgram.ts's expectNext). */
  expectNext(script: FluxScript): void {
    this.#scripts = [script];
    this.#restart = true;
  }

  get queued(): number {
    return this.#scripts.length;
  }

  /** Drops the socket (the stand-in's server closing). */
  terminate(): void {
    this.#ws.terminate();
  }

  /** EndOfTurn transcripts, in order. */
  finals(): string[] {
    return this.sent.filter((m) => m.event === 'EndOfTurn' && m.transcript).map((m) => m.transcript!);
  }

  /** The events sent, in order (Updates left out unless asked for). */
  events(withUpdates = false): string[] {
    return this.sent.filter((m) => m.event && (withUpdates || m.event !== 'Update')).map((m) => m.event!);
  }

  #send(msg: Record<string, unknown>): void {
    if (this.closed) return;
    const out = { ...msg, sequence_id: this.#sequence++ };
    this.#ws.send(JSON.stringify(out));
    const sent: FluxSent = {
      at: Date.now(),
      audioMs: this.audioMs,
      type: msg.type as FluxSent['type'],
      ...(msg.type === 'TurnInfo' ? { event: msg.event as string, transcript: msg.transcript as string, confidence: msg.end_of_turn_confidence as number, turnIndex: msg.turn_index as number } : {}),
    };
    this.sent.push(sent);
    this.emit('sent', sent);
  }

  #turnInfo(event: string, words: string[], confidence: number): void {
    this.#lastMessageAudio = this.audioMs;
    const text = words.join(' ');
    this.#send({
      type: 'TurnInfo',
      request_id: this.#requestId,
      event,
      turn_index: this.#turnIndex,
      audio_window_start: (this.#state === 'idle' && event === 'Update' ? this.audioMs : this.#turnStartAudio) / 1000,
      audio_window_end: this.audioMs / 1000,
      transcript: text,
      words: words.map((w) => ({ word: w, confidence: 0.97 })),
      end_of_turn_confidence: Math.round(confidence * 1000) / 1000,
      ...(this.flux.model === 'flux-general-multi' ? { languages: ['en'], languages_hinted: this.params.getAll('language_hint') } : {}),
    });
  }

  #onControl(text: string): void {
    let msg: { type?: string };
    try {
      msg = JSON.parse(text) as { type?: string };
    } catch {
      this.#send({ type: 'Error', code: 'INVALID_MESSAGE', description: 'message is not JSON' });
      this.#ws.close(1008, 'invalid JSON');
      return;
    }
    this.control.push(msg.type ?? '?');
    if (msg.type === 'ForceEndTurn') {
      if (this.#state !== 'idle') this.#endTurn();
    } else if (msg.type === 'CloseStream') {
      // The turn in progress ends on what was transcribed, then the stream closes.
      if (this.#state !== 'idle') this.#endTurn();
      this.#ws.close(1000);
    }
  }

  #onAudio(buf: Buffer): void {
    const data = this.#pending.length ? Buffer.concat([this.#pending, buf]) : buf;
    const usable = data.length - (data.length % 2);
    this.#pending = data.subarray(usable);
    const frames = usable / 2;
    const rate = this.flux.sampleRate;
    const chunkStart = this.audioMs;
    this.audioMs += (frames / rate) * 1000;
    const { first: firstVoiced, last: lastVoiced } = voicedSpan(data, frames, 2, rate, this.speechRms);
    if (firstVoiced >= 0) this.#onSpeech(chunkStart + (firstVoiced / rate) * 1000, chunkStart + (lastVoiced / rate) * 1000);
    else if (this.#speaking && this.audioMs - this.#lastSpeechAudio >= GAP_MS) this.#speaking = false;
    this.#advance();
  }

  /** Speech in this chunk, from `from` to `to` (audio ms). */
  #onSpeech(from: number, to: number): void {
    if (!this.#speaking) {
      this.#speaking = true;
      const cur = this.#current;
      if (this.#restart || !cur || cur.finalized >= cur.words.length) {
        if (this.#restart && cur && this.#state !== 'idle') this.#carried.push(...this.#heard(false).map((w) => w.text));
        this.#restart = false;
        this.#current = this.#utterance(this.#scripts.shift());
        this.#utteranceStartAudio = from;
      }
      this.#endSilence = this.#current!.nextEndSilence();
      // Speech after an eager end of turn: the turn goes on.
      if (this.#state === 'eager') {
        this.#state = 'ongoing';
        this.#turnInfo('TurnResumed', this.#turnWords(this.#released()), this.#confidence(0));
      }
    }
    this.#lastSpeechAudio = to;
  }

  #utterance(script: FluxScript | undefined): Utterance {
    const seed = mixSeed(this.#timing.seed, script?.seed ?? mixSeed(this.#index, this.#scriptsStarted++));
    const lagRnd = seededRandom(mixSeed(seed, 11));
    const endRnd = seededRandom(mixSeed(seed, 12));
    const segments = script?.segments ?? [];
    const words: Word[] = [];
    for (const w of timedWords(segments)) {
      const text = unpunctuated(w.text);
      if (text) words.push({ text, end: w.end, release: w.end + uniform(lagRnd, this.#timing.interimLagMs) });
    }
    for (let i = 1; i < words.length; i++) words[i]!.release = Math.max(words[i]!.release, words[i - 1]!.release);
    const anchor = segments[0]?.startMs ?? 0;
    return { words, finalized: 0, endMs: segments.length ? segments.at(-1)!.endMs - anchor : 0, nextEndSilence: () => uniform(endRnd, this.#timing.finalDelayMs) };
  }

  /**
   * Words of the current utterance not yet in an ended turn whose release the audio has reached, and at least
   * those an EagerEndOfTurn already gave (Flux's transcript is the turn's as if it ended now).
   */
  #released(): string[] {
    const cur = this.#current;
    if (!cur) return [];
    const clock = this.audioMs - this.#utteranceStartAudio;
    let upto = Math.min(cur.words.length, cur.finalized + this.#eagerWords);
    while (upto < cur.words.length && cur.words[upto]!.release <= clock) upto++;
    return cur.words.slice(cur.finalized, upto).map((w) => w.text);
  }

  /** Words of the current utterance heard to their end and not yet in an ended turn (all of them once it was heard through). */
  #heard(all: boolean): Word[] {
    const cur = this.#current;
    if (!cur) return [];
    const elapsed = this.#lastSpeechAudio - this.#utteranceStartAudio;
    const rest = cur.words.slice(cur.finalized);
    return all ? rest : rest.filter((w) => w.end <= elapsed + HEARD_TOLERANCE_MS);
  }

  /** The utterance has been heard through: its last segment reached its end (with a word's tolerance). */
  #heardThrough(): boolean {
    const cur = this.#current;
    return !cur || this.#lastSpeechAudio - this.#utteranceStartAudio + 250 >= cur.endMs;
  }

  #turnWords(words: string[]): string[] {
    return [...this.#carried, ...words];
  }

  /** The turn's transcript at its (eager) end: every word heard, written as a sentence. */
  #endWords(): string[] {
    const words = this.#turnWords(this.#heard(this.#heardThrough()).map((w) => w.text));
    return words.map((w, i) => `${i === 0 ? w.charAt(0).toUpperCase() + w.slice(1) : w}${i === words.length - 1 ? '.' : ''}`);
  }

  /** The stand-in's end-of-turn confidence after `silenceMs` of silence (see the file's comment). */
  #confidence(silenceMs: number): number {
    // The words heard so far: never whether the label has more (that is the future).
    const heard = this.#turnWords(this.#heard(false).map((w) => w.text));
    const last = heard.at(-1)?.toLowerCase();
    const grown = (CLOSED_AT * Math.max(0, silenceMs)) / Math.max(1, this.#endSilence);
    return Math.min(last !== undefined && OPEN_WORDS.has(last) ? OPEN_CAP : 0.99, Math.max(0.01, grown));
  }

  /** The turn state machine, on the audio received so far. */
  #advance(): void {
    if (this.#state === 'idle') {
      const released = this.#released();
      if (released.length) {
        this.#state = 'ongoing';
        this.#turnStartAudio = this.#utteranceStartAudio + (this.#current?.words[this.#current.finalized]?.end ?? 0);
        this.#turnInfo('StartOfTurn', this.#turnWords(released), this.#confidence(0));
      } else if (this.audioMs - this.#lastMessageAudio >= UPDATE_EVERY_MS) this.#turnInfo('Update', [], 0.01);
      return;
    }
    const silence = this.#speaking ? 0 : this.audioMs - this.#lastSpeechAudio;
    const confidence = this.#confidence(silence);
    const ends = !this.#speaking && (confidence >= this.flux.eotThreshold || silence >= this.flux.eotTimeoutMs);
    const hasWords = this.#heard(this.#heardThrough()).length + this.#carried.length > 0;
    // In eager mode every EndOfTurn follows an EagerEndOfTurn with its transcript (Deepgram's state machine): one
    // that crosses both thresholds at once sends both.
    if (!this.#speaking && this.#state === 'ongoing' && this.flux.eagerThreshold !== null && hasWords && (ends || confidence >= this.flux.eagerThreshold)) {
      const words = this.#endWords();
      this.#state = 'eager';
      this.#eagerTranscript = words.join(' ');
      this.#eagerWords = this.#heard(this.#heardThrough()).length;
      this.#turnInfo('EagerEndOfTurn', words, confidence);
    }
    if (ends) this.#endTurn(confidence);
    else if (this.audioMs - this.#lastMessageAudio >= UPDATE_EVERY_MS) this.#turnInfo('Update', this.#turnWords(this.#released()), confidence);
  }

  /** EndOfTurn: the eager transcript if one was sent (Deepgram's rule), else every word heard; the words leave the utterance. */
  #endTurn(confidence = 1): void {
    const words = this.#state === 'eager' && this.#eagerTranscript ? this.#eagerTranscript.split(' ') : this.#endWords();
    const through = this.#heardThrough();
    const cur = this.#current;
    if (cur) cur.finalized += this.#heard(through).length;
    this.#turnInfo('EndOfTurn', words, confidence);
    this.#state = 'idle';
    this.#turnIndex++;
    this.#carried = [];
    this.#eagerTranscript = '';
    this.#eagerWords = 0;
  }
}

/**
 * The v2 side of the Deepgram stand-in's server: checks the upgrade as Deepgram does (auth, then the parameters:
 * a 400 with Deepgram's error body) and accepts it. Null when the socket was refused.
 */
export function acceptFlux(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  opts: { key: string | undefined; apiKeys: string[] | undefined; speechRms: number; realistic: Required<RealisticSttOptions> | null; index: number },
): FluxConnection | null {
  const reject = (status: number, text: string, reason: string) => {
    socket.end(`HTTP/1.1 ${status} ${text}\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n${JSON.stringify({ err_code: text, err_msg: reason })}`);
    return null;
  };
  if (!opts.key || (opts.apiKeys && !opts.apiKeys.includes(opts.key))) return reject(401, 'Unauthorized', 'Invalid credentials.');
  const url = new URL(req.url ?? '/', 'http://x');
  const flux = fluxParams(url.searchParams);
  if (typeof flux === 'string') return reject(400, 'Bad Request', flux);
  const ws = acceptWebSocket(req, socket, head);
  // Flux's turn timing follows the realistic mode's draws, in whichever mode the v1 connections are.
  return new FluxConnection(ws, url.searchParams, flux, { key: opts.key, speechRms: opts.speechRms, timing: opts.realistic ?? REALISTIC_DEFAULTS, index: opts.index });
}
