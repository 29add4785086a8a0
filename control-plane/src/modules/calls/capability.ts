// Per-call capabilities for media workers (docs/internal-api.md, "Per-call capability"). The internal API serves a
// call's reports and searches only with that call's capability, `vcap1.<expires>.<HMAC-SHA256(call_id "." expires)>`,
// so a worker (or its leaked token) reads only the calls it was given. The key is derived from MASTER_KEY with HKDF:
// only the control plane signs and verifies, so workers need no new secret, and the previous master keys still
// verify during a rotation.
//
// A dispatch carries no capability: its metadata is readable by anything holding the LiveKit API key (workers hold
// it; ListDispatch returns it) and agents-js logs it whole on an unknown assignment. It carries a ticket instead,
// `vtkt1.…` (the same form, another key), which opens the call's config and nothing else; the config is handed out
// once per call (calls.config_served_at), with the capability in it. So a ticket read from LiveKit or a log after
// the worker redeemed it opens nothing (docs/security.md, issue 50).
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Services } from '../../services.ts';

/** The request header that carries a call's capability (or, for its config, its ticket) on the internal API. */
export const CAPABILITY_HEADER = 'x-call-capability';
const CAPABILITY = { prefix: 'vcap1', purpose: 'worker-capability' };
const TICKET = { prefix: 'vtkt1', purpose: 'worker-ticket' };
type Kind = typeof CAPABILITY;

const mac = (key: Buffer, callId: string, expires: number) => createHmac('sha256', key).update(`${callId}.${expires}`).digest('base64url');

function mint(kind: Kind, services: Pick<Services, 'secrets' | 'config'>, callId: string, now: number): string {
  const expires = Math.floor(now / 1000) + services.config.WORKER_CAPABILITY_TTL_SECONDS;
  return `${kind.prefix}.${expires}.${mac(services.secrets.derive(kind.purpose), callId, expires)}`;
}

function verify(kind: Kind, services: Pick<Services, 'secrets'>, callId: string, token: string | undefined, now: number): boolean {
  const parts = (token ?? '').split('.');
  if (parts.length !== 3 || parts[0] !== kind.prefix || !/^\d{1,12}$/.test(parts[1]!)) return false;
  const expires = Number(parts[1]);
  if (expires * 1000 < now) return false;
  const given = Buffer.from(parts[2]!);
  return services.secrets.deriveAll(kind.purpose).some((key) => {
    const expected = Buffer.from(mac(key, callId, expires));
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

/** A capability for one call, valid WORKER_CAPABILITY_TTL_SECONDS from now. */
export function mintCapability(services: Pick<Services, 'secrets' | 'config'>, callId: string, now = Date.now()): string {
  return mint(CAPABILITY, services, callId, now);
}

/** A dispatch's ticket for one call: it opens the call's config (once), nothing else. */
export function mintTicket(services: Pick<Services, 'secrets' | 'config'>, callId: string, now = Date.now()): string {
  return mint(TICKET, services, callId, now);
}

/**
 * The call's agent dispatch into `room`: its job metadata names the call and carries the call's ticket (the
 * dispatch only: room metadata is visible to the room's participants), with `extra` (the trace) beside them.
 */
export async function dispatchCallAgent(services: Pick<Services, 'secrets' | 'config' | 'livekit'>, room: string, callId: string, extra: Record<string, unknown> = {}): Promise<void> {
  const { livekit } = services;
  await livekit.dispatch.createDispatch(room, livekit.agentName, { metadata: JSON.stringify({ call_id: callId, ...extra, ticket: mintTicket(services, callId) }) });
}

/** True only for an unexpired capability minted for this very call (compared in constant time). */
export function verifyCapability(services: Pick<Services, 'secrets'>, callId: string, token: string | undefined, now = Date.now()): boolean {
  return verify(CAPABILITY, services, callId, token, now);
}

/** True for an unexpired ticket of this very call. */
export function verifyTicket(services: Pick<Services, 'secrets'>, callId: string, token: string | undefined, now = Date.now()): boolean {
  return verify(TICKET, services, callId, token, now);
}

/**
 * A standby room's secret (HMAC of its name): its dispatch carries it, and only a wait that presents it is held
 * for the room's call, so knowing a room's name (it is in logs and in LiveKit's room list) is not enough.
 */
export function standbySecret(services: Pick<Services, 'secrets'>, room: string): string {
  return createHmac('sha256', services.secrets.derive('standby-room')).update(room).digest('base64url');
}

/** True when `given` is the room's secret (constant time). */
export function verifyStandbySecret(services: Pick<Services, 'secrets'>, room: string, given: string | undefined): boolean {
  const a = Buffer.from(given ?? '');
  const b = Buffer.from(standbySecret(services, room));
  return a.length === b.length && timingSafeEqual(a, b);
}
