// The agent of a call: instructions and tools, knowledge retrieval before each LLM turn, and a hook that
// lets the call decide a turn must not get a reply (the callee's first words on an outbound call, or a
// voicemail greeting).
import { llm, stt, voice, type tts } from '@livekit/agents';
import type { AudioFrame } from '@livekit/rtc-node';
import type { KnowledgeConfig, KnowledgeSearchResult } from '../../../schemas/internal.ts';
import type { MetricsSink } from './metrics-sink.ts';
import type { InternalApiClient } from '../../../shared/internal-api.ts';
import type { Logger } from '../../../shared/logger.ts';
import { smallFrames } from './output-frames.ts';
import { spaceTimedPieces } from './aligned-text.ts';
import { withSummary } from './squad.ts';
import { resumedTurns } from './stt-turns.ts';
import { capToolCalls } from './answer-caps.ts';
import { KNOWLEDGE_TOOL_NAME, knowledgeTool } from './knowledge-tool.ts';

export interface VapAgentOptions {
  instructions: string;
  tools: llm.FunctionTool<any, any, any>[];
  knowledge: KnowledgeConfig;
  callId: string;
  api: InternalApiClient | null;
  /** The call's logger, bound to its call id. */
  logger: Logger;
  /** Called with each completed user turn; returning false skips the LLM reply for that turn. */
  beforeReply?: (text: string) => boolean | Promise<boolean>;
  topK?: number;
  knowledgeTimeoutMs?: number;
  /** Records the retrieval time of each turn (voice_knowledge_retrieval_seconds). */
  metrics?: MetricsSink;
  callType?: string;
  /**
   * Sees each frame of the caller's audio on its way to the STT (beep detection). The tap sits in the STT
   * node, which every audio input feeds (the room's in production, a line in tests): one path for both.
   */
  onInputAudio?: ((frame: AudioFrame) => void) | undefined;
  /**
   * Decides, for each transcript (interim or final) on its way out of the STT, whether agents-js should not
   * see it: backchannels over the agent's speech (`turn_taking.ignore_backchannels`). A transcript it never
   * sees neither interrupts the agent nor becomes a user turn.
   */
  dropTranscript?: ((text: string, isFinal: boolean) => boolean) | undefined;
  /**
   * Says whether an interim transcript sounds like the end of the turn. Such an interim goes to agents-js as a
   * preflight transcript (what Deepgram Flux sends as EagerEndOfTurn): preemptive generation starts on it, one
   * STT final lag before the final. The turn itself still commits only on the final, and agents-js keeps the
   * early reply only if the final says the same.
   */
  preflight?: ((text: string) => boolean) | undefined;
  /**
   * With the STT's own end of turn (Deepgram Flux): called when the caller goes on after an eager end of turn,
   * to drop the early reply it started (stt-turns.ts).
   */
  onTurnResumed?: (() => void) | undefined;
  /**
   * Squads (squad.ts): the agent's id (the session's hand-off items name it), its own models where they differ
   * from the session's, the context it starts with, the summary it is handed (added before its first reply),
   * what runs when the session switches to it, and whose knowledge bases it searches.
   */
  id?: string | undefined;
  models?: { llm?: llm.LLM | llm.RealtimeModel | undefined; tts?: tts.TTS | undefined; stt?: stt.STT | undefined } | undefined;
  chatCtx?: llm.ChatContext | undefined;
  summary?: Promise<string | null> | null | undefined;
  enter?: ((agent: VapAgent) => Promise<void>) | undefined;
  knowledgeAgentId?: string | undefined;
  /**
   * The agent's model is a realtime (speech-to-speech) one: it answers on its own end of turn, with no hook before
   * its reply, so `retrieve` knowledge is a tool it calls (knowledge-tool.ts) rather than a search before each turn.
   */
  realtime?: boolean | undefined;
}

const TRANSCRIPTS = new Set([stt.SpeechEventType.INTERIM_TRANSCRIPT, stt.SpeechEventType.PREFLIGHT_TRANSCRIPT, stt.SpeechEventType.FINAL_TRANSCRIPT]);

/**
 * The STT's events on their way to agents-js: transcripts `drop` rejects are taken out, and interims that
 * `preflight` finds finished become preflight transcripts (see VapAgentOptions).
 */
export function transcriptFilter(opts: Pick<VapAgentOptions, 'preflight'> & { drop?: VapAgentOptions['dropTranscript'] }): TransformStream<stt.SpeechEvent | string, stt.SpeechEvent | string> {
  const { drop, preflight } = opts;
  return new TransformStream<stt.SpeechEvent | string, stt.SpeechEvent | string>({
    transform(ev, controller) {
      const alternative = typeof ev === 'string' ? undefined : ev.alternatives?.[0];
      if (typeof ev === 'string' || !TRANSCRIPTS.has(ev.type) || !alternative?.text.trim()) {
        controller.enqueue(ev);
        return;
      }
      if (drop?.(alternative.text, ev.type === stt.SpeechEventType.FINAL_TRANSCRIPT)) return;
      // agents-js handles a preflight as an interim too (shown, and it interrupts the same way), plus the early reply.
      if (ev.type === stt.SpeechEventType.INTERIM_TRANSCRIPT && preflight?.(alternative.text)) {
        controller.enqueue({ ...ev, type: stt.SpeechEventType.PREFLIGHT_TRANSCRIPT });
        return;
      }
      controller.enqueue(ev);
    },
  });
}

/** The cache key of a query: its words, lowercased (punctuation and spacing differ between interim and final). */
export const queryKey = (text: string) => (text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).join(' ');

const CACHE_MAX = 64;

export const KNOWLEDGE_HEADER = 'Relevant knowledge base excerpts (use them to answer; say so if they do not cover the question):';

/** The stuffed knowledge base goes at the end of the system prompt, once. */
export function withStuffedKnowledge(prompt: string, knowledge: KnowledgeConfig): string {
  if (knowledge.mode !== 'stuff' || !knowledge.stuffed_context?.trim()) return prompt;
  return `${prompt}\n\n# Knowledge\n${KNOWLEDGE_HEADER}\n${knowledge.stuffed_context.trim()}`;
}

export class VapAgent extends voice.Agent {
  #opts: VapAgentOptions;
  /** Searches of this call by query key: started early on transcripts, reused by the turn (and repeats). */
  #cache = new Map<string, Promise<KnowledgeSearchResult | null>>();
  /** Final transcript segments of the user's current turn, so a multi-segment turn is prefetched whole. */
  #finals: string[] = [];
  /** Chunks injected by the last retrieval (tests and logs). */
  lastKnowledge: string[] = [];
  /** How the last turn's retrieval was served: `prefetched` (started on a transcript) or `turn`. */
  lastRetrieval: { source: 'prefetched' | 'turn'; ms: number } | null = null;

  constructor(opts: VapAgentOptions) {
    // The tool runs after construction: it reaches the agent's search (its cache and metrics) through `self`.
    const self: { agent?: VapAgent } = {};
    const searchTool =
      opts.realtime && retrieves(opts) && !opts.tools.some((t) => t.name === KNOWLEDGE_TOOL_NAME)
        ? [knowledgeTool((q) => self.agent!.#toolSearch(q), chunkText)]
        : [];
    super({
      instructions: withStuffedKnowledge(opts.instructions, opts.knowledge),
      tools: [...opts.tools, ...searchTool],
      ...(opts.id ? { id: opts.id } : {}),
      ...(opts.chatCtx ? { chatCtx: opts.chatCtx } : {}),
      ...(opts.models?.llm ? { llm: opts.models.llm } : {}),
      ...(opts.models?.tts ? { tts: opts.models.tts } : {}),
      ...(opts.models?.stt ? { stt: opts.models.stt } : {}),
    });
    this.#opts = opts;
    self.agent = this;
  }

  /** The summary handed over with a squad's hand-off, once it is ready (null without one). */
  get handedSummary(): Promise<string | null> | null {
    return this.#opts.summary ?? null;
  }

  override async onEnter(): Promise<void> {
    await this.#opts.enter?.(this);
  }

  override async sttNode(audio: ReadableStream<AudioFrame> | AsyncIterable<AudioFrame>, modelSettings: voice.ModelSettings) {
    const onFrame = this.#opts.onInputAudio;
    let input = audio;
    if (onFrame) {
      const stream = audio instanceof ReadableStream ? audio : ReadableStream.from(audio);
      input = stream.pipeThrough(
        new TransformStream<AudioFrame, AudioFrame>({
          transform(frame, controller) {
            onFrame(frame);
            controller.enqueue(frame);
          },
        }),
      );
    }
    const events = await voice.Agent.default.sttNode(this, input, modelSettings);
    const { dropTranscript: drop, preflight, onTurnResumed } = this.#opts;
    if (!events) return events;
    const filtered = drop || preflight ? events.pipeThrough(transcriptFilter({ drop, preflight })) : events;
    // After the filter: a resumed turn is judged on what agents-js sees.
    return onTurnResumed ? filtered.pipeThrough(resumedTurns(onTurnResumed)) : filtered;
  }

  /** The LLM's answer, with at most TOOL_CALLS_PER_ANSWER_MAX tool calls taken from it (answer-caps.ts). */
  override async llmNode(chatCtx: llm.ChatContext, toolCtx: llm.ToolContext, modelSettings: voice.ModelSettings) {
    const out = await voice.Agent.default.llmNode(this, chatCtx, toolCtx, modelSettings);
    const log = this.#opts.logger;
    return out ? out.pipeThrough(capToolCalls<llm.ChatChunk | string>(undefined, (n) => log.warn({ dropped: n }, 'tool calls over the cap of one answer dropped'))) : out;
  }

  /** The agent's speech in 20 ms frames, so that a barge-in's pause takes hold within one (output-frames.ts). */
  override async ttsNode(text: ReadableStream<string> | AsyncIterable<string>, modelSettings: voice.ModelSettings) {
    const audio = await voice.Agent.default.ttsNode(this, text, modelSettings);
    return audio ? audio.pipeThrough(smallFrames()) : audio;
  }

  /** The agent's transcript, with the spaces between the pieces a whole-text TTS was given (aligned-text.ts). */
  override async transcriptionNode(text: ReadableStream<string | voice.TimedString> | AsyncIterable<string | voice.TimedString>, modelSettings: voice.ModelSettings) {
    const out = await voice.Agent.default.transcriptionNode(this, text, modelSettings);
    return out ? out.pipeThrough(spaceTimedPieces()) : out;
  }

  /** Before each turn: the pipeline's way (a realtime model searches through its tool). */
  get #retrieves(): boolean {
    return !this.#opts.realtime && retrieves(this.#opts);
  }

  /** A realtime model's search through its tool, metered as a turn's is. */
  async #toolSearch(query: string): Promise<KnowledgeSearchResult | null> {
    const started = performance.now();
    const res = await this.#search(query);
    this.#searched(res, performance.now() - started, false);
    return res;
  }

  /** A search's result as the turn's knowledge, and its time in voice_knowledge_retrieval_seconds. */
  #searched(res: KnowledgeSearchResult | null, ms: number, prefetched: boolean): void {
    this.#opts.metrics?.knowledgeRetrieval?.(
      { call_type: this.#opts.callType ?? 'web', result: !res ? 'error' : res.chunks.length ? 'hit' : 'empty', prefetched: prefetched ? 'yes' : 'no' },
      ms / 1000,
    );
    this.lastKnowledge = res?.chunks.map((c) => c.content) ?? [];
  }

  /**
   * A transcript of the user's turn in progress (interim or final). The search starts now, while the user is
   * still speaking or the end-of-turn delay runs, so the turn usually finds its result ready.
   */
  onTranscript(text: string, isFinal: boolean): void {
    if (!this.#retrieves) return;
    const whole = [...this.#finals, text].join(' ').trim();
    if (isFinal && text.trim()) this.#finals.push(text.trim());
    // Fewer than three words rarely make a useful query; the turn will search anyway.
    if (queryKey(whole).split(' ').length < 3) return;
    void this.#search(whole);
  }

  #search(text: string): Promise<KnowledgeSearchResult | null> {
    const key = queryKey(text);
    let p = this.#cache.get(key);
    if (!p) {
      const { api, callId } = this.#opts;
      p = api!
        .searchKnowledge(
          callId,
          { query: text, top_k: this.#opts.topK ?? 4, ...(this.#opts.knowledgeAgentId ? { agent_id: this.#opts.knowledgeAgentId } : {}) },
          { timeoutMs: this.#opts.knowledgeTimeoutMs ?? 1500 },
        )
        .catch((err: unknown) => {
          // A slow or failing search must not hold up or break the reply; a later turn may retry it.
          this.#cache.delete(key);
          this.#opts.logger.warn({ err: (err as Error).message }, 'knowledge search failed');
          return null;
        });
      this.#cache.set(key, p);
      if (this.#cache.size > CACHE_MAX) this.#cache.delete(this.#cache.keys().next().value!);
    }
    return p;
  }

  override async onUserTurnCompleted(turnCtx: llm.ChatContext, newMessage: llm.ChatMessage): Promise<void> {
    const text = newMessage.textContent ?? '';
    this.#finals = [];
    // A squad's `summary` hand-off: this turn's reply waits for the summary (bounded in squad.ts), and has it.
    if (this.#opts.summary) withSummary(turnCtx, await this.#opts.summary);
    if (this.#opts.beforeReply && !(await this.#opts.beforeReply(text))) {
      throw new voice.StopResponse();
    }
    if (!this.#retrieves || !text.trim()) return;
    const started = performance.now();
    const prefetched = this.#cache.has(queryKey(text));
    const res = await this.#search(text);
    const ms = performance.now() - started;
    this.lastRetrieval = { source: prefetched ? 'prefetched' : 'turn', ms };
    this.#searched(res, ms, prefetched);
    if (!res?.chunks.length) return;
    // Added to this turn's context only: the next turn retrieves afresh, so the history stays small.
    turnCtx.addMessage({ role: 'system', content: `${KNOWLEDGE_HEADER}\n${res.chunks.map((c, i) => `[${i + 1}] ${chunkText(c)}`).join('\n\n')}` });
  }
}

/** The agent's knowledge is searched per question: `retrieve` mode, bases to search, and a control plane to ask. */
function retrieves(opts: Pick<VapAgentOptions, 'knowledge' | 'api'>): boolean {
  return opts.knowledge.mode === 'retrieve' && opts.knowledge.knowledge_base_ids.length > 0 && !!opts.api;
}

/** A chunk with where it comes from (title and heading path), as the LLM sees it. */
export function chunkText(c: KnowledgeSearchResult['chunks'][number]): string {
  const where = [c.title, c.heading].filter(Boolean).join(' › ');
  return where ? `(${where}) ${c.content}` : c.content;
}
