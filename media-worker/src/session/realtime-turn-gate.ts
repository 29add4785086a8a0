// The turns a realtime (speech-to-speech) model must not answer by itself. The pipeline decides each completed turn
// before any reply (call-session.ts, #beforeReply): the answer to the recording question gets none, nor do the
// callee's first words on an outbound call until the opening has decided who answered (a person, a machine, a
// phone menu). A realtime model ends the turn and answers it at once, with no hook between. So while the gate is
// closed, the provider's own reply is cut and cancelled at the provider as it is created, the turn's words (the
// provider's input transcription) go through the same #beforeReply, and when that says the turn gets a reply, the
// model is asked for it. Once the gate is open, the provider answers as usual.
import type { voice } from '@livekit/agents';
import type { Logger } from '../../../shared/logger.ts';

/** How long a turn's words wait for the provider's own reply to them to be cut before they are decided anyway. */
export const OWN_REPLY_WAIT_MS = 2000;
/** How long a cut reply's response may take to end at the provider before the call goes on anyway. */
export const CANCEL_WAIT_MS = 1500;

export interface TurnGateOptions {
  /** Whether the provider's own replies are held now (the recording question waits, the opening is undecided). */
  closed: () => boolean;
  /** Cancels the provider's response in flight (the session's interrupt: a `response.cancel`). */
  cancel: () => void;
  /** The pipeline's decision on a completed turn: whether it gets a reply. */
  decide: (text: string) => Promise<boolean>;
  /** Asks the model for the turn's reply. */
  reply: () => void;
  log: Logger;
}

export class RealtimeTurnGate {
  readonly #o: TurnGateOptions;
  /** The provider's own replies cut, until each has ended there. */
  #cutting: Promise<void>[] = [];
  /** A turn's words held for the provider's reply to them to be cut. */
  #held: { text: string; timer: NodeJS.Timeout } | null = null;
  /** Called when the provider ends a response (its `response.done`): a cut reply has ended there too. */
  #responseDone: (() => void)[] = [];

  constructor(o: TurnGateOptions) {
    this.#o = o;
  }

  /** The provider ended a response (realtime_model_metrics, sent on its `response.done`). */
  onResponseDone(): void {
    const waiting = this.#responseDone;
    this.#responseDone = [];
    for (const done of waiting) done();
  }

  /**
   * A speech the provider started on its own (not one the call asked for, as the question, the first message and
   * a decided reply are) while the gate is closed: cut before it plays, and cancelled at the provider, since a
   * speech cut before it is scheduled sends no `response.cancel`, and a new response while one is active is refused.
   */
  onSpeechCreated(ev: voice.SpeechCreatedEvent): void {
    if (ev.userInitiated || !this.#o.closed()) return;
    this.#o.log.info("realtime turn held: the model's own reply is cut");
    ev.speechHandle.interrupt(true);
    this.#o.cancel();
    this.#cutting.push(
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, CANCEL_WAIT_MS);
        this.#responseDone.push(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
    );
    if (this.#held) this.#decideHeld();
  }

  /** The provider's transcript of the caller: a final one, while the gate is closed, is a turn to decide. */
  onTranscript(text: string, isFinal: boolean): void {
    if (!isFinal || !text.trim() || !this.#o.closed() || this.#held) return;
    // The provider's reply to this turn may come just after its transcript: it is waited for (bounded), then cut.
    this.#held = { text, timer: setTimeout(() => this.#decideHeld(), OWN_REPLY_WAIT_MS) };
    if (this.#cutting.length) this.#decideHeld();
  }

  close(): void {
    if (this.#held) clearTimeout(this.#held.timer);
    this.#held = null;
  }

  #decideHeld(): void {
    const held = this.#held;
    if (!held) return;
    this.#held = null;
    clearTimeout(held.timer);
    const cutting = this.#cutting;
    this.#cutting = [];
    void Promise.all(cutting)
      .then(() => this.#o.decide(held.text))
      .then((replies) => {
        if (replies) this.#o.reply();
      })
      .catch((err: unknown) => this.#o.log.warn({ err: (err as Error).message }, 'realtime turn: the decision failed'));
  }
}
