// startCall(): microphone first (so a refused microphone starts no call), then POST /v1/calls/web, then the
// LiveKit room: publish the microphone, play the agent, and turn the room's attributes, text streams and data
// messages into the VapCall events.
import { DisconnectReason, Room, RoomEvent, Track, type Participant, type RemoteTrack, type TextStreamReader } from 'livekit-client';
import { Emitter } from './emitter.ts';
import { VapError, errorFromMedia, errorFromResponse } from './errors.ts';
import { watchFirstAudio, newAudioContext, type FirstAudioWatch } from './first-audio.ts';
import {
  AGENT_STATE_ATTRIBUTE,
  METRICS_TOPIC,
  TRANSCRIPTION_SEGMENT_ATTRIBUTE,
  TRANSCRIPTION_TOPIC,
  callStateFor,
  isFinalSegment,
  parseCallFailure,
  parseMetrics,
  type CallState,
  type TurnMetricsEvent,
} from './protocol.ts';

export interface StartCallOptions {
  /** Base URL of the vap API. Default: the origin of the `<script>` that loaded the SDK, else the page's. */
  apiBase?: string;
  /** A publishable key (`vap_pk_...`) with scope `calls:web`, for customers' pages. */
  publishableKey?: string;
  /** A full Authorization header value (`Bearer <secret key or JWT>`), held in memory only. */
  authorization?: string;
  agentId: string;
  variables?: Record<string, string>;
  metadata?: Record<string, unknown>;
  /** Where the agent's audio plays; by default a hidden element appended to the page. */
  audioElement?: HTMLAudioElement;
}

export interface TranscriptEvent {
  id: string;
  role: 'user' | 'agent';
  text: string;
  final: boolean;
}

// A type alias (not an interface) so that it satisfies the emitter's Record<string, unknown> bound.
export type CallEvents = {
  state: CallState;
  transcript: TranscriptEvent;
  metrics: TurnMetricsEvent;
  error: VapError;
  ended: { reason: string };
  'agent-audio': undefined;
};

export interface VapCall {
  readonly id: string;
  readonly state: CallState;
  on(ev: 'state', fn: (s: CallState) => void): () => void;
  on(ev: 'transcript', fn: (t: TranscriptEvent) => void): () => void;
  on(ev: 'metrics', fn: (m: TurnMetricsEvent) => void): () => void;
  on(ev: 'error', fn: (e: VapError) => void): () => void;
  on(ev: 'ended', fn: (e: { reason: string }) => void): () => void;
  on(ev: 'agent-audio', fn: () => void): () => void;
  mute(): void;
  unmute(): void;
  readonly muted: boolean;
  stop(): Promise<void>;
}

/** Longest wait for the agent to join the room before the call is given up. */
const AGENT_JOIN_TIMEOUT_MS = 30_000;

// Captured while the classic script runs (null in a module, where `document.currentScript` is not set).
const scriptOrigin: string | null = (() => {
  try {
    const s = typeof document === 'undefined' ? null : document.currentScript;
    return s instanceof HTMLScriptElement && s.src ? new URL(s.src).origin : null;
  } catch {
    return null;
  }
})();

interface WebCallAnswer {
  id: string;
  server_url: string;
  participant_token: string;
}

export async function startCall(opts: StartCallOptions): Promise<VapCall> {
  // Made first, inside the click that started the call, so that the browser lets it run.
  const audioContext = newAudioContext();
  const apiBase = (opts.apiBase ?? scriptOrigin ?? location.origin).replace(/\/+$/, '');
  const authorization = opts.authorization ?? (opts.publishableKey ? `Bearer ${opts.publishableKey}` : null);
  if (!authorization) throw new VapError('key_rejected', 'startCall needs a publishableKey (or an authorization header value).');

  let mic: MediaStreamTrack;
  try {
    if (!navigator.mediaDevices?.getUserMedia) {
      throw new VapError('no_microphone', 'This page cannot use a microphone (it needs https, or a browser with WebRTC).');
    }
    const stream = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: true, noiseSuppression: true, autoGainControl: true } });
    mic = stream.getAudioTracks()[0]!;
  } catch (err) {
    void audioContext?.close();
    throw err instanceof VapError ? err : errorFromMedia(err);
  }

  let answer: WebCallAnswer;
  try {
    answer = await createWebCall(apiBase, authorization, opts);
  } catch (err) {
    mic.stop();
    void audioContext?.close();
    throw err;
  }
  const call = new Call(answer, mic, audioContext, { apiBase, authorization, audioElement: opts.audioElement ?? null });
  await call.connect(answer);
  return call;
}

async function createWebCall(apiBase: string, authorization: string, opts: StartCallOptions): Promise<WebCallAnswer> {
  let res: Response;
  try {
    res = await fetch(`${apiBase}/v1/calls/web`, {
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({
        agent_id: opts.agentId,
        ...(opts.variables ? { variables: opts.variables } : {}),
        ...(opts.metadata ? { metadata: opts.metadata } : {}),
      }),
    });
  } catch (err) {
    throw new VapError('network_lost', `The voice service at ${apiBase} could not be reached.`, { cause: err });
  }
  const body: unknown = await res.json().catch(() => null);
  if (!res.ok) throw errorFromResponse(res.status, body);
  return body as WebCallAnswer;
}

class Call implements VapCall {
  readonly id: string;
  #state: CallState = 'connecting';
  #muted = false;
  #events = new Emitter<CallEvents>();
  #room = new Room({ adaptiveStream: false, dynacast: false });
  #mic: MediaStreamTrack;
  #audioContext: AudioContext | null;
  #audioElement: HTMLAudioElement | null;
  #ownAudioElement = false;
  #firstAudio: FirstAudioWatch | null = null;
  #heardAgent = false;
  #agentJoinTimer: ReturnType<typeof setTimeout> | null = null;
  #ending: Promise<void> | null = null;
  /** connect() has returned: what happens from now on is told by events. */
  #connected = false;
  #apiBase: string;
  #authorization: string;
  #onPageHide = () => void this.#end('page_unload', { unloading: true });

  constructor(answer: WebCallAnswer, mic: MediaStreamTrack, audioContext: AudioContext | null, o: { apiBase: string; authorization: string; audioElement: HTMLAudioElement | null }) {
    this.id = answer.id;
    this.#mic = mic;
    this.#audioContext = audioContext;
    this.#audioElement = o.audioElement;
    this.#apiBase = o.apiBase;
    this.#authorization = o.authorization;
  }

  get state(): CallState {
    return this.#state;
  }

  get muted(): boolean {
    return this.#muted;
  }

  on(ev: keyof CallEvents, fn: (v: never) => void): () => void {
    return this.#events.on(ev, fn as (v: unknown) => void);
  }

  mute(): void {
    this.#muted = true;
    this.#mic.enabled = false;
  }

  unmute(): void {
    this.#muted = false;
    this.#mic.enabled = true;
  }

  stop(): Promise<void> {
    return this.#end('stopped');
  }

  async connect(answer: WebCallAnswer): Promise<void> {
    const room = this.#room;
    room.on(RoomEvent.ParticipantConnected, (p) => this.#onParticipant(p));
    room.on(RoomEvent.ParticipantAttributesChanged, (_changed, p) => this.#onParticipant(p));
    room.on(RoomEvent.ParticipantDisconnected, (p) => {
      if (p.isAgent) void this.#end('call_ended');
    });
    room.on(RoomEvent.TrackSubscribed, (track, _pub, p) => this.#onTrack(track, p));
    room.on(RoomEvent.DataReceived, (payload, _p, _kind, topic) => {
      if (topic !== METRICS_TOPIC) return;
      const m = parseMetrics(payload);
      if (m) this.#events.emit('metrics', m);
    });
    room.on(RoomEvent.Disconnected, (reason) => {
      if (this.#ending) return;
      if (reason === DisconnectReason.ROOM_DELETED || reason === DisconnectReason.PARTICIPANT_REMOVED) void this.#end('call_ended');
      else {
        this.#events.emit('error', new VapError('network_lost', 'The connection to the call was lost.'));
        void this.#end('network_lost');
      }
    });
    room.registerTextStreamHandler(TRANSCRIPTION_TOPIC, (reader, from) => void this.#readTranscript(reader, from.identity));
    // The call could not start (the platform could not build its agent): the control plane says why in the room's
    // metadata, at once, rather than leaving the page to wait for an agent that never comes.
    room.on(RoomEvent.RoomMetadataChanged, (metadata) => {
      const failure = this.#failure(metadata);
      // While connecting, nobody listens yet: connect() reads the room's metadata itself before it returns.
      if (!failure || this.#ending || !this.#connected) return;
      this.#events.emit('error', failure);
      void this.#end('configuration_error');
    });

    try {
      await room.connect(answer.server_url, answer.participant_token, { autoSubscribe: true });
    } catch (err) {
      const e = new VapError('network_lost', 'Could not connect to the call.', { cause: err, callId: this.id });
      await this.#end('network_lost');
      throw e;
    }
    // Failed before the page joined, or while it was joining: startCall rejects with the cause (no listener is
    // attached yet, so an event would be lost).
    await this.#throwIfFailed();
    try {
      await room.localParticipant.publishTrack(this.#mic, { source: Track.Source.Microphone, dtx: false });
    } catch (err) {
      const e = new VapError('network_lost', 'Could not connect to the call.', { cause: err, callId: this.id });
      await this.#end('network_lost');
      throw e;
    }
    await this.#throwIfFailed();
    // From here a failure is an `error` event (no await between this check and the flag).
    this.#connected = true;
    void room.startAudio().catch(() => undefined);
    addEventListener('pagehide', this.#onPageHide);
    addEventListener('beforeunload', this.#onPageHide);
    for (const p of room.remoteParticipants.values()) this.#onParticipant(p);
    if (![...room.remoteParticipants.values()].some((p) => p.isAgent)) {
      this.#agentJoinTimer = setTimeout(() => {
        this.#events.emit('error', new VapError('agent_unavailable', 'No agent answered the call.', { callId: this.id }));
        void this.#end('agent_unavailable');
      }, AGENT_JOIN_TIMEOUT_MS);
    }
  }

  async #throwIfFailed(): Promise<void> {
    const failed = this.#failure(this.#room.metadata);
    if (!failed) return;
    await this.#end('configuration_error');
    throw failed;
  }

  #failure(metadata: string | undefined): VapError | null {
    const f = parseCallFailure(metadata);
    return f ? new VapError('configuration_error', `The call could not start: ${f.message}`, { callId: this.id, reason: f.reason }) : null;
  }

  #setState(s: CallState): void {
    if (s === this.#state || this.#state === 'ended') return;
    this.#state = s;
    this.#events.emit('state', s);
  }

  #onParticipant(p: Participant): void {
    if (!p.isAgent) return;
    if (this.#agentJoinTimer) clearTimeout(this.#agentJoinTimer);
    this.#agentJoinTimer = null;
    const state = callStateFor(p.attributes[AGENT_STATE_ATTRIBUTE]);
    // Without a running Web Audio context, the agent's first `speaking` stands for its first audio.
    if (state === 'speaking' && this.#audioContext?.state !== 'running') this.#agentAudible();
    this.#setState(state);
  }

  #onTrack(track: RemoteTrack, p: Participant): void {
    if (track.kind !== Track.Kind.Audio || !p.isAgent) return;
    if (!this.#audioElement) {
      this.#audioElement = document.createElement('audio');
      this.#audioElement.hidden = true;
      document.body.append(this.#audioElement);
      this.#ownAudioElement = true;
    }
    this.#audioElement.autoplay = true;
    track.attach(this.#audioElement);
    const ctx = this.#audioContext;
    if (ctx && ctx.state !== 'closed' && !this.#heardAgent) {
      void ctx.resume().catch(() => undefined);
      this.#firstAudio = watchFirstAudio(ctx, track.mediaStreamTrack, () => this.#agentAudible());
    }
  }

  #agentAudible(): void {
    if (this.#heardAgent) return;
    this.#heardAgent = true;
    this.#events.emit('agent-audio', undefined);
  }

  async #readTranscript(reader: TextStreamReader, identity: string): Promise<void> {
    const role = identity === this.#room.localParticipant.identity ? 'user' : 'agent';
    const attrs = reader.info.attributes;
    const id = attrs?.[TRANSCRIPTION_SEGMENT_ATTRIBUTE] ?? reader.info.id;
    let text = '';
    try {
      for await (const chunk of reader) {
        text += chunk;
        this.#events.emit('transcript', { id, role, text, final: false });
      }
    } catch {
      return; // the room closed mid-stream
    }
    if (isFinalSegment(role, attrs) && text) this.#events.emit('transcript', { id, role, text, final: true });
  }

  #end(reason: string, o: { unloading?: boolean } = {}): Promise<void> {
    this.#ending ??= (async () => {
      removeEventListener('pagehide', this.#onPageHide);
      removeEventListener('beforeunload', this.#onPageHide);
      if (this.#agentJoinTimer) clearTimeout(this.#agentJoinTimer);
      this.#firstAudio?.stop();
      // Leaving the room ends the call (the worker ends it as a hang-up). With a secret credential the stop
      // endpoint is told as well, in a request that outlives the page when it is unloading.
      if (o.unloading && !this.#authorization.startsWith('Bearer vap_pk_')) {
        void fetch(`${this.#apiBase}/v1/calls/${this.id}/stop`, { method: 'POST', keepalive: true, headers: { authorization: this.#authorization } }).catch(() => undefined);
      }
      try {
        await this.#room.disconnect(true);
      } catch {
        // already gone
      }
      this.#mic.stop();
      if (this.#ownAudioElement) this.#audioElement?.remove();
      void this.#audioContext?.close().catch(() => undefined);
      this.#setState('ended');
      this.#events.emit('ended', { reason });
    })();
    return this.#ending;
  }
}
