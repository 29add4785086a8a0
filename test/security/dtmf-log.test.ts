// The caller's keypad digits (account numbers, PINs, card numbers) never reach the logs: the worker logs how
// many keys made up an entry, and hands the digits only to the agent's turn.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { KeypadCollector } from '../../media-worker/src/session/keypad.ts';

function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { lines, logger: pino({ level: 'debug' }, stream) };
}

describe('DTMF in the logs', () => {
  it('logs the count of digits, not the digits, and still gives the agent the entry', () => {
    const { lines, logger } = capture();
    const turns: string[] = [];
    const keypad = new KeypadCollector({ logger, onTurn: (p) => turns.push(p) });
    for (const d of '4929123498761234#') keypad.press(d);
    for (const d of '8675#') keypad.press(d);
    keypad.stop();
    expect(turns).toEqual(['4929123498761234', '8675']);
    const logged = lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.msg === 'dtmf received');
    expect(logged.map((l) => l.digit_count)).toEqual([16, 4]);
    const all = lines.join('');
    expect(all).not.toMatch(/4929|1234|8675/);
    expect(logged.every((l) => !('digits' in l))).toBe(true);
  });
});
