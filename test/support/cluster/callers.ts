// Callers for the fault runs: the speech stand-ins an agent needs (the OpenAI-compatible LLM stand-in, the
// Deepgram stand-in as its STT, espeak-ng as its voice: cheap, so the platform is what is measured), and a web
// caller (a real rtc-node participant) that joins through the API, hears the greeting, and can ask a question
// and listen for the answer, to tell what a caller in flight hears when a fault strikes.
import { RtcClient, nowMs } from '../rtc-client.ts';
import { RoomEvent } from '@livekit/rtc-node';
import { synthesize, type Pcm } from '../speech.ts';
import { startFakeOpenAI, type FakeOpenAI } from '../fake-openai.ts';
import { startFakeDeepgram, type FakeDeepgram } from '../fake-deepgram.ts';

export const QUESTION = 'What time do you open tomorrow';
export const ANSWER = 'We open at nine in the morning.';
export const GREETING = 'Hello, Acme Dental.';

export interface Voices {
  llm: FakeOpenAI;
  deepgram: FakeDeepgram;
  /** Environment for the control planes and workers: the Deepgram stand-in as the platform's STT. */
  env: Record<string, string>;
  question: Pcm;
  close(): Promise<void>;
}

export async function startVoices(): Promise<Voices> {
  const llm = await startFakeOpenAI({ ttftMs: 50, responder: () => ({ text: ANSWER }) });
  const deepgram = await startFakeDeepgram();
  let labelling = true;
  // Every STT stream (one per call) hears the question whenever the caller speaks: up to 20 utterances a call.
  void (async () => {
    while (labelling) {
      const conn = await deepgram.nextConnection(3_600_000).catch(() => null);
      for (let i = 0; conn && i < 20; i++) conn.expect({ segments: [{ text: `${QUESTION}?`, startMs: 0, endMs: 1500 }] });
    }
  })();
  return {
    llm,
    deepgram,
    env: { DEEPGRAM_API_KEY: 'dg-cluster-platform-key', DEEPGRAM_BASE_URL: deepgram.httpUrl, LLM_PRIVATE_HOSTS: '127.0.0.1' },
    question: await synthesize(QUESTION, 'espeak-ng'),
    async close() {
      labelling = false;
      await Promise.all([llm.close(), deepgram.close()]);
    },
  };
}

type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

/** The agent every call of the runs talks to: the LLM stand-in, Deepgram (the stand-in), espeak-ng. */
export async function createClusterAgent(api: Api, llmUrl: string): Promise<string> {
  const model = await api('POST', '/v1/models', {
    name: 'stand-in',
    model: 'fake-model',
    base_url: llmUrl,
    system_prompt: 'You are the receptionist of Acme Dental.',
  });
  if (model.status !== 201) throw new Error(`model: ${model.status} ${JSON.stringify(model.body)}`);
  const agent = await api('POST', '/v1/agents', {
    name: 'Receptionist',
    llm_id: model.body.id,
    transcriber: { provider: 'deepgram' },
    tts: { provider: 'local', model: 'espeak-ng' },
    first_message: GREETING,
    silence_timeout_seconds: 300,
  });
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${JSON.stringify(agent.body)}`);
  return agent.body.id as string;
}

/** A caller of either kind, as the fault runs drive it. */
export interface Caller {
  readonly kind: 'web' | 'sip';
  /** The call's id (a phone call's is looked up once it is answered). */
  readonly id: string;
  agentLeftAt: number | null;
  disconnectedAt: number | null;
  /** Waits for the greeting; resolves with the time it began (nowMs), throws after `timeoutMs`. */
  greeting(timeoutMs: number): Promise<number>;
  /** Asks the question; resolves with the ms from the end of the question to the answer's first sound, or null. */
  ask(timeoutMs?: number): Promise<number | null>;
  /** The caller hangs up. */
  leave(): Promise<void>;
}

/** Dials one caller (a web call, or a phone call through the SIP bridge). */
export type Dialer = () => Promise<Caller>;

export class WebCaller implements Caller {
  readonly kind = 'web' as const;
  readonly id: string;
  readonly client: RtcClient;
  readonly recorder: ReturnType<RtcClient['record']>;
  /** When the platform closed the caller's connection (the room deleted or its node gone), if it did. */
  disconnectedAt: number | null = null;
  /** When the agent left the caller's room, if it did. */
  agentLeftAt: number | null = null;
  #left = false;
  readonly #question: Pcm;

  private constructor(id: string, client: RtcClient, question: Pcm) {
    this.id = id;
    this.client = client;
    this.#question = question;
    this.recorder = client.record({});
    client.room.on(RoomEvent.Disconnected, () => {
      if (!this.#left) this.disconnectedAt ??= nowMs();
    });
    client.room.on(RoomEvent.ParticipantDisconnected, (p) => {
      if (p.identity.startsWith('agent')) this.agentLeftAt ??= nowMs();
    });
  }

  /** POST /v1/calls/web, join, publish a microphone; resolves once connected. */
  static async dial(api: Api, agentId: string, question: Pcm): Promise<WebCaller> {
    const created = await api('POST', '/v1/calls/web', { agent_id: agentId });
    if (created.status !== 201) throw new Error(`POST /v1/calls/web answered ${created.status}: ${JSON.stringify(created.body)}`);
    const client = await RtcClient.join(created.body.server_url, created.body.participant_token);
    const caller = new WebCaller(created.body.id, client, question);
    await client.publishMicrophone();
    return caller;
  }

  async greeting(timeoutMs: number): Promise<number> {
    await this.recorder.utterance({ silenceMs: 600, timeoutMs });
    return this.recorder.firstSpeechAt!;
  }

  async ask(timeoutMs = 20_000): Promise<number | null> {
    if (!this.client.room.isConnected) return null;
    this.recorder.reset();
    try {
      const spoken = await this.client.speak(this.#question, { trailingSilenceMs: 800 });
      await this.recorder.until(() => this.recorder.firstSpeechAt !== undefined && this.recorder.firstSpeechAt > spoken.endedAt - 800, timeoutMs, 'an answer');
      return Math.round(this.recorder.firstSpeechAt! - (spoken.endedAt - 800));
    } catch {
      return null;
    }
  }

  get connected(): boolean {
    return !this.#left && this.client.room.isConnected;
  }

  async leave(): Promise<void> {
    if (this.#left) return;
    this.#left = true;
    await this.client.leave().catch(() => {});
  }
}
