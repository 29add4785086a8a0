// The room session host guard (room-session-host.ts): a host over the room's transport registers nothing on the
// session and never listens on the room's session topic; a host over any other transport works as agents-js
// made it. The attack through a real call is test/e2e/security-room-data.test.ts.
import { EventEmitter } from 'node:events';
import { beforeAll, describe, expect, it } from 'vitest';
import { initializeLogger, voice } from '@livekit/agents';
import { Room } from '@livekit/rtc-node';
import { installedAgentsVersion } from './agents-release.ts';
import {
  ROOM_SESSION_HOST_AGENTS_VERSION,
  RoomSessionHostVersionError,
  assertRoomSessionHostTarget,
  installRoomSessionHostGuard,
  roomSessionHostGuardInstalled,
} from './room-session-host.ts';

const SESSION_TOPIC = 'lk.agent.session';

class MemoryTransport extends voice.SessionTransport {
  override async sendMessage(): Promise<void> {}
  override async close(): Promise<void> {}
  async *[Symbol.asyncIterator](): AsyncIterator<never> {}
}

describe('room session host guard', () => {
  beforeAll(() => initializeLogger({ pretty: false, level: 'warn' }));

  it('is checked against the installed agents-js, and refuses any other', () => {
    expect(installedAgentsVersion()).toBe(ROOM_SESSION_HOST_AGENTS_VERSION);
    expect(() => assertRoomSessionHostTarget()).not.toThrow();
    expect(() => assertRoomSessionHostTarget('1.10.0')).toThrow(RoomSessionHostVersionError);
  });

  it("keeps a room's host off the session and off the room's session topic", async () => {
    installRoomSessionHostGuard();
    expect(roomSessionHostGuardInstalled()).toBe(true);
    const room = new Room();
    const host = new voice.SessionHost(new voice.RoomSessionTransport(room, { linkedParticipant: undefined } as never));
    const session = new EventEmitter();
    host.registerSession(session as never);
    await host.start();
    expect(session.eventNames()).toEqual([]);
    // rtc-node refuses a second handler for a topic: the host registered none.
    expect(() => room.registerByteStreamHandler(SESSION_TOPIC, () => {})).not.toThrow();
    await host.close();
  });

  it('leaves a host over another transport as it was', async () => {
    installRoomSessionHostGuard();
    const transport = new MemoryTransport();
    const host = new voice.SessionHost(transport);
    const session = new EventEmitter();
    host.registerSession(session as never);
    expect(session.eventNames()).toContain('agent_state_changed');
    await host.start();
    await host.close();
  });
});
