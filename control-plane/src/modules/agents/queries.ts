import type { Db } from '../../db/types.ts';
import { agentBehaviour, type Agent } from '../../../../schemas/agents.ts';
import { pageOf, totalColumn, type Counted } from '../../db/list-page.ts';

export type AgentRow = Omit<Agent, 'effective_system_prompt'>;

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

/** An agent with the system prompt of its model, for `effective_system_prompt`. */
export async function getAgentWithPrompt(db: Db, orgId: string, id: string): Promise<(AgentRow & { system_prompt: string | null }) | null> {
  const [row] = await db<(AgentRow & { system_prompt: string | null })[]>`
    select ${columns(db, 'a')}, m.system_prompt
    from agents a join llm_models m on m.id = a.llm_id
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
  const rows = await db<Counted<AgentRow>[]>`select ${columns(db)}, ${totalColumn(db, from)} from ${from} order by created_at desc, id desc limit ${q.limit} offset ${q.offset}`;
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
