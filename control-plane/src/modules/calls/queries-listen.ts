// SQL of the listen stream (migration 175; docs/decisions/supervise-control-channel.md): its tickets, 256 random
// bits kept as their SHA-256 only, each opening one WebSocket, for one call, until LISTEN_TOKEN_TTL_SECONDS after it
// was given; and the call's status, which the stream watches.
import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../../db/types.ts';
import type { Auth } from '../../auth/service.ts';

/** base64url of 32 bytes: anything else is not a ticket, and is refused without a query. */
const TICKET = /^[A-Za-z0-9_-]{43}$/;
const hashOf = (ticket: string) => createHash('sha256').update(ticket).digest();

export interface ListenTicket {
  call_id: string;
  org_id: string;
  actor_type: string;
  actor_id: string;
}

/** A new ticket for the call; the caller of this has checked the call is the org's and in progress. */
export async function issueListenTicket(db: Db, auth: Auth, callId: string, expiresAt: Date): Promise<string> {
  const ticket = randomBytes(32).toString('base64url');
  // Expired tickets go as new ones come (a call's deletion takes its own too).
  await db`delete from listen_stream_tickets where expires_at < now() - interval '1 hour'`;
  await db`
    insert into listen_stream_tickets (ticket_hash, call_id, org_id, actor_type, actor_id, expires_at)
    values (${hashOf(ticket)}, ${callId}, ${auth.orgId}, ${auth.actorType}, ${auth.actorId}, ${expiresAt})`;
  return ticket;
}

/** The ticket, if it is one that can still be used (not used, not expired); it is not used by looking. */
export async function findListenTicket(db: Db, ticket: string): Promise<ListenTicket | null> {
  if (!TICKET.test(ticket)) return null;
  const [row] = await db<ListenTicket[]>`
    select call_id, org_id, actor_type, actor_id from listen_stream_tickets
    where ticket_hash = ${hashOf(ticket)} and used_at is null and expires_at > now()`;
  return row ?? null;
}

/** Uses the ticket for its call: true once, while it is valid (two connections racing with it: one wins). */
export async function redeemListenTicket(db: Db, ticket: string, callId: string): Promise<boolean> {
  const rows = await db`
    update listen_stream_tickets set used_at = now()
    where ticket_hash = ${hashOf(ticket)} and call_id = ${callId} and used_at is null and expires_at > now()
    returning 1`;
  return rows.length === 1;
}

/** Whether the call is still in progress (the stream ends when it is not). */
export async function callInProgress(db: Db, callId: string): Promise<boolean> {
  const [row] = await db<{ status: string }[]>`select status from calls where id = ${callId}`;
  return row?.status === 'in_progress';
}
