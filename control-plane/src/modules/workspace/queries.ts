import type { Db } from '../../db/types.ts';
import type { DataRetention } from '../../../../shared/privacy.ts';

export interface WorkspaceRow {
  id: string;
  name: string;
  timezone: string;
  default_webhook_id: string | null;
  default_agent_id: string | null;
  max_calls_per_day: number;
  kb_token_budget: number;
  max_concurrent_calls: number;
  daily_spend_cap_cents: number;
  destination_allowed_countries: string[] | null;
  destination_blocked_number_types: string[] | null;
  destination_allowed_sip_hosts: string[];
  /** The operator's ceiling (admin set-destination-limits). */
  destination_extra_countries: string[];
  destination_unblockable_types: string[];
  data_retention: DataRetention;
  retain_days: number | null;
  created_at: Date;
  updated_at: Date;
}

// A soft-deleted agent is no default agent.
const columns = (db: Db) => db`
  o.id, o.name, o.timezone, o.default_webhook_id,
  (select a.id from agents a where a.id = o.default_agent_id and a.deleted_at is null) as default_agent_id,
  o.max_calls_per_day, o.kb_token_budget, o.max_concurrent_calls, o.daily_spend_cap_cents,
  o.destination_allowed_countries, o.destination_blocked_number_types, o.destination_allowed_sip_hosts,
  o.destination_extra_countries, o.destination_unblockable_types,
  o.data_retention, o.retain_days, o.created_at, o.updated_at`;

export async function getWorkspace(db: Db, orgId: string): Promise<WorkspaceRow> {
  const [row] = await db<WorkspaceRow[]>`select ${columns(db)} from orgs o where o.id = ${orgId}`;
  return row!;
}

export interface WorkspaceChanges {
  name?: string | undefined;
  timezone?: string | undefined;
  /** undefined: unchanged; null: cleared. */
  defaultWebhookId?: string | null | undefined;
  defaultAgentId?: string | null | undefined;
  /** undefined: unchanged; null: back to the default. */
  allowedCountries?: string[] | null | undefined;
  blockedNumberTypes?: string[] | null | undefined;
  allowedSipHosts?: string[] | undefined;
  dataRetention?: DataRetention | undefined;
  /** undefined: unchanged; null: content is kept. */
  retainDays?: number | null | undefined;
}

export async function updateWorkspace(db: Db, orgId: string, ch: WorkspaceChanges): Promise<WorkspaceRow> {
  const [row] = await db<WorkspaceRow[]>`
    update orgs o set
      ${ch.name !== undefined ? db`name = ${ch.name},` : db``}
      ${ch.timezone !== undefined ? db`timezone = ${ch.timezone},` : db``}
      ${ch.defaultWebhookId !== undefined ? db`default_webhook_id = ${ch.defaultWebhookId},` : db``}
      ${ch.defaultAgentId !== undefined ? db`default_agent_id = ${ch.defaultAgentId},` : db``}
      ${ch.allowedCountries !== undefined ? db`destination_allowed_countries = ${ch.allowedCountries},` : db``}
      ${ch.blockedNumberTypes !== undefined ? db`destination_blocked_number_types = ${ch.blockedNumberTypes},` : db``}
      ${ch.allowedSipHosts !== undefined ? db`destination_allowed_sip_hosts = ${ch.allowedSipHosts},` : db``}
      ${ch.dataRetention !== undefined ? db`data_retention = ${ch.dataRetention},` : db``}
      ${ch.retainDays !== undefined ? db`retain_days = ${ch.retainDays},` : db``}
      updated_at = now()
    where o.id = ${orgId}
    returning ${columns(db)}`;
  return row!;
}

export interface Limits {
  max_calls_per_day: number;
  kb_token_budget: number;
  max_concurrent_calls: number;
  daily_spend_cap_cents: number;
}

/** Operator-only (the admin command): returns the limits before and after, or null for an unknown org. */
export async function setLimits(db: Db, orgId: string, ch: Partial<Limits>): Promise<{ before: Limits; after: Limits } | null> {
  const [before] = await db<Limits[]>`
    select max_calls_per_day, kb_token_budget, max_concurrent_calls, daily_spend_cap_cents from orgs where id = ${orgId} for update`;
  if (!before) return null;
  const [after] = await db<Limits[]>`
    update orgs set
      max_calls_per_day = ${ch.max_calls_per_day ?? before.max_calls_per_day},
      kb_token_budget = ${ch.kb_token_budget ?? before.kb_token_budget},
      max_concurrent_calls = ${ch.max_concurrent_calls ?? before.max_concurrent_calls},
      daily_spend_cap_cents = ${ch.daily_spend_cap_cents ?? before.daily_spend_cap_cents},
      updated_at = now()
    where id = ${orgId}
    returning max_calls_per_day, kb_token_budget, max_concurrent_calls, daily_spend_cap_cents`;
  return { before, after: after! };
}

export async function insertOrg(db: Db, name: string, isDev: boolean): Promise<{ id: string; name: string }> {
  const [org] = await db<{ id: string; name: string }[]>`insert into orgs (name, is_dev) values (${name}, ${isDev}) returning id, name`;
  return org!;
}

/** The development organisation made on the first start, if any. */
export async function devOrg(db: Db): Promise<{ id: string } | undefined> {
  const [org] = await db<{ id: string }[]>`select id from orgs where is_dev order by created_at limit 1`;
  return org;
}

/** Whether any organisation exists, under the bootstrap advisory lock (held to the end of the transaction). */
export async function anyOrgLocked(db: Db): Promise<boolean> {
  await db`select pg_advisory_xact_lock(${0x7661_706f})`;
  const [any] = await db`select 1 from orgs limit 1`;
  return !!any;
}

export interface DestinationPolicyRow {
  destination_allowed_countries: string[] | null;
  destination_blocked_number_types: string[] | null;
  destination_allowed_sip_hosts: string[];
  destination_extra_countries: string[];
  destination_unblockable_types: string[];
  /** The org's live numbers, whose countries are the default allowed countries. */
  numbers: { phone_number: string; country: string | null }[];
}

export async function destinationPolicyOf(db: Db, orgId: string): Promise<DestinationPolicyRow | undefined> {
  const [row] = await db<DestinationPolicyRow[]>`
    select o.destination_allowed_countries, o.destination_blocked_number_types, o.destination_allowed_sip_hosts,
           o.destination_extra_countries, o.destination_unblockable_types,
           coalesce((select json_agg(json_build_object('phone_number', n.phone_number, 'country', n.country))
                     from phone_numbers n where n.org_id = o.id and n.deleted_at is null), '[]'::json) as numbers
    from orgs o where o.id = ${orgId}`;
  return row;
}

export interface DestinationLimits {
  destination_extra_countries: string[];
  destination_unblockable_types: string[];
}

/** Operator-only (the admin command): the destination ceiling before and after, or null for an unknown org. */
export async function setDestinationLimits(
  db: Db,
  orgId: string,
  ch: Partial<DestinationLimits>,
): Promise<{ before: DestinationLimits; after: DestinationLimits } | null> {
  const [before] = await db<DestinationLimits[]>`
    select destination_extra_countries, destination_unblockable_types from orgs where id = ${orgId} for update`;
  if (!before) return null;
  const [after] = await db<DestinationLimits[]>`
    update orgs set
      destination_extra_countries = ${ch.destination_extra_countries ?? before.destination_extra_countries},
      destination_unblockable_types = ${ch.destination_unblockable_types ?? before.destination_unblockable_types},
      updated_at = now()
    where id = ${orgId}
    returning destination_extra_countries, destination_unblockable_types`;
  return { before, after: after! };
}
