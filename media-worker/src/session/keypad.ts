// Keypad input on a phone leg: digits collected until '#' or a short pause become one user turn. The digits
// are what the caller typed (account numbers, PINs, card numbers), so the log says how many, never which.
import type { Logger } from '../../../shared/logger.ts';

export const DTMF_PAUSE_MS = 1500;

export class KeypadCollector {
  private digits = '';
  private timer: NodeJS.Timeout | undefined;
  private readonly onTurn: (pressed: string) => void;
  private readonly logger: Logger;
  private readonly pauseMs: number;

  constructor(opts: { onTurn: (pressed: string) => void; logger: Logger; pauseMs?: number }) {
    this.onTurn = opts.onTurn;
    this.logger = opts.logger;
    this.pauseMs = opts.pauseMs ?? DTMF_PAUSE_MS;
  }

  /** One key from the caller: '#' ends the entry now, any other key waits for the pause. */
  press(digit: string): void {
    if (digit === '#') return this.flush();
    this.digits += digit;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.flush(), this.pauseMs);
  }

  flush(): void {
    clearTimeout(this.timer);
    const pressed = this.digits;
    this.digits = '';
    if (!pressed) return;
    this.logger.info({ digit_count: pressed.length }, 'dtmf received');
    this.onTurn(pressed);
  }

  stop(): void {
    clearTimeout(this.timer);
    this.digits = '';
  }
}
