import type { Db } from '../../db/types.ts';
import { agentBehaviour, type Agent } from '../../../../schemas/agents.ts';
import { pageOf, totalColumn, type Counted } from '../../db/list-page.ts';

export type AgentRow = Omit<Agent, 'effective_system_prompt' | 'warnings' | 'version' | 'draft_version'>;

/** Every writable column of an agent: the schema's fields (schemas/agents.ts) less the generated ones. */
export type AgentWrite = Omit<AgentRow, 'id' | 'created_at' | 'updated_at'>;

const WRITABLE = ['name', 'llm_id', 'webhook_id', ...(Object.keys(agentBehaviour) as (keyof typeof agentBehaviour)[])] satisfies (keyof AgentWrite)[];
const COLUMNS = ['id', ...WRITABLE, 'created_at', 'updated_at'];
// postgres.js quotes `a.id` as "a"."id".
const columns = (db: Db, alias = '') => db(alias ? COLUMNS.map((c) => `${alias}.${c}`) : COLUMNS);

/** Column values with jsonb and arrays bound with their types. */
function values(db: Db, a: AgentWrite) {
  return {
    ...a,
    transcriber: db.json(a.transcriber),
    tts: db.json(a.tts),
    turn_taking: db.json(a.turn_taking),
    dynamic_variables: db.json(a.dynamic_variables),
    metadata: db.json(a.metadata as never),
    end_call_phrases: db.array(a.end_call_phrases),
  };
}

export async function insertAgent(db: Db, orgId: string, a: AgentWrite): Promise<AgentRow> {
  const row = { org_id: orgId, ...values(db, a) };
  const [out] = await db<AgentRow[]>`insert into agents ${db(row as never, ['org_id', ...WRITABLE])} returning ${columns(db)}`;
  return out!;
}

export async function updateAgent(db: Db, orgId: string, id: string, a: AgentWrite): Promise<AgentRow> {
  const [out] = await db<AgentRow[]>`
    update agents set ${db(values(db, a) as never, WRITABLE)}, updated_at = now()
    where id = ${id} and org_id = ${orgId} and deleted_at is null
    returning ${columns(db)}`;
  return out!;
}

export async function getAgent(db: Db, orgId: string, id: string, opts: { forUpdate?: boolean } = {}): Promise<AgentRow | null> {
  const [row] = await db<AgentRow[]>`
    select ${columns(db)} from agents where id = ${id} and org_id = ${orgId} and deleted_at is null ${opts.forUpdate ? db`for update` : db``}`;
  return row ?? null;
}

/** The published and draft version numbers of an agent (agent-versions), as the agent resource shows them. */
export interface AgentVersions {
  published_version: number | null;
  draft_version: number | null;
}

/**
 * An agent with the system prompt of its published version (the model's prompt as that version resolved it; the
 * model's own for an agent without versions), for `effective_system_prompt`.
 */
export async function getAgentWithPrompt(db: Db, orgId: string, id: string): Promise<(AgentRow & AgentVersions & { system_prompt: string | null }) | null> {
  const [row] = await db<(AgentRow & AgentVersions & { system_prompt: string | null })[]>`
    select ${columns(db, 'a')}, a.published_version, a.draft_version,
      case when v.agent_id is null then m.system_prompt else v.snapshot->'model'->>'system_prompt' end as system_prompt
    from agents a join llm_models m on m.id = a.llm_id
    left join agent_versions v on v.agent_id = a.id and v.version = a.published_version
    where a.id = ${id} and a.org_id = ${orgId} and a.deleted_at is null`;
  return row ?? null;
}

export async function modelPrompt(db: Db, modelId: string): Promise<string | null> {
  const [row] = await db<{ system_prompt: string | null }[]>`select system_prompt from llm_models where id = ${modelId}`;
  return row?.system_prompt ?? null;
}

export async function listAgents(db: Db, orgId: string, q: { limit: number; offset: number; llm_id?: string | undefined }) {
  const where = db`org_id = ${orgId} and deleted_at is null ${q.llm_id ? db`and llm_id = ${q.llm_id}` : db``}`;
  const from = db`agents where ${where}`;
  const rows = await db<Counted<AgentRow & AgentVersions>[]>`
    select ${columns(db)}, published_version, draft_version, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`;
  return pageOf(db, rows, q.offset, from);
}

/**
 * Phone numbers that send calls to an agent: as their agent, as the agent of their inbound routing override,
 * or as its fallback.
 */
export async function numbersRoutingTo(db: Db, orgId: string, agentId: string): Promise<{ id: string; phone_number: string }[]> {
  return db<{ id: string; phone_number: string }[]>`
    select id, phone_number from phone_numbers
    where org_id = ${orgId} and deleted_at is null
      and (agent_id = ${agentId}
           or inbound_routing->>'agent_id' = ${agentId}
           or inbound_routing->'fallback'->>'agent_id' = ${agentId})
    order by phone_number`;
}

export async function softDeleteAgent(db: Db, orgId: string, id: string): Promise<void> {
  await db`update agents set deleted_at = now(), updated_at = now() where id = ${id} and org_id = ${orgId} and deleted_at is null`;
}

/** Providers the organisation has a credential for (an agent's `warnings`). */
export async function credentialProviders(db: Db, orgId: string): Promise<Set<string>> {
  const rows = await db<{ provider: string }[]>`select distinct provider from credentials where org_id = ${orgId}`;
  return new Set(rows.map((r) => r.provider));
}

/** What an agent's `warnings` need, in one round trip: its model's provider and base_url, and the org's credentials. */
export async function readinessFacts(
  db: Db,
  orgId: string,
  modelId: string,
): Promise<{ providers: Set<string>; model: { provider: string; base_url: string | null } | undefined }> {
  const [row] = await db<{ providers: string[]; provider: string | null; base_url: string | null }[]>`
    select array(select distinct provider from credentials where org_id = ${orgId}) as providers, m.provider, m.base_url
    from (select 1) one left join llm_models m on m.id = ${modelId} and m.org_id = ${orgId}`;
  return { providers: new Set(row?.providers ?? []), model: row?.provider ? { provider: row.provider, base_url: row.base_url } : undefined };
}

/** Whether a model of the org is a realtime (speech-to-speech) model; false for none. */
export async function modelIsRealtime(db: Db, orgId: string, modelId: string): Promise<boolean> {
  const [row] = await db<{ realtime: boolean }[]>`select realtime is not null as realtime from llm_models where id = ${modelId} and org_id = ${orgId}`;
  return !!row?.realtime;
}
