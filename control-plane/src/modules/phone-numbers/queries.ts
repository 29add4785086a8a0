// SQL of the phone-numbers resource. The API sees live, wired numbers only (`deleted_at is null and
// wiring_state = 'wired'`); the wiring and repair code sees every state.
import type { Db } from '../../db/types.ts';
import type { InboundRouting } from '../../../../schemas/phone-numbers.ts';
import { pageOf, totalColumn, type Counted } from '../../db/list-page.ts';

export type WiringState = 'purchasing' | 'wiring' | 'wired' | 'releasing' | 'released';

export interface PhoneNumberRow {
  id: string;
  org_id: string;
  phone_number: string;
  friendly_name: string | null;
  provider: string;
  agent_id: string;
  /** Migration 150: the version of agent_id its calls run; null follows the published one. */
  agent_version?: number | null;
  /** Migration 103: the squad the number routes to (then agent_id is its entry agent). */
  squad_id: string | null;
  status: 'active' | 'inactive';
  inbound_trunk_id: string | null;
  outbound_trunk_id: string | null;
  dispatch_rule_id: string | null;
  inbound_routing: InboundRouting | null;
  sms_capable: boolean | null;
  carrier_number_id: string | null;
  wiring_state: WiringState;
  wiring_error: string | null;
  country: string | null;
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const LIVE = (db: Db) => db`deleted_at is null and wiring_state = 'wired'`;

/** The row of a purchase in progress; the live unique index makes a number held by anyone a conflict (null). */
export async function insertPurchasing(
  db: Db,
  r: Pick<PhoneNumberRow, 'id' | 'org_id' | 'phone_number' | 'friendly_name' | 'provider' | 'agent_id' | 'squad_id' | 'inbound_routing' | 'country'>,
): Promise<PhoneNumberRow | null> {
  const [row] = await db<PhoneNumberRow[]>`
    insert into phone_numbers (id, org_id, phone_number, friendly_name, provider, agent_id, squad_id, inbound_routing, country, wiring_state)
    values (${r.id}, ${r.org_id}, ${r.phone_number}, ${r.friendly_name}, ${r.provider}, ${r.agent_id}, ${r.squad_id},
            ${r.inbound_routing ? db.json(r.inbound_routing) : null}, ${r.country}, 'purchasing')
    on conflict (phone_number) where deleted_at is null do nothing
    returning *`;
  return row ?? null;
}

export async function getNumberById(db: Db, id: string): Promise<PhoneNumberRow | undefined> {
  const [row] = await db<PhoneNumberRow[]>`select * from phone_numbers where id = ${id}`;
  return row;
}

export async function setWiring(db: Db, id: string, fields: Partial<Pick<PhoneNumberRow, 'carrier_number_id' | 'sms_capable' | 'inbound_trunk_id' | 'outbound_trunk_id' | 'dispatch_rule_id' | 'wiring_state' | 'wiring_error'>>) {
  const [row] = await db<PhoneNumberRow[]>`update phone_numbers set ${db(fields as Record<string, unknown>)}, updated_at = now() where id = ${id} returning *`;
  return row!;
}

export async function getNumber(db: Db, orgId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<PhoneNumberRow | undefined> {
  const [row] = opts.forUpdate
    ? await db<PhoneNumberRow[]>`select * from phone_numbers where id = ${id} and org_id = ${orgId} and ${LIVE(db)} for update`
    : await db<PhoneNumberRow[]>`select * from phone_numbers where id = ${id} and org_id = ${orgId} and ${LIVE(db)}`;
  return row;
}

export async function listNumbers(db: Db, orgId: string, q: { limit: number; offset: number; status?: string | undefined; agent_id?: string | undefined; squad_id?: string | undefined }) {
  const where = db`org_id = ${orgId} and ${LIVE(db)}
    ${q.status ? db`and status = ${q.status}` : db``}
    ${q.agent_id ? db`and agent_id = ${q.agent_id}` : db``}
    ${q.squad_id ? db`and squad_id = ${q.squad_id}` : db``}`;
  const from = db`phone_numbers where ${where}`;
  const rows = await db<Counted<PhoneNumberRow>[]>`select *, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`;
  return pageOf(db, rows, q.offset, from);
}

export async function updateNumber(db: Db, id: string, f: Partial<Pick<PhoneNumberRow, 'friendly_name' | 'agent_id' | 'agent_version' | 'squad_id' | 'status' | 'inbound_routing'>>) {
  const set: Record<string, unknown> = { ...f };
  if ('inbound_routing' in f) set.inbound_routing = f.inbound_routing ? db.json(f.inbound_routing) : null;
  const [row] = await db<PhoneNumberRow[]>`update phone_numbers set ${db(set)}, updated_at = now() where id = ${id} returning *`;
  return row!;
}

/** A squad's numbers follow its entry agent (their `agent_id`), as a squad's call does. */
export async function followSquadEntry(db: Db, squadId: string, entryAgentId: string): Promise<void> {
  await db`update phone_numbers set agent_id = ${entryAgentId}, updated_at = now() where squad_id = ${squadId} and agent_id <> ${entryAgentId}`;
}

/** The number a SIP INVITE dialled, if it is live on this platform (any org). */
export async function findLiveByNumber(db: Db, phoneNumber: string): Promise<PhoneNumberRow | undefined> {
  const [row] = await db<PhoneNumberRow[]>`select * from phone_numbers where phone_number = ${phoneNumber} and ${LIVE(db)}`;
  return row;
}

/** Purchases and releases interrupted longer ago than `staleSeconds` (a crash, a lost process). */
export async function unfinishedWiring(db: Db, staleSeconds: number): Promise<PhoneNumberRow[]> {
  return db<PhoneNumberRow[]>`
    select * from phone_numbers
    where wiring_state in ('purchasing', 'wiring', 'releasing') and updated_at < now() - make_interval(secs => ${staleSeconds})
    order by updated_at limit 50`;
}

/** Ids of every number that should have LiveKit objects (to find orphans). */
export async function wiredIds(db: Db): Promise<Set<string>> {
  const rows = await db<{ id: string }[]>`select id from phone_numbers where deleted_at is null and wiring_state in ('purchasing', 'wiring', 'wired')`;
  return new Set(rows.map((r) => r.id));
}
