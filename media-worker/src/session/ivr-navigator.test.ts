// Phone-menu navigation: the classifier (menu shapes either way round, keys as words, hold messages, a person),
// the model's answer and the keyword fallback, and the navigator's loop protection (max menus, the same prompt
// three times, no option towards the goal), driven as a call drives it: completed turns and the callee's silence.
import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../../shared/logger.ts';
import {
  IvrNavigator,
  chooseByKeywords,
  classifyUtterance,
  navigationContext,
  parseChoice,
  parseMenu,
  promptKey,
  samePrompt,
  type IvrNavigatorOptions,
  type IvrOutcome,
} from './ivr-navigator.ts';

const LEVEL1 = 'For sales, press 1. For billing, press 2. For support, press 3.';
const LEVEL2 = 'For invoices, press 1. For payments, press 2.';

describe('parseMenu', () => {
  it('reads "for X, press N" and "press N for X", with and without punctuation', () => {
    const want = [
      { keys: '1', label: 'sales' },
      { keys: '2', label: 'billing' },
      { keys: '3', label: 'support' },
    ];
    expect(parseMenu(LEVEL1)).toEqual(want);
    expect(parseMenu('for sales press one for billing press two for support press three')).toEqual(want);
    expect(parseMenu('Press 1 for sales. Press 2 for billing. Press 3 for support.')).toEqual(want);
    expect(parseMenu('press one for sales press two for billing press three for support')).toEqual(want);
  });

  it('reads "to X, press N", "if you are calling about X", keys as words, star, pound and zero', () => {
    expect(parseMenu('To pay a bill, press two. If you are calling about an order, press 3. For all other questions, press the star key.')).toEqual([
      { keys: '2', label: 'pay a bill' },
      { keys: '3', label: 'an order' },
      { keys: '*', label: 'all other questions' },
    ]);
    expect(parseMenu('Press zero to speak to an operator, or press pound to repeat.')).toEqual([
      { keys: '0', label: 'speak to an operator' },
      { keys: '#', label: 'repeat' },
    ]);
    expect(parseMenu('If you would like to hear these options again, press nine.')).toEqual([{ keys: '9', label: 'hear these options again' }]);
  });

  it('finds no options in speech that names no key', () => {
    expect(parseMenu('Hello, this is billing, how can I help you?')).toEqual([]);
    expect(parseMenu('I pressed the button for you.')).toEqual([]);
  });
});

describe('classifyUtterance', () => {
  it('a menu, also after an announcement', () => {
    expect(classifyUtterance(LEVEL1).kind).toBe('menu');
    expect(classifyUtterance(`Thank you for calling Acme. Your call is important to us. ${LEVEL2}`)).toMatchObject({ kind: 'menu', options: [{ keys: '1' }, { keys: '2' }] });
  });

  it('hold and announcement messages are waited through', () => {
    for (const t of [
      'Please hold.',
      'Your call is important to us.',
      'All of our representatives are currently assisting other customers.',
      'Please stay on the line, your call will be answered in the order it was received.',
      'Thank you for calling Acme.',
      'This call may be recorded for quality and training purposes.',
      'Please listen carefully as our menu options have changed.',
    ]) {
      expect(classifyUtterance(t).kind, t).toBe('hold');
    }
  });

  it("a person: a greeting or question not shaped like a menu, even after the company's name", () => {
    for (const t of ['Hello, this is billing, how can I help you?', 'Thank you for calling Acme billing, how may I help you?', 'Hello?', 'Jane speaking.', 'Yes, who is this?']) {
      expect(classifyUtterance(t).kind, t).toBe('person');
    }
  });

  it('prompts compare by their words and keys: punctuation, case and keys as words do not matter', () => {
    expect(promptKey(LEVEL1)).toBe(promptKey('for sales press one for billing press two for support press three'));
    expect(promptKey(LEVEL1)).not.toBe(promptKey(LEVEL2));
  });

  it('a replayed prompt is the same prompt as a recogniser hears it again: a word dropped, split or spelt otherwise', () => {
    expect(samePrompt(LEVEL1, 'for sales press one for billing press two for support press three')).toBe(true);
    // The last key lost at the end of the audio, or the end of the previous play heard at its start.
    expect(samePrompt(LEVEL1, 'For sales, press 1. For billing, press 2. For support,')).toBe(true);
    expect(samePrompt(LEVEL1, 'press 3. For sales, press 1. For billing, press 2. For support, press 3.')).toBe(true);
    // Different menus, even of the same shape, and a menu with one more option.
    expect(samePrompt(LEVEL1, LEVEL2)).toBe(false);
    expect(samePrompt('For sales, press 1. For billing, press 2.', 'For orders, press 1. For returns, press 2.')).toBe(false);
    expect(samePrompt('Press 1 for sales.', 'For sales, press 2.')).toBe(false);
    expect(samePrompt('Press 1 for sales.', 'Press 1 for the sales team.')).toBe(true);
    // No content words: the keys decide, then the words.
    expect(samePrompt('Press 1 or press 2.', 'press one or press two')).toBe(true);
    expect(samePrompt('Press 1 or press 2.', 'Press 1 or press 3.')).toBe(false);
    expect(samePrompt('One moment.', 'one moment')).toBe(true);
  });
});

describe('choosing the keys', () => {
  it("the model's answer counts when it is an offered key or none", () => {
    const options = parseMenu(LEVEL2);
    expect(parseChoice('2', options)).toBe('2');
    expect(parseChoice('Press two.', options)).toBe('2');
    expect(parseChoice('none', options)).toBe('none');
    expect(parseChoice('None of these.', options)).toBe('none');
    // Not usable: the keyword choice decides.
    expect(parseChoice('5', options)).toBeNull();
    expect(parseChoice('I would choose payments', options)).toBeNull();
    expect(parseChoice('', options)).toBeNull();
  });

  it('the fallback is the option sharing most words with the goal (stemmed), or none', () => {
    const goal = 'reach the payments team in billing';
    expect(chooseByKeywords(goal, parseMenu(LEVEL1))).toBe('2');
    expect(chooseByKeywords(goal, parseMenu(LEVEL2))).toBe('2');
    expect(chooseByKeywords('pay my bill', parseMenu('Press 1 for sales. Press 2 to pay a bill.'))).toBe('2');
    expect(chooseByKeywords('talk about a delivery', parseMenu(LEVEL2))).toBeNull();
  });

  it('the navigation request carries the goal, the keys pressed and the menu', () => {
    const ctx = navigationContext('reach billing', LEVEL2, ['2']);
    const user = ctx.items.at(-1) as { textContent?: string };
    expect(user.textContent).toContain('Goal: reach billing');
    expect(user.textContent).toContain('Keys pressed so far: 2');
    expect(user.textContent).toContain(`Menu: ${LEVEL2}`);
  });
});

/** A navigator as a call drives it, with a scripted model (null: no usable answer). */
function navigator(opts: { model?: (menu: string) => string | null; maxMenus?: number; goal?: string } = {}) {
  const pressed: string[] = [];
  const asked: string[] = [];
  let person: string | null = null;
  let gaveUp: IvrOutcome | null = null;
  const options: IvrNavigatorOptions = {
    goal: opts.goal ?? 'reach the payments team in billing',
    maxMenus: opts.maxMenus ?? 6,
    logger: createLogger('test', 'silent'),
    settleMs: 0,
    ask: async (menu) => {
      asked.push(menu);
      return opts.model ? opts.model(menu) : null;
    },
    press: async (keys) => void pressed.push(keys),
    onPerson: (text) => (person = text),
    onGiveUp: (o) => (gaveUp = o),
  };
  const nav = new IvrNavigator(options);
  /** The callee says `text` and goes quiet; resolves once the navigator has acted on it. */
  const say = async (...turns: string[]) => {
    const before = nav.steps.length;
    nav.calleeSpeaking(true);
    for (const t of turns) nav.hear(t);
    nav.calleeSpeaking(false);
    await vi.waitFor(() => expect(nav.steps.length).toBeGreaterThan(before));
  };
  return { nav, say, pressed, asked, person: () => person, gaveUp: () => gaveUp };
}

describe('IvrNavigator', () => {
  it('presses what the model chose at each menu, waits through hold messages, and hands over to the person', async () => {
    const n = navigator({ model: (menu) => (menu.includes('invoices') ? '2' : 'Press 2') });
    await n.say(LEVEL1);
    await n.say('Please hold while we connect you.');
    await n.say(LEVEL2);
    expect(n.pressed).toEqual(['2', '2']);
    expect(n.nav.steps.map((s) => [s.kind, s.keys, s.chosen_by])).toEqual([
      ['menu', '2', 'model'],
      ['hold', undefined, undefined],
      ['menu', '2', 'model'],
    ]);
    expect(n.nav.navigating).toBe(true);
    await n.say('Hello, this is billing, how can I help you?');
    expect(n.person()).toBe('Hello, this is billing, how can I help you?');
    expect(n.nav).toMatchObject({ navigating: false, outcome: 'person' });
    // Nothing after the hand-over is navigation.
    n.nav.hear(LEVEL1);
    expect(n.pressed).toEqual(['2', '2']);
  });

  it('a menu read in several turns is one prompt: it is decided once the callee is quiet', async () => {
    const n = navigator({ model: () => null });
    await n.say('For sales, press 1.', 'For billing, press 2.', 'For support, press 3.');
    expect(n.asked).toEqual([LEVEL1]);
    expect(n.pressed).toEqual(['2']);
    expect(n.nav.steps[0]).toMatchObject({ keys: '2', chosen_by: 'keywords' });
  });

  it('gives up (no_option) when the model says none, without pressing', async () => {
    const n = navigator({ model: () => 'none' });
    await n.say(LEVEL1);
    expect(n.gaveUp()).toBe('no_option');
    expect(n.pressed).toEqual([]);
  });

  it('gives up (no_option) when the model has no usable answer and no option shares a word with the goal', async () => {
    const n = navigator({ model: () => 'I cannot tell', goal: 'track a delivery' });
    await n.say(LEVEL2);
    expect(n.gaveUp()).toBe('no_option');
    expect(n.pressed).toEqual([]);
  });

  it('gives up (repeated_prompt) when the same prompt comes a third time, after pressing twice', async () => {
    const n = navigator({ model: () => '2' });
    await n.say(LEVEL1);
    await n.say('for sales press one for billing press two for support press three');
    expect(n.gaveUp()).toBeNull();
    await n.say(LEVEL1);
    expect(n.gaveUp()).toBe('repeated_prompt');
    expect(n.pressed).toEqual(['2', '2']);
  });

  it('gives up (repeated_prompt) on a third play heard with its last words missing', async () => {
    const n = navigator({ model: () => '2' });
    await n.say(LEVEL1);
    await n.say(LEVEL1);
    await n.say('For sales, press 1. For billing, press 2. For support,');
    expect(n.gaveUp()).toBe('repeated_prompt');
    expect(n.pressed).toEqual(['2', '2']);
  });

  it('gives up (max_menus) at the menu after max_menus', async () => {
    const n = navigator({ model: () => '1', maxMenus: 2 });
    await n.say('Press 1 for sales.');
    await n.say('Press 1 for new customers.');
    expect(n.gaveUp()).toBeNull();
    await n.say('Press 1 for the sales team.');
    expect(n.gaveUp()).toBe('max_menus');
    expect(n.pressed).toEqual(['1', '1']);
  });

  it('a hold message repeated is no loop', async () => {
    const n = navigator();
    for (let i = 0; i < 4; i++) await n.say('Your call is important to us. Please stay on the line.');
    expect(n.gaveUp()).toBeNull();
    expect(n.nav.navigating).toBe(true);
  });

  it('waits for words the recogniser has given to reach a completed turn: a turn completed at a pause inside the menu is not the menu', async () => {
    vi.useFakeTimers();
    try {
      const asked: string[] = [];
      const nav = new IvrNavigator({
        goal: 'reach billing',
        maxMenus: 6,
            logger: createLogger('test', 'silent'),
        settleMs: 1000,
        ask: async (menu) => {
          asked.push(menu);
          return '2';
        },
        press: async () => {},
        onPerson: () => {},
        onGiveUp: () => {},
      });
      // A late VAD: the turn completes at "For support," and the callee is taken as quiet, while the recogniser is
      // already giving "press 3".
      nav.transcribed('For sales, press 1. For billing, press 2. For support,');
      nav.hear('For sales, press 1. For billing, press 2. For support,');
      nav.calleeSpeaking(false);
      nav.transcribed('press');
      await vi.advanceTimersByTimeAsync(1500);
      nav.transcribed('press 3.');
      await vi.advanceTimersByTimeAsync(1500);
      expect(asked).toEqual([]);
      nav.hear('press 3.');
      await vi.advanceTimersByTimeAsync(999);
      expect(asked).toEqual([]);
      await vi.advanceTimersByTimeAsync(1);
      expect(asked).toEqual([LEVEL1]);
      expect(parseMenu(asked[0]!).map((o) => o.keys)).toEqual(['1', '2', '3']);

      // Words whose turn never completes (the recogniser dropped them) hold the decision only so long.
      nav.hear('For invoices, press 1.');
      nav.transcribed('for');
      await vi.advanceTimersByTimeAsync(3999);
      expect(asked).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(1);
      expect(asked).toEqual([LEVEL1, 'For invoices, press 1.']);
    } finally {
      vi.useRealTimers();
    }
  });
});
