// The listen stream for servers (docs/guides/calls.md, "Supervising a live call"; docs/decisions/
// supervise-control-channel.md): `GET /v1/calls/{id}/listen/stream?ticket=...` upgraded to a WebSocket on the API's
// own listener. Everything is checked before the upgrade, and a refusal is an HTTP answer with the API's error body
// (no room is joined): a missing, unknown, used or expired ticket is a 401 (and counts as a failed authentication of
// the client's IP), a ticket of another call a 404, a call no longer in progress a 409, and a stream over the
// organisation's or the process's cap a 429. A good ticket is used up, the stream is recorded in the call's
// `supervision[]` and the audit log, and listen-session.ts runs it.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { WebSocketServer } from 'ws';
import type { Services } from '../../services.ts';
import type { Auth } from '../../auth/service.ts';
import { HttpError, notFound, tooManyRequests, unauthorized } from '../../http/errors.ts';
import { newRequestId } from '../../../../shared/ids.ts';
import { findListenTicket, redeemListenTicket } from './queries-listen.ts';
import { getCall } from './queries.ts';
import { record } from './supervision.ts';
import { startListenSession, type ListenSession } from './listen-session.ts';

const PATH = /^\/v1\/calls\/([0-9a-fA-F-]{36})\/listen\/stream$/;
/** A client has nothing to send; a message longer than this is closed by ws with 1009 before it is read. */
export const MAX_CLIENT_PAYLOAD = 8;

export interface ListenStreams {
  /** Streams open on this process, by organisation. */
  open(orgId?: string): number;
  /** Ends every stream (reason `shutdown`) and leaves their rooms. */
  close(): Promise<void>;
}

class ClientGone extends Error {}

/** The client's address as Koa's ctx.ip has it: X-Forwarded-For only as far as TRUST_PROXY says. */
function clientIp(req: IncomingMessage, hops: number): string {
  const peer = req.socket.remoteAddress ?? '';
  if (hops <= 0) return peer;
  const xff = String(req.headers['x-forwarded-for'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return xff.slice(-hops)[0] ?? peer;
}

function refuse(socket: Duplex, err: HttpError, requestId: string): void {
  const body = JSON.stringify({ detail: err.message, type: err.type, request_id: requestId, ...err.extra });
  const reason =
    {
      400: 'Bad Request',
      401: 'Unauthorized',
      404: 'Not Found',
      409: 'Conflict',
      429: 'Too Many Requests',
      500: 'Internal Server Error',
      503: 'Service Unavailable',
    }[err.status] ?? 'Error';
  const headers = Object.entries({
    ...err.headers,
    'Content-Type': 'application/json',
    'Content-Length': String(Buffer.byteLength(body)),
    'X-Request-Id': requestId,
    Connection: 'close',
  })
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(`HTTP/1.1 ${err.status} ${reason}\r\n${headers}\r\n${body}`);
}

/** Serves the listen streams on the API's listener (its `upgrade` requests). */
export function attachListenStreams(server: Server, services: Services): ListenStreams {
  const { config, metrics, log } = services;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_CLIENT_PAYLOAD, perMessageDeflate: false });
  /** Open streams (and ones being accepted: a slot is taken before the first await that could let another in). */
  const open = new Map<symbol, { orgId: string; session: ListenSession | null }>();
  const countOrg = (orgId: string) => [...open.values()].filter((s) => s.orgId === orgId).length;
  let closing = false;

  async function accept(req: IncomingMessage, socket: Duplex, head: Buffer, requestId: string): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://listener');
    const callId = PATH.exec(url.pathname)?.[1]?.toLowerCase();
    if (!callId) throw new HttpError(404, 'not_found', 'Route not found');
    // What ws's handleUpgrade would refuse (it answers 400 and never calls back): refused here, before the ticket is used.
    const key = String(req.headers['sec-websocket-key'] ?? '');
    if (
      req.method !== 'GET' ||
      String(req.headers.upgrade ?? '').toLowerCase() !== 'websocket' ||
      !/^[+/0-9A-Za-z]{22}==$/.test(key) ||
      req.headers['sec-websocket-version'] !== '13'
    ) {
      throw new HttpError(400, 'bad_request', 'Not a WebSocket upgrade (version 13)');
    }
    const ipKey = `ip:${clientIp(req, config.TRUST_PROXY)}`;
    services.limits.authFailures.check(ipKey);
    const ticketText = url.searchParams.get('ticket') ?? '';
    const ticket = ticketText ? await findListenTicket(services.sql, ticketText) : null;
    if (!ticket) {
      services.limits.authFailures.charge(ipKey);
      throw unauthorized(
        ticketText ? 'The listen ticket is not valid (unknown, used or expired)' : 'A listen ticket is required (`ticket`, from POST /v1/calls/{id}/listen)',
      );
    }
    // Another call's ticket opens nothing here, and is not used up by trying.
    if (ticket.call_id !== callId) throw notFound('Call');
    if (open.size >= config.LISTEN_STREAMS_PER_PROCESS) {
      throw tooManyRequests('This server has as many listen streams as it serves; retry later', 5, { reason: 'listen_streams_per_process' });
    }
    if (countOrg(ticket.org_id) >= config.LISTEN_STREAMS_PER_ORG) {
      throw tooManyRequests(`Your organisation has ${config.LISTEN_STREAMS_PER_ORG} listen streams open already; close one first`, 5, {
        reason: 'listen_streams_per_org',
        limit: 'listen_streams_per_org',
        limit_value: config.LISTEN_STREAMS_PER_ORG,
      });
    }
    if (closing) throw new HttpError(503, 'service_unavailable', 'The server is stopping; retry later');
    const slot = Symbol(callId);
    open.set(slot, { orgId: ticket.org_id, session: null });
    try {
      if (!(await redeemListenTicket(services.sql, ticketText, callId))) throw unauthorized('The listen ticket is not valid (unknown, used or expired)');
      const call = await getCall(services.sql, ticket.org_id, callId);
      if (!call) throw notFound('Call');
      if (call.status !== 'in_progress' || !call.room_name)
        throw new HttpError(409, 'conflict', `The call is not in progress (status ${call.status})`, { extra: { status: call.status } });
      const identity = `supervisor-stream-${randomUUID()}`;
      const auth = { orgId: ticket.org_id, actorType: ticket.actor_type, actorId: ticket.actor_id } as Auth;
      await record(services, auth, callId, 'listen', { stream: true, identity }, { requestId, ip: ipKey.slice(3) || null });
      const room = call.room_name;
      // ws would drop a socket closed meanwhile without calling back.
      if (socket.destroyed || !socket.writable) throw new ClientGone();
      await new Promise<void>((resolve) => {
        wss.handleUpgrade(req, socket, head, (ws) => {
          const session = startListenSession({ services, ws, callId, room, identity });
          open.set(slot, { orgId: ticket.org_id, session });
          metrics.listenStreams.set(open.size);
          void session.done.then(() => {
            open.delete(slot);
            metrics.listenStreams.set(open.size);
          });
          resolve();
        });
      });
    } catch (err) {
      open.delete(slot);
      throw err;
    }
  }

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const requestId = newRequestId();
    socket.on('error', () => {});
    accept(req, socket, head, requestId).catch((err: unknown) => {
      if (err instanceof ClientGone) return;
      if (err instanceof HttpError) {
        if (err.status === 429) metrics.refusals.inc({ reason: String(err.extra.reason ?? 'rate_limit') });
        refuse(socket, err, requestId);
        return;
      }
      log.error({ err, request_id: requestId }, 'listen stream upgrade failed');
      refuse(socket, new HttpError(500, 'internal_error', 'Internal server error'), requestId);
    });
  });

  return {
    open: (orgId) => (orgId ? countOrg(orgId) : open.size),
    async close() {
      closing = true;
      await Promise.all([...open.values()].flatMap((s) => (s.session ? [s.session.end('shutdown')] : [])));
      wss.close();
    },
  };
}
