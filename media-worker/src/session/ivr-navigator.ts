// Phone-menu navigation on outbound calls with an `ivr_goal` (docs/decisions/035-phone-menu-navigation.md). From
// the answer until a person speaks, the agent is silent: each of the callee's utterances (once the callee has
// stopped speaking for a moment, so a menu read in several sentences is one prompt) is a menu ("For billing,
// press 2"), a hold or announcement message ("please hold"), or a person ("how can I help you?"). A menu gets
// keys (RFC 2833 telephone events, the call's sendDtmf) towards the goal: the call's model chooses them, keyword
// overlap between the goal and the options when its answer is unusable. The navigation gives up (the call ends,
// ivr_failed) when no option leads to the goal, the same prompt (as heard) comes a third time, or after max_menus
// menus.
import { llm } from '@livekit/agents';
import type { Logger } from '../../../shared/logger.ts';
import { completeWithin } from './completion.ts';

export interface MenuOption {
  /** The keys to press: a digit, `*` or `#`. */
  keys: string;
  /** What the option is for, as the prompt said it ("billing", "pay a bill"). */
  label: string;
}

export type UtteranceKind = 'menu' | 'hold' | 'person';

export interface Classified {
  kind: UtteranceKind;
  options: MenuOption[];
}

const DIGIT_WORDS: Record<string, string> = {
  zero: '0', oh: '0', one: '1', two: '2', three: '3', four: '4', five: '5', six: '6', seven: '7', eight: '8', nine: '9',
  star: '*', asterisk: '*', pound: '#', hash: '#',
};
const KEY = String.raw`(\d|\*|#)`;
const VERB = String.raw`(?:press|dial|push|enter|select|hit|key in|touch)`;

/**
 * Lower case, keys as symbols ("press two" -> "press 2", "the star key" -> "*"), spaces collapsed; sentence
 * punctuation is kept (it separates options), other punctuation dropped.
 */
export function normalizeMenuText(text: string): string {
  let t = ` ${text.toLowerCase()} `.replace(/[“”"()]/g, ' ');
  t = t.replace(new RegExp(String.raw`\b(zero|oh|one|two|three|four|five|six|seven|eight|nine|star|asterisk|pound|hash)\b`, 'g'), (w) => DIGIT_WORDS[w]!);
  // "the 2 key", "number 2", "option 2" -> "2"
  t = t.replace(new RegExp(String.raw`\b(?:the\s+)?(?:number\s+|option\s+)?${KEY}\s+(?:key|button|sign)\b`, 'g'), '$1');
  t = t.replace(new RegExp(String.raw`\b(?:number|option)\s+${KEY}`, 'g'), '$1');
  t = t.replace(/[^\p{L}\p{N}*#.;!?,'\s-]/gu, ' ');
  return t.replace(/\s+/g, ' ').trim();
}

const cleanLabel = (l: string) =>
  l
    .replace(/^(?:please\s+)?(?:and\s+|or\s+)?/, '')
    .replace(/[,\s]+(?:please|now|or|and)$/, '')
    .replace(/[,.;!?\s]+$/, '')
    .trim();

/**
 * The options of a menu prompt, in either order of words: "press 1 for sales" (key first) or "for sales, press 1"
 * / "to pay a bill, press 2" / "if you are calling about an order, press 3" (key last). Works without punctuation
 * (a transcript often has none): both readings are tried, and the one that finds more options wins.
 */
export function parseMenu(text: string): MenuOption[] {
  const t = normalizeMenuText(text);
  const keyFirst: MenuOption[] = [];
  const kf = new RegExp(String.raw`\b${VERB}\s+${KEY}\s+(?:now\s+)?(?:for|to)\s+(.+?)(?=\s*[.;!?]|,?\s+(?:or\s+)?${VERB}\s|$)`, 'g');
  for (const m of t.matchAll(kf)) keyFirst.push({ keys: m[1]!, label: cleanLabel(m[2]!) });
  const keyLast: MenuOption[] = [];
  const kl = new RegExp(
    String.raw`(?:^|[.;!?,]\s*|\s)(?:for|to|if you(?:'d| would| wish to| want to)? like to|if you want to|if you wish to|if you(?:'re| are) calling (?:about|for|to))\s+([^.;!?]+?),?\s+(?:please\s+)?${VERB}\s+${KEY}(?!\w)`,
    'g',
  );
  for (const m of t.matchAll(kl)) keyLast.push({ keys: m[2]!, label: cleanLabel(m[1]!) });
  const pick = keyLast.length > keyFirst.length ? keyLast : keyFirst.length > keyLast.length ? keyFirst : firstStarts(t, keyFirst, keyLast);
  // One option per key (a prompt that repeats itself), labels non-empty.
  const seen = new Set<string>();
  return pick.filter((o) => o.label && !seen.has(o.keys) && seen.add(o.keys));
}

/** Equal counts: the reading whose first option comes first in the text ("press 1 for..." vs "for X, press 1"). */
function firstStarts(t: string, keyFirst: MenuOption[], keyLast: MenuOption[]): MenuOption[] {
  if (!keyFirst.length) return keyLast;
  const verbAt = t.search(new RegExp(String.raw`\b${VERB}\s+${KEY}`));
  const labelAt = t.indexOf(keyLast[0]!.label);
  return verbAt >= 0 && (labelAt < 0 || verbAt < labelAt) ? keyFirst : keyLast;
}

const HOLD =
  /\b(please (hold|wait|stay on the line|remain on the line)|(stay|remain) on the line|hold (on|the line)|your call is (very )?(important|valuable|being transferred)|(all )?(of )?our (agents|representatives|operators|staff|advisors|team members) are|(assisting|helping|serving) other (customers|callers)|in the order (it was|they were|calls are) received|(estimated|expected|current) wait|wait time|transferring (you|your call)|connecting (you|your call)|we will be with you|thank you for (calling|waiting|holding|your patience)|welcome to|(calls?|conversation) (may|will) be (recorded|monitored)|(recorded|monitored) for (quality|training)|listen carefully|(menu )?options have changed|following options|main menu|one moment|you have reached)\b/;
/** A person's opening: a question or offer a menu does not make. */
const PERSON = /\b(how (can|may|could|might) (i|we) (help|assist|direct)|what can i do for you|how can i be of (help|assistance)|(who|whom) am i speaking|speaking[,.!?]?\s*$|^(hi|hello|hey|yes|yeah)\b[^.]{0,20}\??$)/;

/** What the callee said: a menu (with its options), a hold or announcement message, or a person. */
export function classifyUtterance(text: string): Classified {
  const options = parseMenu(text);
  if (options.length) return { kind: 'menu', options };
  const t = normalizeMenuText(text);
  if (PERSON.test(t)) return { kind: 'person', options: [] };
  if (HOLD.test(t)) return { kind: 'hold', options: [] };
  return { kind: 'person', options: [] };
}

/** The prompt's words and keys only: lower case, keys as symbols, no punctuation. */
export const promptKey = (text: string) =>
  normalizeMenuText(text)
    .replace(/[.;!?,]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

/**
 * Whether two prompts are the same menu as heard. A recogniser rarely gives a replayed recording the same words
 * twice (a word dropped at the end, a pause split differently, "two" against "2"), so prompts compare on what
 * makes a menu: its content words (stop words dropped, stemmed) and the keys it names. They are the same when the
 * Dice similarity of those is at least 0.8; prompts with neither compare on their words and keys.
 */
export function samePrompt(a: string, b: string): boolean {
  const ta = menuTokens(a);
  const tb = menuTokens(b);
  if (!ta.size || !tb.size) return !ta.size && !tb.size && promptKey(a) === promptKey(b);
  let shared = 0;
  for (const t of ta) if (tb.has(t)) shared++;
  return (2 * shared) / (ta.size + tb.size) >= 0.8;
}

const KEY_NAMED = new RegExp(String.raw`\b${VERB}\s+${KEY}`, 'g');
/** A prompt's content words and the keys it names (as `key:2`), keys read as symbols first ("press two"). */
function menuTokens(text: string): Set<string> {
  const t = normalizeMenuText(text);
  const tokens = contentWords(t);
  for (const m of t.matchAll(KEY_NAMED)) tokens.add(`key:${m[1]}`);
  return tokens;
}

const STOP_WORDS = new Set(
  'a an the to of for in on at by with and or my our your you i we me us it its is are be been am please reach get speak talk someone somebody team department dept person people about into from this that want need would like go through call calling press key option options number the menu'.split(
    ' ',
  ),
);
/** Content words, crudely stemmed (payments ~ payment, billing ~ bill). */
function contentWords(text: string): Set<string> {
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  return new Set(words.filter((w) => !STOP_WORDS.has(w) && w.length > 1).map(stem));
}
function stem(w: string): string {
  for (const suffix of ['ing', 'ies', 'es', 's', 'ed']) {
    if (w.length > suffix.length + 2 && w.endsWith(suffix)) return suffix === 'ies' ? `${w.slice(0, -3)}y` : w.slice(0, -suffix.length);
  }
  return w;
}

/** The deterministic choice: the option sharing most content words with the goal (first on a tie); null if none. */
export function chooseByKeywords(goal: string, options: MenuOption[]): string | null {
  const want = contentWords(goal);
  let best: { keys: string; score: number } | null = null;
  for (const o of options) {
    let score = 0;
    for (const w of contentWords(o.label)) if (want.has(w)) score++;
    if (score > 0 && (!best || score > best.score)) best = { keys: o.keys, score };
  }
  return best?.keys ?? null;
}

/**
 * The model's answer: the keys of an offered option, 'none', or null when it is neither (then the keyword choice
 * decides). Keys the menu did not offer are not usable: a model that invents an option must not be pressed.
 */
export function parseChoice(answer: string, options: MenuOption[]): string | null {
  const a = answer.trim().toLowerCase();
  if (!a) return null;
  if (/^["'`]?none\b/.test(a) || /^no (option|key)/.test(a)) return 'none';
  const m = /[0-9*#]+/.exec(normalizeMenuText(a));
  if (!m) return null;
  const keys = m[0];
  if (!options.length || options.some((o) => o.keys === keys)) return keys;
  return null;
}

export const NAVIGATION_PROMPT =
  'You navigate an automated phone menu for a caller. You are given the goal of the call and the menu prompt the ' +
  'phone system just read. Answer with only the key to press towards the goal (one of the keys the menu offers, ' +
  'for example 2), or the word none if no option leads towards the goal. Answer nothing else.';

/** The navigation request: the goal, the keys pressed so far and the menu. */
export function navigationContext(goal: string, menu: string, pressed: string[]): llm.ChatContext {
  const ctx = llm.ChatContext.empty();
  ctx.addMessage({ role: 'system', content: NAVIGATION_PROMPT });
  ctx.addMessage({
    role: 'user',
    content: `Goal: ${goal}\nKeys pressed so far: ${pressed.length ? pressed.join(', ') : 'none'}\nMenu: ${menu}`,
  });
  return ctx;
}

/** One completion of the call's model with the navigation prompt; its text, or null on an error or timeout. */
export async function askModel(model: llm.LLM | null, goal: string, menu: string, pressed: string[], timeoutMs = 8000): Promise<string | null> {
  // A realtime model answers in speech, not in text: no decision (the navigator then waits for a person).
  if (!model) return null;
  try {
    return await completeWithin(model, navigationContext(goal, menu, pressed), timeoutMs);
  } catch {
    return null;
  }
}

export type IvrOutcome = 'person' | 'no_option' | 'repeated_prompt' | 'max_menus';

export interface IvrStep {
  kind: UtteranceKind;
  /** The callee's words (through the call's privacy rules when logged or reported). */
  text: string;
  /** A menu: the keys pressed, and who chose them. */
  keys?: string;
  chosen_by?: 'model' | 'keywords';
  options?: MenuOption[];
}

export interface IvrNavigatorOptions {
  goal: string;
  maxMenus: number;
  /** The call's logger (bound to its call id). */
  logger: Logger;
  /** The model's answer to the navigation request (askModel with the call's LLM); null when it has none. */
  ask: (menu: string, pressed: string[]) => Promise<string | null>;
  /** Sends the keys (RFC 2833 through the SIP bridge). */
  press: (keys: string) => Promise<void>;
  /** A person answered: the conversation starts with their words. */
  onPerson: (text: string) => void;
  /** The navigation gave up: the call ends. */
  onGiveUp: (outcome: Exclude<IvrOutcome, 'person'>) => void;
  /** Each step as it happens, for the call's messages. */
  onStep?: (step: IvrStep) => void;
  /** Text as logs may carry it (the call's data retention). */
  redact?: (text: string) => string;
  /** Callee silence after an utterance before it is taken as complete (ms): a menu is often read in sentences. */
  settleMs?: number;
  /**
   * The wait instead when the recogniser has words that no completed turn holds yet (ms; 4 x settleMs by default):
   * long enough for their turn to complete, so a recogniser that drops them does not stall the navigation.
   */
  inFlightMs?: number;
}

/**
 * The navigation state of one call. Fed the callee's completed turns (`hear`), speaking state (`calleeSpeaking`)
 * and the recogniser's transcripts as they come (`transcribed`); decides once the callee has been quiet for
 * `settleMs` after words and every word transcribed is in a completed turn. The last condition matters when the VAD
 * is late (a busy machine): a turn can complete at a pause inside the menu ("For support,") while "press 3" is
 * already being transcribed, and deciding then would take the menu without its last option.
 */
export class IvrNavigator {
  /** True from the answer until a person speaks or the navigation gives up. */
  navigating = true;
  outcome: IvrOutcome | null = null;
  readonly steps: IvrStep[] = [];
  readonly pressed: string[] = [];
  menus = 0;
  readonly #opts: IvrNavigatorOptions;
  /** The menu prompts decided on so far, for the repeat rule. */
  readonly #heard: string[] = [];
  #pending: string[] = [];
  #timer: NodeJS.Timeout | null = null;
  #speaking = false;
  #deciding = false;
  /** The recogniser has given words since the last completed turn: that turn is still to come. */
  #inFlight = false;

  constructor(opts: IvrNavigatorOptions) {
    this.#opts = opts;
  }

  /** A completed turn of the callee. */
  hear(text: string): void {
    if (!this.navigating || !text.trim()) return;
    // The completed turn holds every word transcribed before it.
    this.#inFlight = false;
    this.#pending.push(text.trim());
    this.#arm();
  }

  /** A transcript of the callee's speech as the recogniser gives it (interim or final), before its turn completes. */
  transcribed(text: string): void {
    if (!this.navigating || !text.trim()) return;
    this.#inFlight = true;
    this.#arm();
  }

  /** The callee started or stopped speaking (the session's user state). */
  calleeSpeaking(speaking: boolean): void {
    this.#speaking = speaking;
    if (speaking) this.#clear();
    else this.#arm();
  }

  /** Stops timers (the call ended). */
  stop(): void {
    this.navigating = false;
    this.#clear();
  }

  #arm(): void {
    this.#clear();
    if (!this.navigating || this.#speaking || !this.#pending.length || this.#deciding) return;
    const settle = this.#opts.settleMs ?? 1000;
    this.#timer = setTimeout(() => void this.#decide(), this.#inFlight ? (this.#opts.inFlightMs ?? 4 * settle) : settle);
  }

  #clear(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
  }

  #log(fields: Record<string, unknown>, msg: string): void {
    this.#opts.logger.info(fields, msg);
  }

  #redact(text: string): string {
    return this.#opts.redact ? this.#opts.redact(text) : text;
  }

  /** The prompt heard since the last decision, taken as a whole. */
  async #decide(): Promise<void> {
    this.#timer = null;
    if (!this.navigating || this.#deciding) return;
    const text = this.#pending.join(' ');
    this.#pending = [];
    this.#inFlight = false;
    this.#deciding = true;
    try {
      await this.#handle(text);
    } finally {
      this.#deciding = false;
    }
    // Words heard while deciding are the next prompt.
    this.#arm();
  }

  async #handle(text: string): Promise<void> {
    const { kind, options } = classifyUtterance(text);
    if (kind === 'hold') {
      this.#record({ kind, text });
      this.#log({ kind, text: this.#redact(text) }, 'ivr: waiting');
      return;
    }
    if (kind === 'person') {
      this.#record({ kind, text });
      this.#finish('person', { text: this.#redact(text) });
      this.#opts.onPerson(text);
      return;
    }
    this.menus++;
    const times = this.#heard.filter((earlier) => samePrompt(earlier, text)).length + 1;
    this.#heard.push(text);
    if (times >= 3 || this.menus > this.#opts.maxMenus) {
      this.#giveUp(times >= 3 ? 'repeated_prompt' : 'max_menus', text, options);
      return;
    }
    const answer = await this.#opts.ask(text, this.pressed);
    if (!this.navigating) return;
    const parsed = parseChoice(answer ?? '', options);
    let keys: string | null;
    let chosenBy: 'model' | 'keywords';
    if (parsed === 'none') {
      keys = null;
      chosenBy = 'model';
    } else if (parsed) {
      keys = parsed;
      chosenBy = 'model';
    } else {
      keys = chooseByKeywords(this.#opts.goal, options);
      chosenBy = 'keywords';
    }
    if (!keys) {
      this.#giveUp('no_option', text, options, { chosen_by: chosenBy, answer: answer === null ? null : this.#redact(answer) });
      return;
    }
    this.pressed.push(keys);
    this.#record({ kind, text, keys, chosen_by: chosenBy, options });
    this.#log({ menu: this.menus, keys, chosen_by: chosenBy, options: options.map((o) => o.keys), heard_times: times }, 'ivr: pressing');
    try {
      await this.#opts.press(keys);
    } catch (err) {
      this.#opts.logger.warn({ err: (err as Error).message }, 'ivr: sending the keys failed');
    }
  }

  #record(step: IvrStep): void {
    this.steps.push(step);
    this.#opts.onStep?.(step);
  }

  #giveUp(outcome: Exclude<IvrOutcome, 'person'>, text: string, options: MenuOption[], extra: Record<string, unknown> = {}): void {
    this.#record({ kind: 'menu', text, options });
    this.#finish(outcome, { menu: this.menus, options: options.map((o) => o.keys), ...extra });
    this.#opts.onGiveUp(outcome);
  }

  #finish(outcome: IvrOutcome, fields: Record<string, unknown>): void {
    this.navigating = false;
    this.outcome = outcome;
    this.#clear();
    this.#log({ outcome, menus: this.menus, pressed: this.pressed, ...fields }, outcome === 'person' ? 'ivr: a person answered' : 'ivr: giving up');
  }
}

/** The name of the navigation's key presses in the call's messages (a tool call with the keys and the menu). */
export const IVR_PRESS_TOOL = 'ivr_press_keys';

interface SessionHistory {
  _conversationItemAdded(item: llm.ChatMessage): void;
  _toolItemsAdded(items: (llm.FunctionCall | llm.FunctionCallOutput)[]): void;
}

/**
 * A step into the call's messages: the callee's words as a user message, a key press as a tool call (so the
 * call record shows the menus heard and the keys pressed). Added to the session's history only: the agent's own
 * context gets `handoverNote` when a person answers.
 */
export function recordStep(session: SessionHistory, step: IvrStep, n: number): void {
  session._conversationItemAdded(llm.ChatMessage.create({ role: 'user', content: step.text }));
  if (!step.keys) return;
  const callId = `ivr_${n}`;
  const chosen = step.options?.find((o) => o.keys === step.keys)?.label;
  session._toolItemsAdded([
    llm.FunctionCall.create({ callId, name: IVR_PRESS_TOOL, args: JSON.stringify({ keys: step.keys }) }),
    llm.FunctionCallOutput.create({
      callId,
      name: IVR_PRESS_TOOL,
      output: `Pressed ${step.keys}${chosen ? ` (${chosen})` : ''}; chosen by ${step.chosen_by === 'model' ? 'the model' : 'keyword match'}`,
      isError: false,
    }),
  ]);
}

/** What the agent's model is told when the person answers: the menu is behind it, the goal, the keys pressed. */
export function handoverNote(goal: string, pressed: string[]): string {
  return (
    `This outbound call went through the callee's phone menu towards the goal "${goal}"` +
    (pressed.length ? ` (keys pressed: ${pressed.join(', ')})` : '') +
    '. A person has now answered: talk to them as the rest of these instructions say.'
  );
}
