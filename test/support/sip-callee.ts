// The callee of outbound calls: SIPp (Debian's sip-tester) as a SIP user agent server that answers, refuses
// with 486 or rings forever, per instance. Each INVITE it receives is appended to a file (its Call-ID and the
// offered RTP address), so tests can count dials. When it answers, the call's media (the `m=audio` of its
// SDP) is a UDP socket of this process: it records the G.711 µ-law the bridge sends and plays speech back. It
// also decodes the RFC 4733 telephone events (keypad presses) the bridge sends on that socket, and can play a
// phone menu that answers them (`menu`).
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { freeTcpUdpPort } from '../../scripts/stack/ports.ts';
import type { Pcm } from './speech.ts';
import { RtpLeg, type RtpAddress } from './rtp-leg.ts';
import { SippAgent, replyTo, sippDir, spawnSipp } from './sipp-agent.ts';

export type CalleeMode = 'answer' | 'busy' | 'no-answer';

/** A phone menu's node: its prompt, and where each key leads. A node without `next` is the end (a person). */
export interface MenuNode {
  name: string;
  prompt: Pcm;
  next?: Record<string, MenuNode>;
}

/** One prompt the menu played: which node, from which sample of the received audio, and the key it got. */
export interface MenuPlay {
  node: string;
  /** `received.length` when the prompt started and ended (what the callee heard meanwhile). */
  heardFrom: number;
  heardTo: number;
  key: string | null;
}

const HEADERS = (toTag: string) => `[last_Via:]
[last_From:]
[last_To:];tag=${toTag}
[last_Call-ID:]`;

function scenario(mode: CalleeMode, dir: string, rtpPort: number, ringMs = 0): string {
  const tag = '[pid]SIPpTag01[call_number]';
  const invite = `
  <recv request="INVITE" crlf="true">
    <action>
      <ereg regexp="m=audio ([0-9]+)" search_in="body" check_it="true" assign_to="m,rport"/>
      <ereg regexp="c=IN IP4 ([0-9.]+)" search_in="body" check_it="true" assign_to="c,rhost"/>
      <ereg regexp="CSeq: *([0-9]+)" search_in="msg" check_it="true" assign_to="s,cseq"/>
      <exec command="echo '[call_id] [$rhost] [$rport]' >> ${dir}/invites"/>
      <exec command="echo '[$m] [$c] [$s] [$cseq]' > /dev/null"/>
    </action>
  </recv>`;
  const ringing = `
  <send>
    <![CDATA[
SIP/2.0 180 Ringing
${HEADERS(tag)}
[last_CSeq:]
Contact: <sip:callee@[local_ip]:[local_port]>
Content-Length: 0
    ]]>
  </send>`;
  let body: string;
  if (mode === 'busy') {
    body = `${invite}
  <send>
    <![CDATA[
SIP/2.0 486 Busy Here
${HEADERS(tag)}
[last_CSeq:]
Content-Length: 0
    ]]>
  </send>
  <recv request="ACK"/>`;
  } else if (mode === 'no-answer') {
    body = `${invite}${ringing}
  <recv request="CANCEL"/>
  <send>
    <![CDATA[
SIP/2.0 200 OK
${HEADERS(tag)}
[last_CSeq:]
Content-Length: 0
    ]]>
  </send>
  <send>
    <![CDATA[
SIP/2.0 487 Request Terminated
${HEADERS(tag)}
CSeq: [$cseq] INVITE
Content-Length: 0
    ]]>
  </send>
  <recv request="ACK"/>`;
  } else {
    // An answering callee may ring a while first (ringMs) before its 200 OK.
    body = `${invite}${ringing}${ringMs > 0 ? `
  <pause milliseconds="${ringMs}"/>` : ''}
  <send retrans="500">
    <![CDATA[
SIP/2.0 200 OK
${HEADERS(tag)}
[last_CSeq:]
Contact: <sip:callee@[local_ip]:[local_port]>
Content-Type: application/sdp
Content-Length: [len]

v=0
o=callee 1 1 IN IP4 127.0.0.1
s=-
c=IN IP4 127.0.0.1
t=0 0
m=audio ${rtpPort} RTP/AVP 0 101
a=rtpmap:0 PCMU/8000
a=rtpmap:101 telephone-event/8000
a=ptime:20
a=sendrecv
    ]]>
  </send>
  <recv request="ACK">
    <action><exec command="echo answered >> ${dir}/answered"/></action>
  </recv>
  <recv request="BYE">
    <action><exec command="echo bye >> ${dir}/ended"/></action>
  </recv>
${replyTo('200 OK')}`;
  }
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<!DOCTYPE scenario SYSTEM "sipp.dtd">
<scenario name="vap callee ${mode}">${body}
</scenario>
`;
}

export class SipCallee extends SippAgent {
  readonly mode: CalleeMode;
  readonly port: number;

  private constructor(mode: CalleeMode, port: number, dir: string, sipp: ChildProcess, media: RtpLeg) {
    super('SIP callee', sipp, media, dir);
    this.mode = mode;
    this.port = port;
  }

  /** Keys received as RFC 4733 telephone events, in order (one per event, however many packets carry it). */
  get keys(): string[] {
    return this.media.keys;
  }

  /** The next key pressed, or null after `timeoutMs`. */
  nextKey(timeoutMs: number): Promise<string | null> {
    return this.media.nextKey(timeoutMs);
  }

  /**
   * Plays a phone menu as a phone system does: the prompt, then the key pressed after it leads to that key's node;
   * a key the node does not offer, or none within `replayAfterMs`, plays the prompt again. A key pressed during
   * the prompt counts once it ends. Ends at a node without `next` (its prompt played), or after `maxPlays`
   * prompts. `beforePrompt` runs before each prompt (e.g. to label it for a speech-to-text stand-in).
   */
  async menu(root: MenuNode, opts: { replayAfterMs?: number; maxPlays?: number; beforePrompt?: (node: MenuNode) => void | Promise<void> } = {}): Promise<MenuPlay[]> {
    const plays: MenuPlay[] = [];
    let node = root;
    while (plays.length < (opts.maxPlays ?? 10)) {
      await opts.beforePrompt?.(node);
      const keysBefore = this.keys.length;
      const heardFrom = this.received.length;
      await this.speak(node.prompt);
      const play: MenuPlay = { node: node.name, heardFrom, heardTo: this.received.length, key: null };
      plays.push(play);
      if (!node.next) break;
      play.key = this.keys.length > keysBefore ? this.keys[keysBefore]! : await this.nextKey(opts.replayAfterMs ?? 8000);
      const next = play.key === null ? undefined : node.next[play.key];
      if (next) node = next;
    }
    return plays;
  }

  /** Starts SIPp listening on a free port of 127.0.0.1. `ringMs`: an answering callee rings this long first. */
  static async start(mode: CalleeMode, opts: { ringMs?: number } = {}): Promise<SipCallee> {
    const dir = sippDir('vap-callee-');
    let callee: SipCallee | null = null;
    const media = await RtpLeg.open(() => callee?.remote() ?? null);
    const xml = scenario(mode, dir, media.port, opts.ringMs ?? 0);
    const port = await freeTcpUdpPort();
    const sipp = spawnSipp(dir, 'uas.xml', xml, ['-sf', path.join(dir, 'uas.xml'), '-i', '127.0.0.1', '-p', String(port), '-nostdin', '-trace_msg', '-message_file', path.join(dir, 'messages.log')]);
    callee = new SipCallee(mode, port, dir, sipp, media);
    // SIPp is listening once its message log exists.
    await callee.waitFor('SIPp to start', () => existsSync(path.join(dir, 'messages.log')) || sipp.exitCode !== null, 10_000);
    if (sipp.exitCode !== null) throw new Error(`sipp exited with ${sipp.exitCode}`);
    return callee;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** INVITEs received so far (retransmissions of one INVITE count once). */
  get invites(): { callId: string; host: string; port: number }[] {
    const seen = new Map<string, { callId: string; host: string; port: number }>();
    for (const line of (this.file('invites') ?? '').split('\n').filter(Boolean)) {
      const [callId, host, port] = line.split(' ');
      if (!seen.has(callId!)) seen.set(callId!, { callId: callId!, host: host!, port: Number(port) });
    }
    return [...seen.values()];
  }
  get answered(): boolean {
    return (this.file('answered') ?? '') !== '';
  }
  /** A BYE from the platform was received. */
  get hungUp(): boolean {
    return (this.file('ended') ?? '') !== '';
  }
  /** The media address of the last INVITE's offer: where the call's audio goes. */
  private remote(): RtpAddress | null {
    const last = this.invites.at(-1);
    return last ? { host: last.host, port: last.port } : null;
  }

  /** Once answered: keeps the media path alive with silence (the bridge hangs up on a silent leg). */
  startMedia(): void {
    this.media.startSilence();
  }

  async close(): Promise<void> {
    this.media.close();
    if (this.sipp.exitCode === null) {
      this.sipp.kill('SIGKILL');
      await this.exited;
    }
    this.release();
  }
}
