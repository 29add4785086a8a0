// An agent that no worker runs, for tests and benches of the API and the dialler: its model and speech settings
// are never used, so a bare model row and empty transcriber and voice settings do.
import type { Sql } from '../../control-plane/src/db/connect.ts';

/** Inserts a model and an agent on it for `orgId`; the agent's id. */
export async function insertBareAgent(sql: Sql, orgId: string): Promise<string> {
  const [model] = await sql<{ id: string }[]>`
    insert into llm_models (org_id, name, provider, model, temperature) values (${orgId}, 'm', 'openai', 'gpt-4o-mini', 0.7) returning id`;
  const [agent] = await sql<{ id: string }[]>`
    insert into agents (org_id, name, llm_id, transcriber, tts) values (${orgId}, 'a', ${model!.id}, '{}', '{}') returning id`;
  return agent!.id;
}
