// Migration 150 (agent versions): version 1 of an agent that existed before versions is the snapshot the API would
// record for it (agent-versions/snapshot.ts), built in SQL from its row, its model, the model's live tools and its
// knowledge bases; and the agent is published at version 1. Its version-1 statements run on rows written before it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTestSql } from '../../../test/support/db.ts';
import type { Sql } from './connect.ts';
import { MIGRATIONS_DIR } from './migrate.ts';
import { resolveSnapshot, sameSnapshot, type Snapshot } from '../modules/agent-versions/snapshot.ts';
import { writeOf } from '../modules/agents/service.ts';
import { getAgent, type AgentRow } from '../modules/agents/queries.ts';

let sql: Sql;
useTestSql(2, (s) => {
  sql = s;
});

/** The migration's statements that make version 1 (after its schema changes, which the test database has). */
const versionOneSql = () => {
  const text = readFileSync(path.join(MIGRATIONS_DIR, '150_agent_versions.sql'), 'utf8');
  return text.slice(text.indexOf('-- Version 1 of every existing agent'));
};
/** What later migrations do to the versions it made, as a database upgraded from before 150 runs them. */
const laterVersionSql = () => {
  const text = readFileSync(path.join(MIGRATIONS_DIR, '170_realtime_models.sql'), 'utf8');
  return text.slice(text.indexOf('-- Versions recorded before realtime models existed'));
};

describe('migration 150_agent_versions', () => {
  it("makes version 1 of an existing agent equal to the API's snapshot of it, and publishes it", async () => {
    const [org] = await sql`insert into orgs (name) values ('m150') returning id`;
    const orgId = org!.id as string;
    const [kb] = await sql`insert into knowledge_bases (org_id, name) values (${orgId}, 'FAQ') returning id`;
    const [t1] = await sql`
      insert into tools (org_id, type, name, description, destination) values (${orgId}, 'transfer_call', 'to_desk', 'Front desk', '+14155550199') returning id`;
    const [t2] = await sql`insert into tools (org_id, type, name) values (${orgId}, 'end_call', 'hang_up') returning id`;
    const [gone] = await sql`insert into tools (org_id, type, name, deleted_at) values (${orgId}, 'end_call', 'old', now()) returning id`;
    const [llm] = await sql`
      insert into llm_models (org_id, name, provider, model, temperature, system_prompt, tool_ids, knowledge_base_ids)
      values (${orgId}, 'm', 'openai', 'gpt-4o-mini', 0.7, 'Be brief.', ${[t2!.id, gone!.id, t1!.id]}::uuid[], ${[kb!.id]}::uuid[]) returning id`;
    const [agent] = await sql<AgentRow[]>`
      insert into agents (org_id, name, llm_id, transcriber, tts, first_message, end_call_phrases, dynamic_variables, metadata)
      values (${orgId}, 'Old agent', ${llm!.id}, ${sql.json({ provider: 'deepgram', model: 'nova-3', language: 'en-US' })},
              ${sql.json({ provider: 'openai', model: 'gpt-4o-mini-tts', voice_id: 'alloy' })}, 'Hi {{name}}', ${['bye']}::text[],
              ${sql.json({ name: 'friend' })}, ${sql.json({ team: 'a' })})
      returning *`;

    await sql.unsafe(versionOneSql()).simple();
    await sql.unsafe(laterVersionSql()).simple();

    const [v] = await sql<{ version: number; kind: string; snapshot: Snapshot; published_at: Date | null }[]>`
      select version, kind, snapshot, published_at from agent_versions where agent_id = ${agent!.id}`;
    expect(v).toMatchObject({ version: 1, kind: 'migration', published_at: expect.any(Date) });
    const [published] = await sql<{ published_version: number }[]>`select published_version from agents where id = ${agent!.id}`;
    expect(published!.published_version).toBe(1);
    const expected = await resolveSnapshot(sql, orgId, writeOf((await getAgent(sql, orgId, agent!.id))!));
    expect(v!.snapshot.tools.map((t) => t.name)).toEqual(['hang_up', 'to_desk']);
    expect(v!.snapshot.knowledge_bases).toEqual([{ id: kb!.id, name: 'FAQ' }]);
    expect(v!.snapshot.model).toEqual(expected.model);
    expect(sameSnapshot(v!.snapshot, expected)).toBe(true);
  });
});
