// What the SIPp-driven peers share (sip-phone.ts's caller, sip-callee.ts's callee): SIPp run on a scenario in a
// temporary folder, whose actions write what happened to files there, and the call's media on a UDP socket of
// this process (rtp-leg.ts). Also the scenario pieces both write out.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Pcm } from './speech.ts';
import type { RtpLeg } from './rtp-leg.ts';

/** A folder of its own for one SIPp run (its scenario, message trace and the files its actions write). */
export const sippDir = (prefix: string) => mkdtempSync(path.join(tmpdir(), prefix));

/** Writes `xml` as `file` in `dir` and starts SIPp on it there, with its message trace in messages.log. */
export function spawnSipp(dir: string, file: string, xml: string, args: string[]): ChildProcess {
  writeFileSync(path.join(dir, file), xml);
  return spawn('sipp', args, { stdio: ['ignore', 'ignore', 'pipe'], cwd: dir });
}

/** A response to the request just received, with its dialog headers as they came and `extra` headers. */
export const replyTo = (status: string, extra = '') => `  <send>
    <![CDATA[
SIP/2.0 ${status}
[last_Via:]
[last_From:]
[last_To:]
[last_Call-ID:]
[last_CSeq:]
${extra}Content-Length: 0
    ]]>
  </send>`;

/** The ACK of a final refusal of the INVITE to `requestUri` (in the INVITE's transaction, so its Via). */
export const ackRefusal = (requestUri: string) => `  <send>
    <![CDATA[
ACK ${requestUri} SIP/2.0
[last_Via:]
[last_From:]
[last_To:]
Call-ID: [call_id]
CSeq: 1 ACK
Max-Forwards: 70
Content-Length: 0
    ]]>
  </send>`;

export abstract class SippAgent {
  readonly dir: string;
  protected readonly sipp: ChildProcess;
  protected readonly media: RtpLeg;
  protected readonly exited: Promise<number | null>;
  /** Who this is, in a timed-out wait's error ("SIP caller"). */
  private readonly role: string;

  protected constructor(role: string, sipp: ChildProcess, media: RtpLeg, dir: string) {
    this.role = role;
    this.sipp = sipp;
    this.media = media;
    this.dir = dir;
    this.exited = new Promise((r) => sipp.once('exit', (code) => r(code)));
  }

  /** The audio heard so far (8 kHz samples). */
  get received(): number[] {
    return this.media.received;
  }

  /** A file of the run's folder, trimmed; null while there is none. */
  protected file(name: string): string | null {
    const p = path.join(this.dir, name);
    return existsSync(p) ? readFileSync(p, 'utf8').trim() : null;
  }

  /** SIPp's message trace. */
  get messages(): string {
    return this.file('messages.log') ?? '';
  }

  async waitFor<T>(what: string, fn: () => T | null | undefined | false, timeoutMs = 60_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = fn();
      if (v) return v;
      if (Date.now() > deadline) throw new Error(`${this.role}: timed out waiting for ${what}\n${this.messages.slice(-3000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Plays speech in real time (resampled to 8 kHz, µ-law). */
  speak(pcm: Pcm): Promise<void> {
    return this.media.speak(pcm);
  }

  /** The audio heard so far, 8 kHz. */
  audio(fromSample = 0): Pcm {
    return this.media.audio(fromSample);
  }

  /** Closes the media socket and removes the run's folder (kept with VAP_STACK_KEEP_LOGS=1). */
  protected release(): void {
    this.media.close();
    if (process.env.VAP_STACK_KEEP_LOGS !== '1') rmSync(this.dir, { recursive: true, force: true });
  }
}
