// A supervisor's actions on the live call (POST /v1/calls/{id}/control; docs/decisions/supervise-control-channel.md):
// `say` (the agent says their words, now or after its current speech), `whisper` (an instruction only the model gets),
// `mute_agent` / `unmute_agent` (the agent neither speaks nor replies meanwhile; it keeps listening, and what the
// caller says stays in its context). The actions come from the control plane's internal API, never from the room:
// SupervisionChannel (call/supervision-channel.ts) only learns there that some wait.
import { llm, voice } from '@livekit/agents';
import type { WorkerSupervisionItem } from '../../../schemas/supervision.ts';
import type { Logger } from '../../../shared/logger.ts';
import type { CallContext } from './call-context.ts';
import { cancelPreemptiveReply } from './stt-turns.ts';

export type SupervisorMark = { action: 'say' } | { action: 'whisper'; text: string };

/** How a whisper reads in the model's context: an instruction, apart from the conversation. */
export const whisperInstruction = (text: string) =>
  `A supervisor of this call gives you this instruction. The caller does not hear it; do not read it out or mention it.\n${text}`;

export class Supervision {
  /** Chat items the supervisor caused, by item id: the transcript marks them (reporting.ts). */
  readonly marks = new Map<string, SupervisorMark>();
  #muted = false;
  /** Whether preemptive generation was on before the mute (restored by the unmute). */
  #preemptive = false;
  /** Texts said and not yet seen in the history (agents-js gives a say's message to no handle). */
  #saying: string[] = [];
  #watching = false;
  readonly #call: Pick<CallContext, 'session' | 'agent' | 'endReason'>;
  readonly #log: Logger;

  constructor(call: Pick<CallContext, 'session' | 'agent' | 'endReason'>, log: Logger) {
    this.#call = call;
    this.#log = log;
  }

  get muted(): boolean {
    return this.#muted;
  }

  /** Carries out one action. Never throws: a failed action is logged, the call goes on. */
  async apply(item: WorkerSupervisionItem): Promise<void> {
    if (this.#call.endReason) return;
    try {
      if (item.action === 'say') this.#say(item.text ?? '', item.when ?? 'after_current');
      else if (item.action === 'whisper') await this.#whisper(item.text ?? '');
      else if (item.action === 'mute_agent') this.#mute();
      else if (item.action === 'unmute_agent') this.#unmute();
      this.#log.info({ seq: item.seq, action: item.action }, 'supervisor action applied');
    } catch (err) {
      this.#log.warn({ seq: item.seq, action: item.action, err: (err as Error).message }, 'supervisor action failed');
    }
  }

  /**
   * While muted, a completed user turn gets no reply; its words go into the model's context and the transcript
   * (agents-js drops a turn whose reply is stopped), so the agent knows them once unmuted. True when held.
   */
  holdTurn(text: string): boolean {
    if (!this.#muted) return false;
    if (text.trim()) this.#addToContext(llm.ChatMessage.create({ role: 'user', content: text }));
    return true;
  }

  #say(text: string, when: 'now' | 'after_current'): void {
    const session = this.#call.session;
    // `now`: what the agent says or has queued stops first. Not forced: agents-js's forced interrupt is its shutdown
    // path (it cancels the speech tasks themselves).
    if (when === 'now') this.#interrupt();
    this.#watchSays();
    this.#saying.push(text.trim());
    session.say(text, { allowInterruptions: true, addToChatCtx: true });
  }

  /** Marks the agent's message of each say as it enters the history: the text, or its start if interrupted. */
  #watchSays(): void {
    if (this.#watching) return;
    this.#watching = true;
    this.#call.session.on(voice.AgentSessionEventTypes.ConversationItemAdded, (ev) => {
      const item = ev.item;
      if (item.type !== 'message' || item.role !== 'assistant' || !this.#saying.length) return;
      const said = (item.textContent ?? '').trim();
      const at = this.#saying.findIndex((t) => t === said || (item.interrupted && said && t.startsWith(said)));
      if (at < 0) return;
      this.#saying.splice(at, 1);
      this.marks.set(item.id, { action: 'say' });
    });
  }

  async #whisper(text: string): Promise<void> {
    const msg = llm.ChatMessage.create({ role: 'system', content: whisperInstruction(text) });
    this.marks.set(msg.id, { action: 'whisper', text });
    this.#addToContext(msg);
  }

  #mute(): void {
    if (this.#muted) return;
    this.#muted = true;
    // No preemptive reply either: it is a paid LLM request whose answer the held turn throws away.
    // Replaced, not changed in place: the options object may be agents-js's shared default.
    const turns = this.#call.session.sessionOptions.turnHandling;
    this.#preemptive = turns.preemptiveGeneration.enabled;
    turns.preemptiveGeneration = { ...turns.preemptiveGeneration, enabled: false };
    cancelPreemptiveReply(this.#call.session);
    this.#interrupt();
  }

  #unmute(): void {
    if (!this.#muted) return;
    this.#muted = false;
    const turns = this.#call.session.sessionOptions.turnHandling;
    turns.preemptiveGeneration = { ...turns.preemptiveGeneration, enabled: this.#preemptive };
  }

  #interrupt(): void {
    try {
      void Promise.resolve(this.#call.session.interrupt()).catch(() => {});
    } catch (err) {
      // A speech that does not allow interruptions (the recording consent) plays on.
      this.#log.info({ err: (err as Error).message }, 'supervisor interrupt refused');
    }
  }

  /** Into the agent's context (what the model reads) and the session's history (what the transcript reports). */
  #addToContext(msg: llm.ChatMessage): void {
    const agent = this.#call.agent;
    const ctx = agent.chatCtx.copy();
    ctx.insert(msg);
    void agent.updateChatCtx(ctx).catch((err: unknown) => this.#log.warn({ err: (err as Error).message }, 'supervisor context update failed'));
    this.#call.session._conversationItemAdded(msg);
  }
}
