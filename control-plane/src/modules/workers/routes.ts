// Internal API: media workers report that they are registered with LiveKit (their id is LiveKit's worker id).
import { defineRoute } from '../../http/route.ts';
import { WorkerHeartbeat, WorkerHeartbeatAck, WorkerParams } from '../../../../schemas/workers.ts';
import { recordHeartbeat } from './queries.ts';

export const workerRoutes = [
  defineRoute({
    method: 'post',
    path: '/internal/v1/workers/:worker_id/heartbeat',
    root: true,
    internal: true,
    auth: 'worker',
    operationId: 'internalWorkerHeartbeat',
    tag: 'health',
    summary: 'A media worker is registered and taking calls',
    params: WorkerParams,
    body: WorkerHeartbeat,
    transaction: false,
    responses: { 200: { description: 'Recorded', schema: WorkerHeartbeatAck } },
    handler: async ({ params, body, db, services }) => {
      await recordHeartbeat(db, params.worker_id, body);
      // A draining worker takes no new calls: its standby jobs leave, so its drain does not wait on them.
      if (body.draining) await services.standby.releaseWorker(params.worker_id);
      return { ok: true };
    },
  }),
];
