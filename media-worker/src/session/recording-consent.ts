// Recording consent (the agent's `recording_consent`), on calls that record:
//   none      nothing is said; the recording runs from the start;
//   announce  a sentence is played before anything else the agent says; the recording runs from the start;
//   ask       the agent asks, and the recording starts only if the caller's reply is a yes. A no, a reply that
//             is neither, or no reply within the wait, leaves it off for the call.
// The call reports which applied (`recording_consent`: none, announced, accepted, declined).
import { RECORDING_CONSENT_DEFAULTS } from '../../../schemas/agents.ts';
import type { RecordingConsentMode, RecordingConsentResult } from '../../../schemas/internal.ts';

/** How long the caller has to answer the question, from the end of its playout. */
export const ANSWER_WAIT_MS = 10_000;

const YES = /\b(yes|yeah|yep|yup|sure|ok|okay|fine|alright|all right|go ahead|of course|absolutely|certainly|no problem|that's fine|i agree|i consent|agreed|please do)\b/;
const NO = /\b(no|nope|nah|don't|do not|not okay|not ok|rather not|i object|i don't agree|i do not agree|please don't|not really|never)\b/;

/** The caller's answer to the question: yes, no, or neither (null). A reply with both ("no, yes") is neither. */
export function classifyConsent(text: string): 'yes' | 'no' | null {
  const t = ` ${text.toLowerCase().replace(/[’]/g, "'").replace(/[^a-z' ]+/g, ' ').replace(/\s+/g, ' ')} `;
  // "no problem" and "not a problem" are a yes.
  const cleaned = t.replace(/\b(no problem|not a problem|no worries)\b/g, ' yes ');
  const yes = YES.test(cleaned);
  const no = NO.test(cleaned);
  if (yes === no) return null;
  return yes ? 'yes' : 'no';
}

export class RecordingConsent {
  readonly mode: RecordingConsentMode;
  /** Whether the call records at all: without a recording there is nothing to consent to. */
  readonly recording: boolean;
  readonly #text: string;
  #played = false;
  #decided: boolean | null = null;
  #then: (() => void) | null = null;
  #timer: NodeJS.Timeout | null = null;
  #resolve!: (allowed: boolean) => void;
  /** Resolves when the recording may start (true) or must stay off (false). */
  readonly allowed: Promise<boolean>;

  constructor(mode: RecordingConsentMode | undefined, recording: boolean, message: string | null | undefined) {
    this.mode = recording ? (mode ?? 'none') : 'none';
    this.recording = recording;
    this.#text = message?.trim() || (this.mode === 'ask' ? RECORDING_CONSENT_DEFAULTS.ask : RECORDING_CONSENT_DEFAULTS.announce);
    this.allowed = new Promise((r) => (this.#resolve = r));
    if (this.mode !== 'ask') this.#decide(recording);
  }

  /** The recording waits for the caller's answer. */
  get waitsForAnswer(): boolean {
    return this.mode === 'ask';
  }

  /** The question was asked and is not answered yet: the caller's next turn is the answer. */
  get pending(): boolean {
    return this.mode === 'ask' && this.#played && this.#decided === null;
  }

  get result(): RecordingConsentResult {
    if (this.mode === 'none') return 'none';
    if (this.mode === 'announce') return this.#played ? 'announced' : 'none';
    return this.#decided ? 'accepted' : 'declined';
  }

  /**
   * Called before the agent's first words. Plays the sentence once (through `say`, which resolves at its
   * playout) and says whether the first words must wait: true while the question awaits its answer, and then
   * `then` is called once it is decided.
   */
  before(say: (text: string) => Promise<void>, then: () => void): boolean {
    if (this.mode === 'none') return false;
    if (!this.#played) {
      this.#played = true;
      const played = say(this.#text);
      if (this.mode === 'ask') {
        this.#then = then;
        // The wait for the answer runs from the end of the question.
        void played.then(
          () => this.#armTimer(),
          () => this.#armTimer(),
        );
      }
    }
    return this.mode === 'ask' && this.#decided === null;
  }

  /** The caller's turn while the question is pending: the answer. */
  answer(text: string): 'yes' | 'no' | null {
    const verdict = classifyConsent(text);
    this.#finish(verdict === 'yes');
    return verdict;
  }

  /** The call ends: an unanswered question is a no. */
  close(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#decided === null) {
      this.#then = null;
      this.#decide(false);
    }
  }

  #armTimer(): void {
    if (this.#decided !== null || this.#timer) return;
    this.#timer = setTimeout(() => this.#finish(false), ANSWER_WAIT_MS);
  }

  #finish(allowed: boolean): void {
    if (this.#decided !== null) return;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#decide(allowed);
    const then = this.#then;
    this.#then = null;
    then?.();
  }

  #decide(allowed: boolean): void {
    this.#decided = allowed;
    this.#resolve(allowed);
  }
}
