// Worker heartbeats on the internal API (see control-plane/src/modules/workers).
import { Type, type Static } from './common.ts';

export const WorkerParams = Type.Object({ worker_id: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false });

export const WorkerHeartbeat = Type.Object(
  {
    agent_name: Type.String({ minLength: 1, maxLength: 200 }),
    active_calls: Type.Integer({ minimum: 0 }),
    load: Type.Number({ minimum: 0 }),
    draining: Type.Boolean(),
  },
  { title: 'WorkerHeartbeat', additionalProperties: false },
);
export type WorkerHeartbeat = Static<typeof WorkerHeartbeat>;

export const WorkerHeartbeatAck = Type.Object({ ok: Type.Boolean() }, { title: 'WorkerHeartbeatAck' });
