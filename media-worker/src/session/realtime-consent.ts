// Recording consent `ask` on a realtime (speech-to-speech) model. The pipeline reads the caller's answer from the
// completed turn before any reply (call-session.ts, #beforeReply), but a realtime model ends the turn itself and
// answers it at once, with no hook between. So here the answer is read from the provider's input transcription,
// and the model's own reply to that turn is cut as it is created: the question's answer gets no reply, and the
// first message follows it as in the pipeline (recording-consent.ts).
import type { voice } from '@livekit/agents';
import type { Logger } from '../../../shared/logger.ts';
import type { RecordingConsent } from './recording-consent.ts';

/** How long an answer waits for the model's own reply to it to be cut before it is taken anyway. */
export const OWN_REPLY_WAIT_MS = 2000;
/** How long a cut reply's response may take to end at the provider before the first message is asked for anyway. */
export const CANCEL_WAIT_MS = 1500;

export class RealtimeConsentTurn {
  readonly #consent: RecordingConsent;
  readonly #log: Logger;
  /** The model's own replies cut while the question waits, until each has ended. */
  #cutting: Promise<void>[] = [];
  /** The answer, heard while the model's reply to it may still be on its way. */
  #answer: { text: string; timer: NodeJS.Timeout } | null = null;
  /** Called when the provider ends a response (its `response.done`): a cut reply has ended there too. */
  #responseDone: (() => void)[] = [];
  /** Cancels the provider's response in flight (the session's interrupt: a `response.cancel`). */
  readonly #cancel: () => void;

  constructor(consent: RecordingConsent, log: Logger, cancel: () => void) {
    this.#consent = consent;
    this.#log = log;
    this.#cancel = cancel;
  }

  /** The provider ended a response (realtime_model_metrics, sent on its `response.done`). */
  onResponseDone(): void {
    const waiting = this.#responseDone;
    this.#responseDone = [];
    for (const done of waiting) done();
  }

  /**
   * A speech the provider started on its own (not one the call asked for, as the question and the first message
   * are) while the question waits for its answer: cut before it plays. The answer is taken once it has ended, so
   * the first message's response never meets the provider's own one still active (which OpenAI refuses).
   */
  onSpeechCreated(ev: voice.SpeechCreatedEvent): void {
    if (ev.userInitiated || !this.#consent.pending) return;
    this.#log.info("recording consent: the model's own reply while the question waits is cut");
    ev.speechHandle.interrupt(true);
    // A speech cut before it was scheduled never cancels its response at the provider: cancel it here, and wait for
    // the provider to end it (bounded), since a new response while one is active is refused.
    this.#cancel();
    this.#cutting.push(
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, CANCEL_WAIT_MS);
        this.#responseDone.push(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
    );
    if (this.#answer) this.#take();
  }

  /** The provider's transcript of the caller: a final one, while the question waits, is the answer. */
  onTranscript(text: string, isFinal: boolean): void {
    if (!isFinal || !text.trim() || !this.#consent.pending || this.#answer) return;
    // The provider's reply to this turn may come just after its transcript: it is waited for (bounded), then cut.
    this.#answer = { text, timer: setTimeout(() => this.#take(), OWN_REPLY_WAIT_MS) };
    if (this.#cutting.length) this.#take();
  }

  close(): void {
    if (this.#answer) clearTimeout(this.#answer.timer);
    this.#answer = null;
  }

  #take(): void {
    const answer = this.#answer;
    if (!answer) return;
    clearTimeout(answer.timer);
    const cutting = this.#cutting;
    void Promise.all(cutting).then(() => {
      if (!this.#consent.pending) return;
      this.#log.info({ verdict: this.#consent.answer(answer.text) }, 'recording consent answered');
    });
  }
}
