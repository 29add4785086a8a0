// A caller must not be able to read or drive the agent over the room's data channel.
//
// agents-js 1.9 starts a "session host" beside every AgentSession that has a room (remote_session.ts, for
// LiveKit's own consoles). It streams every session event to the linked participant (the caller) on the
// `lk.agent.session` topic: each conversation item, the tools' arguments and outputs, the token usage, the
// end-of-turn predictions. And it answers their requests on the same topic: `getAgentInfo` returns the agent's
// instructions (the tenant's system prompt), tool names and context, `getChatHistory` the history with tool
// outputs, `runInput` makes the agent reply to typed text (interrupting even an uninterruptible disclosure),
// `updateIo` turns the agent's audio input or transcription off. The caller's token (a web page's publishable
// key makes one) may publish data, so any browser could do all of this.
//
// vap has no use for that protocol: the web SDK reads the transcription and metrics topics only. The patch
// keeps room session hosts inert: no event listeners on the session (their encoding was also ~40 ms of each
// call's start on the job's loop), no byte-stream handler in the room, nothing sent. A host over another
// transport (the console's TCP one) is left as it is. Typed text (`lk.chat`) is refused by the room input's
// own option (call-session.ts).
//
// SessionHost and RoomSessionTransport are exported, but which transport a host has is not: like prompt-pause.ts,
// the patch is installed in one place (the CallSession constructor) and only on the release it was checked
// against; any other version fails loudly.
import { voice } from '@livekit/agents';
import { PinnedReleaseError, installedAgentsVersion } from './agents-release.ts';

/** The @livekit/agents release whose SessionHost and RoomSessionTransport this patch was checked against. */
export const ROOM_SESSION_HOST_AGENTS_VERSION = '1.9.0';

export class RoomSessionHostVersionError extends PinnedReleaseError {
  constructor(installed: string) {
    const check =
      'AgentSession.start still makes a SessionHost over a RoomSessionTransport for every room session, the host still keeps it in `transport`, and registerSession, start and sendMessage are still the only ways in and out';
    super('room-session-host.ts', ROOM_SESSION_HOST_AGENTS_VERSION, installed, check, 'ROOM_SESSION_HOST_AGENTS_VERSION');
  }
}

export function assertRoomSessionHostTarget(version = installedAgentsVersion()): void {
  if (version !== ROOM_SESSION_HOST_AGENTS_VERSION) throw new RoomSessionHostVersionError(version);
}

interface HostInternals {
  transport: unknown;
}

let installed = false;

/** Installs the patch (once per process; CallSession calls it before its AgentSession exists). */
export function installRoomSessionHostGuard(): void {
  if (installed) return;
  assertRoomSessionHostTarget();
  installed = true;
  const host = voice.SessionHost.prototype as unknown as {
    registerSession: (this: HostInternals, session: unknown) => void;
    start: (this: HostInternals) => Promise<void>;
  };
  const register = host.registerSession;
  const start = host.start;
  const overRoom = (h: HostInternals) => h.transport instanceof voice.RoomSessionTransport;
  host.registerSession = function (session) {
    if (!overRoom(this)) register.call(this, session);
  };
  host.start = async function () {
    if (!overRoom(this)) await start.call(this);
  };
  // Whatever else reaches a room transport (an AMD prediction, a response) goes nowhere, and it never listens.
  const transport = voice.RoomSessionTransport.prototype as unknown as { start: () => Promise<void>; sendMessage: (msg: unknown) => Promise<void> };
  transport.start = async () => {};
  transport.sendMessage = async () => {};
}

export const roomSessionHostGuardInstalled = () => installed;
