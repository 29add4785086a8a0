// Wiring a number to LiveKit SIP, and undoing it. A purchase is one unit of work:
//
//   row 'purchasing' ─► carrier.purchase ─► 'wiring' ─► inbound trunk ─► dispatch rule ─► outbound trunk ─► 'wired'
//
// Every id is stored the moment it exists, and every LiveKit object carries the number's id in its name
// (`vap:pn:<id>:…`), so whatever a crash leaves behind can be found and removed. Undoing (a failed step, a
// stale purchase found by the repair job, or DELETE) is one idempotent routine: remove the rule and trunks,
// release at the carrier, soft-delete the row.
import { randomBytes } from 'node:crypto';
import { RoomAgentDispatch, RoomConfiguration, SIPDispatchRule, SIPDispatchRuleIndividual, type SipClient } from 'livekit-server-sdk';
import type { Services } from '../../services.ts';
import type { CarrierAdapter } from './carriers/types.ts';
import { carrierFor, ingressOf } from './carriers/index.ts';
import { getNumberById, setWiring, type PhoneNumberRow } from './queries.ts';
import { INBOUND_ROOM_PREFIX } from '../../../../schemas/internal.ts';
import { accountHeaderMapping, inboundAccountCheck } from './carriers/account.ts';

export { INBOUND_ROOM_PREFIX };
/** A number's rooms: `pn-<number id>_<caller>_<random>` (LiveKit joins the rule's prefix and the rest with `_`). */
export const inboundRoomPrefix = (numberId: string) => `${INBOUND_ROOM_PREFIX}${numberId}`;
/** The inbound trunk that takes every INVITE no number's trunk matches, and refuses it (ensureCatchAllTrunk). */
export const CATCH_ALL_TRUNK_NAME = 'vap:unrouted';
const objectName = (id: string, what: 'in' | 'rule' | 'out') => `vap:pn:${id}:${what}`;
const NAME_RE = /^vap:pn:([0-9a-f-]{36}):(in|rule|out)$/;

// livekit.SIPTransport values (the enum lives in @livekit/protocol, which the SDK does not re-export).
type Transport = NonNullable<Parameters<SipClient['createSipOutboundTrunk']>[3]>['transport'];
const TRANSPORT = { udp: 1, tcp: 2, tls: 3 } as unknown as Record<'udp' | 'tcp' | 'tls', Transport>;

/** A Twirp "not found" (the object is already gone): deleting it again is success. */
const isNotFound = (err: unknown) => {
  const e = err as { status?: number; code?: string };
  return e?.status === 404 || e?.code === 'not_found';
};
async function ignoreMissing(p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

/**
 * Steps 2-4 of a purchase, after the carrier sold the number: point it at our ingress, create the inbound
 * trunk, the individual dispatch rule (explicit dispatch of our agent worker, with the number's context) and the
 * outbound trunk. Ids are stored one by one. Throws on the first failure; the caller undoes.
 */
export async function wireNumber(services: Services, row: PhoneNumberRow, carrier: CarrierAdapter = carrierFor(services)): Promise<PhoneNumberRow> {
  const { sip, agentName } = services.livekit;
  const cfg = services.config;
  const context = JSON.stringify({ phone_number_id: row.id, phone_number: row.phone_number });
  await carrier.routeToIngress(row.carrier_number_id!, ingressOf(cfg));
  let cur = row;
  if (!cur.inbound_trunk_id) {
    const addresses = carrier.inboundSourceAddresses();
    const trunk = await sip.createSipInboundTrunk(objectName(row.id, 'in'), [row.phone_number], {
      metadata: context,
      ...(addresses.length ? { allowedAddresses: addresses } : {}),
      // The carrier's account header, checked by the control plane at the call's open (carriers/account.ts).
      headersToAttributes: accountHeaderMapping(inboundAccountCheck(cfg)),
      ringingTimeout: cfg.SIP_RINGING_TIMEOUT_SECONDS,
    });
    cur = await setWiring(services.sql, row.id, { inbound_trunk_id: trunk.sipTrunkId });
  }
  if (!cur.dispatch_rule_id) {
    const rule = await sip.createSipDispatchRule(
      { type: 'individual', roomPrefix: inboundRoomPrefix(row.id) },
      {
        name: objectName(row.id, 'rule'),
        metadata: context,
        trunkIds: [cur.inbound_trunk_id!],
        roomConfig: new RoomConfiguration({ agents: [new RoomAgentDispatch({ agentName, metadata: context })] }),
      },
    );
    cur = await setWiring(services.sql, row.id, { dispatch_rule_id: rule.sipDispatchRuleId });
  }
  if (!cur.outbound_trunk_id) {
    const term = await carrier.outboundTermination(row.phone_number);
    const trunk = await sip.createSipOutboundTrunk(objectName(row.id, 'out'), term.address, [row.phone_number], {
      metadata: context,
      transport: TRANSPORT[term.transport],
      ...(term.auth_username ? { authUsername: term.auth_username } : {}),
      ...(term.auth_password ? { authPassword: term.auth_password } : {}),
    });
    cur = await setWiring(services.sql, row.id, { outbound_trunk_id: trunk.sipTrunkId });
  }
  return setWiring(services.sql, row.id, { wiring_state: 'wired', wiring_error: null });
}

/** Deletes every LiveKit object of a number: the stored ids, and any named for it that a crash left unrecorded. */
export async function removeLiveKitObjects(services: Services, row: PhoneNumberRow): Promise<void> {
  const { sip } = services.livekit;
  const rules = new Set([row.dispatch_rule_id].filter(Boolean) as string[]);
  const trunks = new Set([row.inbound_trunk_id, row.outbound_trunk_id].filter(Boolean) as string[]);
  for (const r of await sip.listSipDispatchRule()) if (r.name.startsWith(`vap:pn:${row.id}:`)) rules.add(r.sipDispatchRuleId);
  for (const t of await sip.listSipInboundTrunk()) if (t.name.startsWith(`vap:pn:${row.id}:`)) trunks.add(t.sipTrunkId);
  for (const t of await sip.listSipOutboundTrunk()) if (t.name.startsWith(`vap:pn:${row.id}:`)) trunks.add(t.sipTrunkId);
  // Trunks first: a call arriving in between then meets the catch-all trunk's refusal, not a trunk without a
  // rule (which the bridge drops silently).
  for (const id of trunks) await ignoreMissing(sip.deleteSipTrunk(id));
  for (const id of rules) await ignoreMissing(sip.deleteSipDispatchRule(id));
}

/**
 * Undoes a number completely: LiveKit objects, then the carrier, then the row (soft-deleted, 'released').
 * Idempotent; safe to run again after any failure. The carrier is skipped when it never sold the number.
 */
export async function unwireNumber(services: Services, id: string, carrier: CarrierAdapter = carrierFor(services)): Promise<void> {
  let row = await getNumberById(services.sql, id);
  if (!row || row.wiring_state === 'released') return;
  if (row.wiring_state !== 'releasing') row = await setWiring(services.sql, id, { wiring_state: 'releasing' });
  await removeLiveKitObjects(services, row);
  let carrierId = row.carrier_number_id;
  // A purchase that crashed between the carrier's sale and our record of it: ask the carrier.
  if (!carrierId && carrier.findPurchased && row.provider === carrier.name) carrierId = await carrier.findPurchased(row.phone_number);
  if (carrierId && row.provider === carrier.name) await carrier.release(carrierId);
  await services.sql`
    update phone_numbers set wiring_state = 'released', status = 'inactive', deleted_at = coalesce(deleted_at, now()),
      inbound_trunk_id = null, outbound_trunk_id = null, dispatch_rule_id = null, updated_at = now()
    where id = ${id}`;
}

/**
 * The catch-all inbound trunk: no numbers and no address filter, so it takes every INVITE that no number's
 * trunk matches (a number that is not ours, or a caller outside the carrier's addresses), and digest
 * credentials nobody holds (random, never stored), so the SIP bridge answers such an INVITE itself with a
 * final 407 challenge (then 401 to any answer), before any room, agent job or control-plane request exists.
 * No dispatch rule names it and no wildcard rule exists, so even a guessed password leads nowhere (the bridge
 * drops the call). Without it the server answers "no trunk" with an empty authentication (accept) and then
 * "no rule" with a silent drop: the caller would ring forever (livekit-sip v1.8, server v1.13).
 */
export async function ensureCatchAllTrunk(services: Services): Promise<string> {
  const { sip } = services.livekit;
  // The dispatch rule of the same name that earlier versions used (a room and an agent job per stranger's call).
  for (const r of await sip.listSipDispatchRule()) if (r.name === CATCH_ALL_TRUNK_NAME) await ignoreMissing(sip.deleteSipDispatchRule(r.sipDispatchRuleId));
  const existing = (await sip.listSipInboundTrunk()).filter((t) => t.name === CATCH_ALL_TRUNK_NAME);
  if (existing[0]) {
    // LiveKit refuses a second trunk without numbers, but two processes starting at once may still race.
    for (const extra of existing.slice(1)) await ignoreMissing(sip.deleteSipTrunk(extra.sipTrunkId));
    return existing[0].sipTrunkId;
  }
  const secret = () => randomBytes(32).toString('base64url');
  try {
    const trunk = await sip.createSipInboundTrunk(CATCH_ALL_TRUNK_NAME, [], {
      authUsername: secret(),
      authPassword: secret(),
      metadata: JSON.stringify({ unrouted: true }),
    });
    return trunk.sipTrunkId;
  } catch (err) {
    // Another process created it between our list and our create (LiveKit refuses the second).
    const again = (await sip.listSipInboundTrunk()).find((t) => t.name === CATCH_ALL_TRUNK_NAME);
    if (again) return again.sipTrunkId;
    throw err;
  }
}

/**
 * Rules of live numbers made before rooms carried the number's id (prefix `pn-`): the control plane opens a
 * call only in a room named `pn-<id>_…`, so point such a rule at its number's prefix. Returns how many changed.
 */
export async function upgradeRoomPrefixes(services: Services, live: Set<string>): Promise<number> {
  const { sip } = services.livekit;
  let changed = 0;
  for (const r of await sip.listSipDispatchRule()) {
    const m = NAME_RE.exec(r.name);
    if (!m || m[2] !== 'rule' || !live.has(m[1]!)) continue;
    const rule = r.rule?.rule;
    if (rule?.case !== 'dispatchRuleIndividual' || rule.value.roomPrefix === inboundRoomPrefix(m[1]!)) continue;
    const individual = new SIPDispatchRuleIndividual({ ...rule.value, roomPrefix: inboundRoomPrefix(m[1]!) });
    await sip.updateSipDispatchRuleFields(r.sipDispatchRuleId, { rule: new SIPDispatchRule({ rule: { case: 'dispatchRuleIndividual', value: individual } }) });
    changed++;
  }
  return changed;
}

/**
 * Inbound trunks of live numbers made before the carrier account check (or before the operator named its
 * header): their headers-to-attributes mapping is set, so the account reaches the control plane. Returns how
 * many changed.
 */
export async function upgradeAccountHeaders(services: Services, live: Set<string>): Promise<number> {
  const { sip } = services.livekit;
  const mapping = accountHeaderMapping(inboundAccountCheck(services.config));
  let changed = 0;
  for (const t of await sip.listSipInboundTrunk()) {
    const m = NAME_RE.exec(t.name);
    if (!m || m[2] !== 'in' || !live.has(m[1]!)) continue;
    const current = t.headersToAttributes ?? {};
    if (Object.entries(mapping).every(([h, a]) => current[h] === a)) continue;
    t.headersToAttributes = { ...current, ...mapping };
    await sip.updateSipInboundTrunk(t.sipTrunkId, t);
    changed++;
  }
  return changed;
}

/** LiveKit objects named for numbers that no longer exist (a crash after LiveKit created them, before we stored them). */
export async function orphanedObjects(services: Services, live: Set<string>): Promise<{ rules: string[]; trunks: string[] }> {
  const { sip } = services.livekit;
  const orphan = (name: string) => {
    const m = NAME_RE.exec(name);
    return m ? !live.has(m[1]!) : false;
  };
  const rules = (await sip.listSipDispatchRule()).filter((r) => orphan(r.name)).map((r) => r.sipDispatchRuleId);
  const trunks = [...(await sip.listSipInboundTrunk()), ...(await sip.listSipOutboundTrunk())].filter((t) => orphan(t.name)).map((t) => t.sipTrunkId);
  return { rules, trunks };
}

export async function deleteOrphans(services: Services, o: { rules: string[]; trunks: string[] }): Promise<void> {
  for (const id of o.rules) await ignoreMissing(services.livekit.sip.deleteSipDispatchRule(id));
  for (const id of o.trunks) await ignoreMissing(services.livekit.sip.deleteSipTrunk(id));
}
