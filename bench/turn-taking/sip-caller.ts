// The SIP leg of bench:turns's dirty-line trials (docs/benchmarks.md, "Turn-taking"): the rig's agent answers a
// number bought from the simulated carrier, and SIPp dials it through the real LiveKit SIP bridge
// (test/support/sip-phone.ts). What the caller says is G.711 µ-law RTP from this process, 20 ms frames that never
// stop: the corpus utterances with the line's noise or echo added at 8 kHz (LineFeed, as the web caller's
// microphone). What it hears is the bridge's RTP, decoded and timed as each packet arrives, read by the same Ear
// as a web call's, so the rig's trials (runTask) run on it unchanged.
import { nowMs } from '../../test/support/rtc-client.ts';
import { SipPhone } from '../../test/support/sip-phone.ts';
import { LineFeed, type Spoken } from '../support/mic.ts';
import type { Pcm } from '../../test/support/speech.ts';
import { SPEECH_RMS } from './corpus.ts';
import { Ear, api, type CallOptions, type Rig, type TrialCall } from './rig.ts';

/** G.711's rate: the caller's line, its echo and what it hears are at this rate. */
export const SIP_RATE = 8000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A SIP call and its caller. */
export interface SipCallHandle extends TrialCall {
  phone: SipPhone;
  mic: SipMic;
}

/**
 * The caller's microphone on the SIP leg: the line's frames, sent as RTP in real time. A clip's start is when the
 * packet with its first sample was sent ("as sent"); its end that plus its length.
 */
export class SipMic {
  readonly #feed: LineFeed;
  readonly #stop: () => Promise<void>;
  #clipStart = 0;

  constructor(phone: SipPhone, line: CallOptions['line']) {
    this.#feed = new LineFeed(SIP_RATE, line);
    this.#stop = phone.stream((n) => {
      const at = nowMs();
      const frame = this.#feed.next(n);
      if (frame.began !== undefined) this.#clipStart = at + (frame.began / SIP_RATE) * 1000;
      frame.ended?.settle({ start: this.#clipStart, end: this.#clipStart + frame.ended.durationMs });
      return frame.samples;
    });
  }

  say(pcm: Pcm): Promise<Spoken> {
    return this.#feed.say(pcm);
  }

  stop(): Promise<void> {
    return this.#stop();
  }
}

/** Buys a number from the simulated carrier for the agent: its inbound calls come through the SIP bridge. */
export async function buyNumber(rig: Rig, agentId: string): Promise<string> {
  const res = await api(rig, 'POST', '/v1/phone-numbers', { agent_id: agentId, area_code: '415' });
  if (res.status !== 200) throw new Error(`POST /v1/phone-numbers answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.phone_number as string;
}

/** The platform's id of the agent's inbound call from `from` (the worker's records name calls by it). */
async function callIdFrom(rig: Rig, agentId: string, from: string, timeoutMs = 15_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const res = await api<{ items: { id: string; from_number: string | null }[] }>(rig, 'GET', `/v1/calls?agent_id=${agentId}&type=inbound&limit=100`);
    const call = res.body?.items?.find((c) => c.from_number === from);
    if (call) return call.id;
    if (Date.now() > end) throw new Error(`no inbound call from ${from} in GET /v1/calls (${res.status})`);
    await sleep(250);
  }
}

let callers = 0;
/** Each call from its own number, so its record can be told from the others'. */
const nextCaller = () => `+1555020${String(1000 + (callers++ % 1000)).slice(1)}`;

/**
 * Dials the agent's number and waits for its first message to play out, as startCall does for a web call. With the
 * Deepgram stand-in, call starts must not overlap: the next stand-in connection is this call's.
 */
export async function startSipCall(rig: Rig, agentId: string, number: string, stt: 'deepgram' | 'local', opts: CallOptions = {}): Promise<SipCallHandle> {
  const bridge = rig.stack.sipAddress;
  if (!bridge) throw new Error('the rig runs no SIP bridge (startRig({ sip: true }))');
  const from = nextCaller();
  // Set before the call's stand-in connection exists (it takes the threshold when made), reset once it does.
  if (opts.sttSpeechRms !== undefined) rig.deepgram.setSpeechRms(opts.sttSpeechRms);
  // SIPp's own timeout bounds the whole call: a block's calls last as long as its trials.
  const phone = await SipPhone.call({ bridge, to: number, from, timeoutSeconds: 4 * 3600 });
  let mic: SipMic | null = null;
  try {
    await phone.waitFor('the answer', () => phone.answered || phone.finalStatus, 120_000);
    if (!phone.answered) throw new Error(`call refused with ${phone.finalStatus}`);
    const ear = new Ear();
    phone.onAudio = (samples) => {
      ear.hear(samples, SIP_RATE, nowMs());
      opts.onAgentAudio?.(samples);
    };
    await phone.startMedia();
    mic = new SipMic(phone, opts.line);
    const conn = stt === 'deepgram' ? await rig.deepgram.nextAnyConnection(60_000).finally(() => rig.deepgram.setSpeechRms(SPEECH_RMS)) : null;
    // The first message, then quiet.
    await ear.until(() => ear.speech.length > 0, 60_000);
    await ear.quiet(700);
    return { callId: await callIdFrom(rig, agentId, from), conn, ear, mic, phone };
  } catch (err) {
    rig.deepgram.setSpeechRms(SPEECH_RMS);
    await mic?.stop();
    await phone.close();
    throw err;
  }
}

/** Hangs up (SIPp's BYE), and stops the call's record in case the hang-up did not reach it. */
export async function endSipCall(rig: Rig, call: SipCallHandle): Promise<void> {
  await call.mic.stop();
  call.phone.onAudio = null;
  await call.phone.hangUp();
  await api(rig, 'POST', `/v1/calls/${call.callId}/stop`);
}
