// bench:realtime's floor, on the caller's side: the bare agents-js worker (floor-worker.ts) started against the
// stack's LiveKit, and one call to it: a room made and the floor agent dispatched to it through LiveKit's own API (no
// control plane, no vap worker), the same rtc-node caller speaking the same clips (bench/support/room-call.ts).
import { randomUUID } from 'node:crypto';
import { AgentDispatchClient, RoomServiceClient } from 'livekit-server-sdk';
import { RtcClient, nowMs, roomToken } from '../../test/support/rtc-client.ts';
import type { RunningStack } from '../../scripts/stack/supervisor.ts';
import type { PortPicker } from '../../scripts/stack/ports.ts';
import { startWorker, type Worker } from '../first-audio/workers.ts';
import { converse, type Clip, type RoomTurn } from '../support/room-call.ts';

export const FLOOR_AGENT_NAME = 'bench-realtime-floor';

export interface FloorSettings {
  realtimeUrl: string;
  model: string;
  voice: string;
  silenceMs: number;
  greeting: string;
}

export function startFloorWorker(stack: RunningStack, pick: PortPicker, s: FloorSettings): Promise<Worker> {
  return startWorker(
    stack,
    'floor',
    { FLOOR_AGENT_NAME, FLOOR_REALTIME_URL: s.realtimeUrl, FLOOR_REALTIME_MODEL: s.model, FLOOR_VOICE: s.voice, FLOOR_SILENCE_MS: String(s.silenceMs), FLOOR_GREETING: s.greeting },
    pick,
    1,
    'bench/realtime/floor-worker.ts',
  );
}

/** One call to the floor agent: its turns, timed as a web call's are. */
export async function floorCall(stack: RunningStack, clips: Clip[], turns: number, offset: number): Promise<{ room: string; turns: RoomTurn[] }> {
  const http = stack.livekitUrl.replace(/^ws/, 'http');
  const rooms = new RoomServiceClient(http, stack.apiKey, stack.apiSecret);
  const dispatch = new AgentDispatchClient(http, stack.apiKey, stack.apiSecret);
  const room = `floor-${randomUUID()}`;
  const t0 = nowMs();
  await rooms.createRoom({ name: room, emptyTimeout: 60 });
  await dispatch.createDispatch(room, FLOOR_AGENT_NAME);
  const client = await RtcClient.join(stack.livekitUrl, await roomToken(stack, room, `caller-${room}`));
  try {
    return { room, turns: (await converse(client, clips, turns, offset, t0)).turns };
  } finally {
    await client.leave();
    // The room's end ends the job, as a call's stop does.
    await rooms.deleteRoom(room).catch(() => {});
  }
}
