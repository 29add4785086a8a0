// The simulated caller of a voice-mode agent test: a participant that joins the agent's room with a web
// caller's token, as a browser would, speaks with a TTS (an @livekit/agents plugin: the org's provider or the
// offline profile's local voice, control-plane/src/modules/agent-tests/caller-speech.ts) into a microphone track paced in real time, and hears the agent's track: its
// utterances are found by level (speech, then a stretch of silence) and, for a persona, turned into text with
// an STT plugin. The agent's words in the test's result come from the worker's call record, not from here:
// this side only has to know when the agent has spoken and, for a persona, roughly what it said.
import { DEFAULT_API_CONNECT_OPTIONS, stt, type tts } from '@livekit/agents';
import {
  AudioFrame,
  AudioSource,
  AudioStream,
  LocalAudioTrack,
  Room,
  RoomEvent,
  TrackKind,
  TrackPublishOptions,
  TrackSource,
  type RemoteParticipant,
  type RemoteTrack,
} from '@livekit/rtc-node';
import { ensureAgentsLogger } from './speech/providers.ts';

/** A 20 ms frame of the agent's audio counts as speech above this RMS (int16; decoded silence is near 0). */
const SPEECH_RMS = 300;
/**
 * The caller's synthesis is not on a real-time path (a line is made before it is spoken), so it may take long on
 * a busy machine: a longer bound per attempt than an agent's TTS gets.
 */
const SYNTHESIS = { ...DEFAULT_API_CONNECT_OPTIONS, timeoutMs: 60_000 };
/** Longest wait for an STT's first final transcript or end of speech in an utterance before its input is ended anyway (ms). */
const TRANSCRIBE_ANSWER_MS = 15_000;
/** The agent's track is read at this rate (pocketsphinx's). */
const LISTEN_RATE = 16000;

export interface CallerSpeech {
  tts: tts.TTS;
  /** Needed only to understand the agent (a persona); a script does not listen to words. */
  stt: stt.STT | null;
}

export interface Utterance {
  /** When the agent's first frame of speech arrived (performance.now()). */
  startedAt: number;
  /** When its last frame of speech arrived. */
  endedAt: number;
  frames: AudioFrame[];
}

const rms = (d: Int16Array) => {
  if (!d.length) return 0;
  let sum = 0;
  for (const s of d) sum += s * s;
  return Math.sqrt(sum / d.length);
};

export class SimulatedCaller {
  readonly #room: Room;
  readonly #speech: CallerSpeech;
  #source: AudioSource | null = null;
  #track: LocalAudioTrack | null = null;
  #stream: AudioStream | null = null;
  /** Frames of the agent's audio since the last take(), and the speech markers over them. */
  #frames: AudioFrame[] = [];
  #firstSpeechAt: number | undefined;
  #lastSpeechAt: number | undefined;
  #wake = new Set<() => void>();
  /** The agent left the room or the room closed: the call is over from this side. */
  ended = false;

  private constructor(room: Room, speech: CallerSpeech) {
    this.#room = room;
    this.#speech = speech;
    room.on(RoomEvent.TrackSubscribed, (track: RemoteTrack, _pub, participant: RemoteParticipant) => this.#offer(track, participant));
    room.on(RoomEvent.ParticipantDisconnected, () => {
      if (this.#room.remoteParticipants.size === 0) this.#end();
    });
    room.on(RoomEvent.Disconnected, () => this.#end());
  }

  /** Joins the room the token grants and publishes the microphone. */
  static async join(url: string, token: string, speech: CallerSpeech): Promise<SimulatedCaller> {
    ensureAgentsLogger();
    const room = new Room();
    const caller = new SimulatedCaller(room, speech);
    await room.connect(url, token, { autoSubscribe: true, dynacast: false });
    caller.#source = new AudioSource(speech.tts.sampleRate, 1, 100);
    caller.#track = LocalAudioTrack.createAudioTrack('microphone', caller.#source);
    const opts = new TrackPublishOptions();
    opts.source = TrackSource.SOURCE_MICROPHONE;
    await room.localParticipant!.publishTrack(caller.#track, opts);
    for (const p of room.remoteParticipants.values()) for (const pub of p.trackPublications.values()) if (pub.track) caller.#offer(pub.track, p);
    return caller;
  }

  #end() {
    this.ended = true;
    for (const w of this.#wake) w();
  }

  #offer(track: RemoteTrack, _participant: RemoteParticipant) {
    if (this.#stream || track.kind !== TrackKind.KIND_AUDIO) return;
    this.#stream = new AudioStream(track, { sampleRate: LISTEN_RATE, numChannels: 1 });
    void this.#read(this.#stream);
  }

  async #read(stream: AudioStream) {
    try {
      for await (const frame of stream) {
        const at = performance.now();
        if (rms(frame.data.subarray(0, frame.samplesPerChannel)) > SPEECH_RMS) {
          this.#firstSpeechAt ??= at;
          this.#lastSpeechAt = at;
        }
        this.#frames.push(frame);
        for (const w of this.#wake) w();
      }
    } catch {
      // The track ended with the call.
    }
  }

  /** Waits until the agent's audio track is in the room; false when it did not come within `timeoutMs`. */
  async agentJoined(timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    const deadline = performance.now() + timeoutMs;
    while (!this.#stream) {
      if (this.ended || signal.aborted || performance.now() > deadline) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
    return true;
  }

  /** Forgets what was heard so far: the next utterance starts after this. */
  clear(): void {
    this.#frames = [];
    this.#firstSpeechAt = undefined;
    this.#lastSpeechAt = undefined;
  }

  /**
   * Waits for the agent to speak and then be silent for `silenceMs`: one utterance. Null when it said nothing
   * within `timeoutMs`, or the call ended first (what it said before the end is still returned).
   */
  async utterance(opts: { silenceMs: number; timeoutMs: number; signal: AbortSignal }): Promise<Utterance | null> {
    const deadline = performance.now() + opts.timeoutMs;
    const done = () => this.#lastSpeechAt !== undefined && performance.now() - this.#lastSpeechAt >= opts.silenceMs;
    while (!done() && !this.ended && !opts.signal.aborted) {
      // Once the agent is speaking its turn runs on; the bound is only on the wait for it to start.
      if (this.#firstSpeechAt === undefined && performance.now() > deadline) return null;
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.#wake.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, 100);
        this.#wake.add(wake);
      });
    }
    if (this.#firstSpeechAt === undefined || this.#lastSpeechAt === undefined) return null;
    const u = { startedAt: this.#firstSpeechAt, endedAt: this.#lastSpeechAt, frames: this.#frames };
    this.clear();
    return u;
  }

  /** Says `text`: synthesized, then played into the microphone in real time with trailing silence. Resolves when it has played. */
  async say(text: string, signal: AbortSignal, trailingSilenceMs = 600): Promise<{ endedAt: number }> {
    const source = this.#source!;
    const frames: AudioFrame[] = [];
    for await (const audio of this.#speech.tts.synthesize(text, SYNTHESIS, signal)) frames.push(audio.frame);
    for (const f of frames) {
      if (signal.aborted || this.ended) break;
      await source.captureFrame(f.sampleRate === source.sampleRate ? f : new AudioFrame(f.data, f.sampleRate, 1, f.samplesPerChannel));
    }
    // Silence after speech, so the agent's voice activity detection sees the end of the turn.
    const step = source.sampleRate / 100;
    for (let t = 0; t < trailingSilenceMs && !signal.aborted && !this.ended; t += 10) {
      await source.captureFrame(new AudioFrame(new Int16Array(step), source.sampleRate, 1, step));
    }
    await source.waitForPlayout();
    return { endedAt: performance.now() };
  }

  /** What the agent said in an utterance, by the caller's STT (an empty string when it has none or heard nothing). */
  async transcribe(u: Utterance): Promise<string> {
    return this.#speech.stt ? transcribeFrames(this.#speech.stt, u.frames) : '';
  }

  async leave(): Promise<void> {
    this.ended = true;
    await this.#stream?.cancel().catch(() => {});
    await this.#track?.close(false).catch(() => {});
    await this.#source?.close().catch(() => {});
    await this.#room.disconnect().catch(() => {});
  }
}

/** What a streaming STT hears in these frames: its final transcripts, joined. */
export async function transcribeFrames(engine: stt.STT, frames: AudioFrame[]): Promise<string> {
  const stream = engine.stream();
  for (const f of frames) stream.pushFrame(f);
  stream.flush();
  // The input stays open until the engine's first final transcript or end of speech (its answer to the flush,
  // or a stretch it heard no words in), or a bound if neither comes. Ending it sooner loses words: Deepgram
  // connects only while its input is open, and OpenAI's realtime STT closes its socket when its input ends,
  // before its transcription of the committed audio arrives. Ended then, each engine still sends what it holds
  // (Deepgram's CloseStream, pocketsphinx's end of input).
  let open = true;
  const endInput = () => {
    if (open) stream.endInput();
    open = false;
  };
  const bound = setTimeout(endInput, TRANSCRIBE_ANSWER_MS);
  const words: string[] = [];
  try {
    for await (const ev of stream) {
      if (ev.type === stt.SpeechEventType.END_OF_SPEECH || ev.type === stt.SpeechEventType.FINAL_TRANSCRIPT) endInput();
      if (ev.type === stt.SpeechEventType.FINAL_TRANSCRIPT && ev.alternatives?.[0]?.text) words.push(ev.alternatives[0].text);
    }
  } finally {
    clearTimeout(bound);
  }
  return words.join(' ').trim();
}
