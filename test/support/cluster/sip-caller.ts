// A phone caller for the fault runs: SIPp (test/support/sip-phone.ts) dials a number bought from the simulated
// carrier, through the cluster's SIP bridge; it hears the greeting in the RTP it receives, and can ask the question
// and listen for the answer, as the web caller does.
import { randomInt } from 'node:crypto';
import { nowMs } from '../rtc-client.ts';
import { SipPhone } from '../sip-phone.ts';
import type { Pcm } from '../speech.ts';
import type { Caller } from './callers.ts';

type Api = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>;

/** A sample louder than this is speech (µ-law decoded, int16 scale), as the inbound e2e file hears it. */
const LOUD = 1500;

/** Buys a number for `agentId` from the simulated carrier; resolves with it. */
export async function buyNumber(api: Api, agentId: string): Promise<string> {
  const res = await api('POST', '/v1/phone-numbers', { agent_id: agentId, area_code: '415' });
  if (res.status !== 200) throw new Error(`POST /v1/phone-numbers answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.phone_number as string;
}

export class SipCaller implements Caller {
  readonly kind = 'sip' as const;
  readonly phone: SipPhone;
  readonly from: string;
  id = '';
  agentLeftAt: number | null = null;
  disconnectedAt: number | null = null;
  readonly #api: Api;
  readonly #question: Pcm;
  #watch: NodeJS.Timeout;
  #left = false;

  private constructor(api: Api, phone: SipPhone, from: string, question: Pcm) {
    this.#api = api;
    this.phone = phone;
    this.from = from;
    this.#question = question;
    // The platform ended the call: the bridge sent BYE.
    this.#watch = setInterval(() => {
      if (!this.#left && this.phone.ended === 'remote') this.disconnectedAt ??= nowMs();
    }, 200);
  }

  static async dial(api: Api, bridge: string, number: string, question: Pcm): Promise<SipCaller> {
    const from = `+1555${randomInt(1_000_000, 9_999_999)}`;
    const phone = await SipPhone.call({ bridge, to: number, from, timeoutSeconds: 600 });
    return new SipCaller(api, phone, from, question);
  }

  /** The call's record, found by the caller's number (each caller dials from a number of its own). */
  async resolveId(): Promise<string> {
    if (this.id) return this.id;
    try {
      const list = await this.#api('GET', '/v1/calls?limit=100');
      const row = (list.body?.items ?? []).find((c: { from_number: string | null }) => c.from_number === this.from);
      if (row) this.id = row.id as string;
    } catch {
      // Not yet: asked again later.
    }
    return this.id;
  }

  #loudSince(from: number): boolean {
    const r = this.phone.received;
    for (let i = from; i < r.length; i++) if (Math.abs(r[i]!) > LOUD) return true;
    return false;
  }

  async greeting(timeoutMs: number): Promise<number> {
    // Answered once an agent has joined (the bridge rings until then, up to SIP_RINGING_TIMEOUT_SECONDS).
    await this.phone.waitFor('the 200 OK', () => this.phone.answered, timeoutMs);
    await this.phone.startMedia();
    await this.phone.waitFor('the greeting', () => this.#loudSince(0), timeoutMs);
    const at = nowMs();
    const end = Date.now() + 20_000;
    while (!(await this.resolveId()) && Date.now() < end) await new Promise((r) => setTimeout(r, 500));
    return at;
  }

  async ask(timeoutMs = 20_000): Promise<number | null> {
    if (this.phone.ended) return null;
    try {
      await this.phone.speak(this.#question);
      const from = this.phone.received.length;
      const spokenAt = nowMs();
      await this.phone.waitFor('an answer', () => this.#loudSince(from), timeoutMs);
      return Math.round(nowMs() - spokenAt);
    } catch {
      return null;
    }
  }

  async leave(): Promise<void> {
    if (this.#left) return;
    this.#left = true;
    clearInterval(this.#watch);
    if (!this.id) await this.resolveId();
    await this.phone.close().catch(() => {});
  }
}
