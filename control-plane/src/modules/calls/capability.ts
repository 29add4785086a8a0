// Per-call capabilities for media workers (docs/internal-api.md, "Per-call capability"). A dispatch carries
// `vcap1.<expires>.<HMAC-SHA256(call_id "." expires)>` in its job metadata; the internal API serves a call's
// config, reports and searches only with that call's capability, so a worker (or its leaked token) reads
// only the calls it was given. The key is derived from MASTER_KEY with HKDF: only the control plane signs
// and verifies, so workers need no new secret, and the previous master keys still verify during a rotation.
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Services } from '../../services.ts';

/** The request header that carries a call's capability on the internal API. */
export const CAPABILITY_HEADER = 'x-call-capability';
const PREFIX = 'vcap1';
const PURPOSE = 'worker-capability';

const mac = (key: Buffer, callId: string, expires: number) => createHmac('sha256', key).update(`${callId}.${expires}`).digest('base64url');

/** A capability for one call, valid WORKER_CAPABILITY_TTL_SECONDS from now. */
export function mintCapability(services: Pick<Services, 'secrets' | 'config'>, callId: string, now = Date.now()): string {
  const expires = Math.floor(now / 1000) + services.config.WORKER_CAPABILITY_TTL_SECONDS;
  return `${PREFIX}.${expires}.${mac(services.secrets.derive(PURPOSE), callId, expires)}`;
}

/**
 * The call's agent dispatch into `room`: its job metadata names the call and carries the call's capability (the
 * dispatch only: room metadata is visible to the room's participants), with `extra` (the trace) beside them.
 */
export async function dispatchCallAgent(services: Pick<Services, 'secrets' | 'config' | 'livekit'>, room: string, callId: string, extra: Record<string, unknown> = {}): Promise<void> {
  const { livekit } = services;
  await livekit.dispatch.createDispatch(room, livekit.agentName, { metadata: JSON.stringify({ call_id: callId, ...extra, capability: mintCapability(services, callId) }) });
}

/** True only for an unexpired capability minted for this very call (compared in constant time). */
export function verifyCapability(services: Pick<Services, 'secrets'>, callId: string, token: string | undefined, now = Date.now()): boolean {
  const parts = (token ?? '').split('.');
  if (parts.length !== 3 || parts[0] !== PREFIX || !/^\d{1,12}$/.test(parts[1]!)) return false;
  const expires = Number(parts[1]);
  if (expires * 1000 < now) return false;
  const given = Buffer.from(parts[2]!);
  return services.secrets.deriveAll(PURPOSE).some((key) => {
    const expected = Buffer.from(mac(key, callId, expires));
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}
