// The worker's warm transfer (docs/internal-api.md): dial the second leg, then say it was joined or let go.
import { defineRoute } from '../../http/route.ts';
import { PathId, Strict } from '../../../../schemas/common.ts';
import { CallParams, CallTransfer } from '../../../../schemas/calls.ts';
import { TransferRequest, TransferResult, TransferUpdate } from '../../../../schemas/internal.ts';
import { startTransfer, updateTransfer } from './transfers.ts';
import { startBlindTransfer } from './blind-transfer.ts';

const TransferParams = Strict({ call_id: PathId('Call'), transfer_id: PathId('Transfer') });

export const internalTransferRoutes = [
  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/:call_id/transfers',
    root: true,
    internal: true,
    auth: 'call',
    operationId: 'internalCallTransfer',
    tag: 'calls',
    summary: "Dial a warm transfer's second leg into the call's room and wait for its answer, or refer the caller (blind)",
    params: CallParams,
    body: TransferRequest,
    // Holds the request while the leg rings (TRANSFER_RING_TIMEOUT_SECONDS): no transaction across it.
    transaction: false,
    responses: { 200: { description: 'Answered, or why not', schema: TransferResult } },
    handler: async ({ params, body, services }) =>
      body.mode === 'blind' ? startBlindTransfer(services, params.call_id, body.destination) : startTransfer(services, params.call_id, body.destination),
  }),
  defineRoute({
    method: 'post',
    path: '/internal/v1/calls/:call_id/transfers/:transfer_id',
    root: true,
    internal: true,
    auth: 'call',
    operationId: 'internalCallTransferUpdate',
    tag: 'calls',
    summary: 'The warm transfer was joined (the agent leaves), or its answered leg was let go',
    params: TransferParams,
    body: TransferUpdate,
    responses: { 200: { description: 'The transfer', schema: CallTransfer } },
    handler: async ({ params, body, services, db }) => updateTransfer(services, db, params.call_id, params.transfer_id, body.state),
  }),
];
