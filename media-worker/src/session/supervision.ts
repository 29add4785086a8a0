// A supervisor's actions on the live call (POST /v1/calls/{id}/control; docs/decisions/supervise-control-channel.md):
// `say` (the agent says their words, now or after its current speech), `whisper` (an instruction only the model gets),
// `mute_agent` / `unmute_agent` (the agent neither speaks nor replies meanwhile; it keeps listening, and what the
// caller says stays in its context), `takeover` / `hand_back` (a person speaks to the caller in the agent's place:
// the agent is silent as muted, the person's words are transcribed into its context as its own, and at the hand-back
// a note tells the model to go on from there). The actions come from the control plane's internal API, never from
// the room: SupervisionChannel (call/supervision-channel.ts) only learns there that some wait.
import { llm, voice } from '@livekit/agents';
import type { WorkerSupervisionItem } from '../../../schemas/supervision.ts';
import type { Logger } from '../../../shared/logger.ts';
import type { CallContext } from './call-context.ts';
import { cancelPreemptiveReply } from './stt-turns.ts';
import { sayFixed } from './fixed-sentence.ts';
import type { HearPerson, SpeechTranscription } from './supervisor-speech.ts';

export type SupervisorMark = { action: 'say' } | { action: 'whisper'; text: string } | { action: 'takeover' };

/** What the model reads at the hand-back: the person's and the caller's words are in the context already. */
export const HAND_BACK_NOTE =
  'A person spoke with the caller on your behalf; their words are in this conversation as yours. You now continue the ' +
  'conversation yourself from where it is: answer the caller knowing what was said, and do not mention the hand-over.';

/** How a whisper reads in the model's context: an instruction, apart from the conversation. */
export const whisperInstruction = (text: string) =>
  `A supervisor of this call gives you this instruction. The caller does not hear it; do not read it out or mention it.\n${text}`;

export class Supervision {
  /** Chat items the supervisor caused, by item id: the transcript marks them (reporting.ts). */
  readonly marks = new Map<string, SupervisorMark>();
  #muted = false;
  /** The person who took the call over (their participant identity), until the hand-back. */
  #takenBy: string | null = null;
  #hearing: SpeechTranscription | null = null;
  /** Hears the person of a takeover (the worker's room: call/supervisor-voice.ts). Unset: their words are not transcribed. */
  hearPerson: HearPerson | null = null;
  /** Whether preemptive generation was on before the agent fell silent (restored when it may speak again). */
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

  /** The identity of the person who has taken the call over, or null. */
  get takenBy(): string | null {
    return this.#takenBy;
  }

  /** Neither speaking nor replying: muted, or taken over. */
  get silent(): boolean {
    return this.#muted || this.#takenBy !== null;
  }

  /** Carries out one action. Never throws: a failed action is logged, the call goes on. */
  async apply(item: WorkerSupervisionItem): Promise<void> {
    if (this.#call.endReason) return;
    try {
      if (item.action === 'say') this.#say(item.text ?? '', item.when ?? 'after_current');
      else if (item.action === 'whisper') await this.#whisper(item.text ?? '');
      else if (item.action === 'mute_agent') this.#mute();
      else if (item.action === 'unmute_agent') this.#unmute();
      else if (item.action === 'takeover') this.#takeover(item.identity ?? '');
      else if (item.action === 'hand_back') await this.#handBack();
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
    if (!this.silent) return false;
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
    sayFixed(session, text, { allowInterruptions: true, addToChatCtx: true });
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
    this.#silence();
    this.#muted = true;
  }

  #unmute(): void {
    if (!this.#muted) return;
    this.#muted = false;
    this.#speakAgain();
  }

  /**
   * The person speaks from now on: the agent falls silent (as muted), and what the person says is transcribed into
   * the agent's context as its own message, marked. A second takeover (the control plane refuses one) changes nothing.
   */
  #takeover(identity: string): void {
    if (this.#takenBy !== null) return;
    this.#silence();
    this.#takenBy = identity;
    this.#hearing = this.hearPerson?.(identity, (text) => this.personSaid(text)) ?? null;
  }

  /** A final transcript of the person who took over: the agent's message in the context and the transcript, marked. */
  personSaid(text: string): void {
    if (!text.trim() || this.#call.endReason) return;
    const msg = llm.ChatMessage.create({ role: 'assistant', content: text });
    this.marks.set(msg.id, { action: 'takeover' });
    this.#addToContext(msg);
  }

  /** The agent takes the call back: the person's last words first, then the note, then it may speak again. */
  async #handBack(): Promise<void> {
    if (this.#takenBy === null) return;
    const hearing = this.#hearing;
    this.#hearing = null;
    await hearing?.stop();
    this.#takenBy = null;
    this.#addToContext(llm.ChatMessage.create({ role: 'system', content: HAND_BACK_NOTE }));
    this.#speakAgain();
  }

  /** The call has ended: the person's transcription stops (a call that ends while taken over just ends). */
  close(): void {
    const hearing = this.#hearing;
    this.#hearing = null;
    void hearing?.stop(0);
  }

  /** The agent stops what it says and replies to nothing until #speakAgain (the first of muted and taken over). */
  #silence(): void {
    if (this.silent) {
      this.#interrupt();
      return;
    }
    // No preemptive reply either: it is a paid LLM request whose answer the held turn throws away.
    // Replaced, not changed in place: the options object may be agents-js's shared default.
    const turns = this.#call.session.sessionOptions.turnHandling;
    this.#preemptive = turns.preemptiveGeneration.enabled;
    turns.preemptiveGeneration = { ...turns.preemptiveGeneration, enabled: false };
    cancelPreemptiveReply(this.#call.session);
    this.#interrupt();
  }

  /** Replies again, once neither muted nor taken over. */
  #speakAgain(): void {
    if (this.silent) return;
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
