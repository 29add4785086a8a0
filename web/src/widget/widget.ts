// The drop-in widget's UI: a call button, a mute toggle, the state and errors in words, the live transcript
// (an ARIA log) and each turn's latency. It drives the SDK through its public API only.
import { startCall, type StartCallOptions, type VapCall } from '../sdk/index.ts';
import { VapError } from '../sdk/errors.ts';
import type { CallState } from '../sdk/protocol.ts';
import { WIDGET_CSS } from './styles.ts';

export type WidgetOptions = Omit<StartCallOptions, 'audioElement'> & { title?: string };

const STATE_WORDS: Record<CallState, string> = {
  connecting: 'Connecting…',
  listening: 'Listening',
  thinking: 'Thinking…',
  speaking: 'Speaking',
  ended: 'Call ended',
};

const h = <K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text = ''): HTMLElementTagNameMap[K] => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text) el.textContent = text;
  return el;
};

export class Widget {
  readonly host: HTMLElement;
  #opts: WidgetOptions;
  #call: VapCall | null = null;
  #starting = false;
  #callButton: HTMLButtonElement;
  #muteButton: HTMLButtonElement;
  #status: HTMLParagraphElement;
  #error: HTMLParagraphElement;
  #log: HTMLDivElement;
  #latency: HTMLParagraphElement;
  #lines = new Map<string, HTMLParagraphElement>();

  constructor(host: HTMLElement, opts: WidgetOptions) {
    this.host = host;
    this.#opts = opts;
    const root = host.attachShadow({ mode: 'open' });
    const style = h('style');
    style.textContent = WIDGET_CSS;
    const title = opts.title ?? 'Talk to us';
    const panel = h('section', { class: 'panel', 'aria-label': title });
    const controls = h('div', { class: 'controls' });
    this.#callButton = h('button', { type: 'button', class: 'call' }, 'Start call');
    this.#muteButton = h('button', { type: 'button', class: 'mute', 'aria-pressed': 'false' }, 'Mute');
    this.#muteButton.hidden = true;
    controls.append(this.#callButton, this.#muteButton);
    this.#status = h('p', { class: 'status', role: 'status' }, title);
    this.#error = h('p', { class: 'error', role: 'alert' });
    this.#log = h('div', { class: 'log', role: 'log', 'aria-live': 'polite', 'aria-label': 'Call transcript', tabindex: '0' });
    this.#latency = h('p', { class: 'latency', 'aria-live': 'off' });
    panel.append(controls, this.#status, this.#error, this.#log, this.#latency);
    root.append(style, panel);
    this.#callButton.addEventListener('click', () => void (this.#call ? this.stop() : this.start()));
    this.#muteButton.addEventListener('click', () => this.#toggleMute());
  }

  async start(): Promise<void> {
    if (this.#call || this.#starting) return;
    this.#starting = true;
    this.#error.textContent = '';
    this.#log.replaceChildren();
    this.host.removeAttribute('data-agent-audio');
    this.host.removeAttribute('data-call-id');
    this.#lines.clear();
    this.#latency.textContent = '';
    this.#callButton.disabled = true;
    this.#status.textContent = STATE_WORDS.connecting;
    try {
      const call = await startCall(this.#opts);
      this.#call = call;
      this.host.setAttribute('data-call-id', call.id);
      this.#reflect('state', call.state);
      call.on('state', (s) => {
        this.#status.textContent = STATE_WORDS[s];
        this.#reflect('state', s);
      });
      call.on('agent-audio', () => {
        this.host.setAttribute('data-agent-audio', '');
        this.#reflect('agent-audio', null);
      });
      call.on('transcript', (t) => {
        this.#showTranscript(t.id, t.role, t.text, t.final);
        this.#reflect('transcript', t);
      });
      call.on('metrics', (m) => {
        this.#reflect('metrics', m);
        if (m.e2e_latency_ms === null) return;
        const parts = [
          m.eou_delay_ms !== null ? `end of turn ${Math.round(m.eou_delay_ms)} ms` : null,
          m.llm_ttft_ms !== null ? `model ${Math.round(m.llm_ttft_ms)} ms` : null,
          m.tts_ttfb_ms !== null ? `voice ${Math.round(m.tts_ttfb_ms)} ms` : null,
        ].filter(Boolean);
        this.#latency.textContent = `Reply latency, turn ${m.turn}: ${Math.round(m.e2e_latency_ms)} ms${parts.length ? ` (${parts.join(', ')})` : ''}`;
      });
      call.on('error', (e) => this.#showError(e));
      call.on('ended', (e) => {
        this.#onEnded();
        this.#reflect('ended', e);
      });
      this.#status.textContent = STATE_WORDS[call.state];
      this.#callButton.textContent = 'End call';
      this.#callButton.toggleAttribute('data-active', true);
      this.#muteButton.hidden = false;
    } catch (err) {
      this.#showError(err);
      this.#status.textContent = 'Not connected';
    } finally {
      this.#starting = false;
      this.#callButton.disabled = false;
    }
  }

  async stop(): Promise<void> {
    await this.#call?.stop();
  }

  /**
   * Tells the host page: the state as `data-state` on the widget element (a CSS hook), and each call event as
   * a `vap:<event>` DOM event from it (detail: the SDK event's value).
   */
  #reflect(ev: string, detail: unknown): void {
    if (ev === 'state') this.host.setAttribute('data-state', String(detail));
    this.host.dispatchEvent(new CustomEvent(`vap:${ev}`, { detail, bubbles: true, composed: true }));
  }

  #onEnded(): void {
    this.#call = null;
    this.#status.textContent = STATE_WORDS.ended;
    this.#callButton.textContent = 'Start call';
    this.#callButton.toggleAttribute('data-active', false);
    this.#muteButton.hidden = true;
    this.#muteButton.setAttribute('aria-pressed', 'false');
  }

  #toggleMute(): void {
    const call = this.#call;
    if (!call) return;
    if (call.muted) call.unmute();
    else call.mute();
    this.#muteButton.setAttribute('aria-pressed', String(call.muted));
  }

  #showTranscript(id: string, role: 'user' | 'agent', text: string, final: boolean): void {
    const key = `${role}:${id}`;
    let line = this.#lines.get(key);
    if (!line) {
      line = h('p', { 'data-role': role });
      line.append(h('span', { class: 'who' }, role === 'user' ? 'You: ' : 'Agent: '), h('span', { class: 'text' }));
      this.#lines.set(key, line);
      this.#log.append(line);
    }
    line.querySelector('.text')!.textContent = text;
    line.classList.toggle('interim', !final);
    if (final) line.setAttribute('data-final', '');
    this.#log.scrollTop = this.#log.scrollHeight;
  }

  #showError(err: unknown): void {
    const e = err instanceof VapError ? err : new VapError('unknown', err instanceof Error ? err.message : String(err));
    this.#error.setAttribute('data-code', e.code);
    this.#error.textContent = e.message;
    this.#reflect('error', { code: e.code, message: e.message });
  }
}
