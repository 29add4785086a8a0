// A caller on a real SIP user agent: SIPp (Debian's sip-tester) sends the INVITE, ACKs, answers a REFER and
// hangs up, while the call's media (the `m=audio` port of its SDP) is a UDP socket of this process, which
// records the G.711 µ-law audio the bridge sends, and sends silence, speech or RFC 4733 keypad events back.
// The test hangs up by sending SIPp an in-dialog INFO, which the scenario answers with a BYE.
import type { ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { freeTcpUdpPort } from '../../scripts/stack/ports.ts';
import { RtpLeg } from './rtp-leg.ts';
import { SippAgent, ackRefusal, replyTo, sippDir, spawnSipp } from './sipp-agent.ts';

// 401 and 407: the bridge's answers to an INVITE that only the catch-all trunk (credentials nobody has) matches.
const FINALS = [401, 403, 404, 407, 480, 486, 487, 488, 500, 503, 603];

// A REFER's actions sit on its <recv>: SIPp 3.6.1 crashes (SIGSEGV) on an <ereg> in a <nop> after it, and the
// REFER then goes unanswered (the bridge's transfer fails after 32 s).
function scenario(dir: string, from: string, rtpPort: number): string {
  const recvFinal = FINALS.map(
    (code) => `
  <recv response="${code}" optional="true" next="refused">
    <action><exec command="echo ${code} > ${dir}/final"/></action>
  </recv>`,
  ).join('');
  const sdp = `v=0
o=vap 1 1 IN IP4 127.0.0.1
s=-
c=IN IP4 127.0.0.1
t=0 0
m=audio ${rtpPort} RTP/AVP 0 101
a=rtpmap:0 PCMU/8000
a=rtpmap:101 telephone-event/8000
a=fmtp:101 0-16
a=ptime:20
a=sendrecv`;
  return `<?xml version="1.0" encoding="ISO-8859-1" ?>
<!DOCTYPE scenario SYSTEM "sipp.dtd">
<scenario name="vap inbound caller">
  <send retrans="500">
    <![CDATA[
INVITE sip:[service]@[remote_ip]:[remote_port] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:${from}@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
To: <sip:[service]@[remote_ip]:[remote_port]>
Call-ID: [call_id]
CSeq: 1 INVITE
Contact: <sip:${from}@[local_ip]:[local_port]>
Max-Forwards: 70
Content-Type: application/sdp
Content-Length: [len]

${sdp}
    ]]>
  </send>
  <recv response="100" optional="true"/>
  <recv response="180" optional="true"/>
  <recv response="183" optional="true"/>${recvFinal}
  <recv response="200" rtd="true">
    <action>
      <ereg regexp="m=audio ([0-9]+)" search_in="body" check_it="true" assign_to="m,rport"/>
      <ereg regexp="sip:[^>;[:space:]]+" search_in="hdr" header="Contact:" check_it="true" assign_to="contact"/>
      <exec command="echo [$rport] > ${dir}/answered; echo '[$m]' > ${dir}/sdp-line"/>
    </action>
  </recv>
  <send>
    <![CDATA[
ACK [$contact] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:${from}@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
Call-ID: [call_id]
CSeq: 1 ACK
Contact: <sip:${from}@[local_ip]:[local_port]>
Max-Forwards: 70
Content-Length: 0
    ]]>
  </send>
  <label id="wait"/>
  <recv request="BYE" optional="true" next="remote_bye"/>
  <recv request="REFER" optional="true" next="refer">
    <action>
      <ereg regexp="Refer-To: *&lt;?([^&gt;[:space:]]+)" search_in="msg" check_it="true" assign_to="r,referto"/>
      <exec command="echo '[$referto]' > ${dir}/refer; echo '[$r]' > ${dir}/refer-line"/>
    </action>
  </recv>
  <recv request="INFO" next="local_hangup"/>

  <label id="refer"/>
${replyTo('202 Accepted', `Contact: <sip:${from}@[local_ip]:[local_port]>\n`)}
  <send>
    <![CDATA[
NOTIFY [$contact] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:${from}@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
Call-ID: [call_id]
CSeq: 3 NOTIFY
Contact: <sip:${from}@[local_ip]:[local_port]>
Event: refer
Subscription-State: terminated;reason=noresource
Content-Type: message/sipfrag;version=2.0
Max-Forwards: 70
Content-Length: [len]

SIP/2.0 200 OK
    ]]>
  </send>
  <recv response="200" optional="true"/>
  <recv request="BYE" optional="true" next="remote_bye"/>
  <recv request="INFO" next="local_hangup"/>

  <label id="remote_bye"/>
${replyTo('200 OK')}
  <nop next="end"><action><exec command="echo remote > ${dir}/ended"/></action></nop>

  <label id="local_hangup"/>
${replyTo('200 OK')}
  <send retrans="500">
    <![CDATA[
BYE [$contact] SIP/2.0
Via: SIP/2.0/[transport] [local_ip]:[local_port];branch=[branch]
From: <sip:${from}@[local_ip]:[local_port]>;tag=[pid]SIPpTag00[call_number]
To: <sip:[service]@[remote_ip]:[remote_port]>[peer_tag_param]
Call-ID: [call_id]
CSeq: 4 BYE
Max-Forwards: 70
Content-Length: 0
    ]]>
  </send>
  <recv response="200"/>
  <nop next="end"><action><exec command="echo local > ${dir}/ended"/></action></nop>

  <label id="refused"/>
${ackRefusal('sip:[service]@[remote_ip]:[remote_port]')}
  <label id="end"/>
</scenario>
`;
}

export interface CallOptions {
  /** host:port of the SIP bridge. */
  bridge: string;
  to: string;
  from?: string;
  /** Give up after this long (SIPp's own timeout). */
  timeoutSeconds?: number;
  /** The loopback address SIPp sends from (the carrier's is 127.0.0.1; any other plays a stranger). */
  localAddress?: string;
}

export class SipPhone extends SippAgent {
  readonly callId = `${randomUUID()}@vap-test`;
  readonly startedAt = performance.now();

  private readonly sipPort: number;

  private constructor(sipp: ChildProcess, media: RtpLeg, sipPort: number, dir: string) {
    super('SIP caller', sipp, media, dir);
    this.sipPort = sipPort;
  }

  /** With VAP_DEBUG_RTP: the packets received. */
  get packets(): string[] {
    return this.media.packets;
  }
  /** When the first non-silent audio arrived (performance.now()). */
  get firstAudioAt(): number | null {
    return this.media.firstAudioAt;
  }
  /** Gets each packet's decoded audio (8 kHz) as it arrives. */
  get onAudio(): ((samples: Int16Array) => void) | null {
    return this.media.onAudio;
  }
  set onAudio(fn: ((samples: Int16Array) => void) | null) {
    this.media.onAudio = fn;
  }

  // `override`: a class that extends another inherits Function.prototype.call on its static side, which this shadows.
  /** Dials `to` at the bridge. Resolves once SIPp has sent the INVITE (the call may still ring). */
  static override async call(o: CallOptions): Promise<SipPhone> {
    const dir = sippDir('vap-sipp-');
    const media = await RtpLeg.open();
    const from = o.from ?? '+15550100199';
    const sipPort = await freeTcpUdpPort(o.localAddress);
    const phone = new SipPhone(
      spawnSipp(dir, 'uac.xml', scenario(dir, from, media.port), [o.bridge, '-sf', path.join(dir, 'uac.xml'), '-s', o.to, '-i', o.localAddress ?? '127.0.0.1', '-p', String(sipPort), '-m', '1', '-cid_str', `${randomUUID()}-%u@vap-test`, '-nostdin', '-timeout', `${o.timeoutSeconds ?? 120}s`, '-timeout_error', '-trace_msg', '-message_file', path.join(dir, 'messages.log')]),
      media,
      sipPort,
      dir,
    );
    return phone;
  }

  /**
   * When SIPp sent the INVITE (wall-clock ms, as nowMs() gives it), from its message trace; null before it has.
   * SIPp starts some tens of ms after `startedAt`, so this is where a caller's wait begins.
   */
  get inviteSentAt(): number | null {
    const head = this.file('messages.log')?.split('\n', 1)[0] ?? '';
    const m = /(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)\.(\d+)/.exec(head);
    // SIPp prints local time, as Date reads a string without a zone.
    return m ? new Date(`${m[1]}T${m[2]}`).getTime() + Number(`0.${m[3]}`) * 1000 : null;
  }

  /** The final status of a refused INVITE (486...), or null while none came. */
  get finalStatus(): number | null {
    const f = this.file('final');
    return f ? Number(f) : null;
  }
  get answered(): boolean {
    return this.file('answered') !== null;
  }
  /** The Refer-To of a REFER the peer received and accepted (202), as the scenario wrote it. */
  get referTo(): string | null {
    return this.file('refer');
  }
  /** `remote` (the agent hung up) or `local`. */
  get ended(): string | null {
    return this.file('ended');
  }
  /** The SIP Call-ID SIPp used. */
  get sipCallId(): string | null {
    if (this.#sipCallId) return this.#sipCallId;
    const m = /^Call-ID:\s*(.+)$/im.exec(this.messages);
    this.#sipCallId = m ? m[1]!.trim() : null;
    return this.#sipCallId;
  }
  #sipCallId: string | null = null;

  /** Once answered: keeps the media path alive with silence (the bridge times out a silent caller). */
  async startMedia(): Promise<void> {
    const port = Number(await this.waitFor('the 200 OK', () => this.file('answered')));
    this.media.peer = { port, host: '127.0.0.1' };
    this.media.startSilence();
  }

  /**
   * Once answered: sends the caller's audio from `next` (8 kHz, 160 samples a call) as 20 ms frames in real time,
   * in place of the silence, until the returned function is called. Not with speak() or pressKey() at the same time.
   */
  stream(next: (n: number) => Int16Array): () => Promise<void> {
    return this.media.stream(next);
  }

  /** RFC 4733 telephone-event: one digit, 100 ms, three end packets. */
  pressKey(digit: string): Promise<void> {
    return this.media.pressKey(digit);
  }

  /** Hangs up (an in-dialog INFO tells the scenario to send BYE) and waits for SIPp to finish. */
  async hangUp(): Promise<void> {
    if (!this.ended && this.answered && !this.closed) {
      const sock = dgram.createSocket('udp4');
      const callId = this.sipCallId ?? this.callId;
      const msg = [
        `INFO sip:caller@127.0.0.1:${this.sipPort} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${this.sipPort + 1};branch=z9hG4bK${randomUUID().slice(0, 8)}`,
        'From: <sip:test@127.0.0.1>;tag=hangup',
        'To: <sip:caller@127.0.0.1>',
        `Call-ID: ${callId}`,
        'CSeq: 1 INFO',
        'Max-Forwards: 70',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n');
      await new Promise<void>((r) => sock.send(msg, this.sipPort, '127.0.0.1', () => r()));
      sock.close();
      await this.waitFor('the hang-up', () => this.ended, 30_000);
    }
    await this.close();
  }

  private closed = false;

  /** Hangs up a call still up (so it does not linger on the worker), then stops SIPp. */
  async close(): Promise<void> {
    if (this.closed) return;
    if (this.answered && !this.ended && this.sipp.exitCode === null) await this.hangUp().catch(() => {});
    this.closed = true;
    if (this.sipp.exitCode === null) {
      const done = this.exited;
      setTimeout(() => this.sipp.kill('SIGKILL'), 5000).unref();
      if (this.ended || this.finalStatus) await done;
      else {
        this.sipp.kill('SIGKILL');
        await done;
      }
    }
    this.release();
  }
}
