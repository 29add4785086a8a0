// Migration 084 (turn_taking.barge_in): stored agents and calls' turn_taking overrides keep their behaviour
// ("words"); new rows get the API's default ("pause"). Run again on rows written before it, in a migrated database.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useTestSql } from '../../../test/support/db.ts';
import type { Sql } from './connect.ts';
import { MIGRATIONS_DIR } from './migrate.ts';

let sql: Sql;
useTestSql(2, (s) => {
  sql = s;
});

const BEFORE = { detection: 'transcript', endpointing: 'fixed', min_delay_ms: 150, max_delay_ms: 1500, preemptive_generation: true, ignore_backchannels: true };

describe('migration 084_turn_taking_barge_in', () => {
  it('gives stored agents and call overrides barge_in "words", keeps a barge_in already set, and defaults new agents to "pause"', async () => {
    const [org] = await sql`insert into orgs (name) values ('m084') returning id`;
    const [llm] = await sql`insert into llm_models (org_id, name, provider, model, temperature) values (${org!.id}, 'm', 'openai', 'gpt-4o-mini', 0.7) returning id`;
    const agent = async (turnTaking: Record<string, string | number | boolean>) =>
      (await sql`insert into agents (org_id, name, llm_id, transcriber, tts, turn_taking)
        values (${org!.id}, 'a', ${llm!.id}, ${sql.json({})}, ${sql.json({})}, ${sql.json(turnTaking)}) returning id`)[0]!.id as string;
    const old = await agent(BEFORE);
    const set = await agent({ ...BEFORE, barge_in: 'pause' });
    const call = async (overrides: Record<string, string | Record<string, string | number | boolean>>) =>
      (await sql`insert into calls (org_id, agent_id, type, overrides) values (${org!.id}, ${old}, 'web', ${sql.json(overrides)}) returning id`)[0]!.id as string;
    const overridden = await call({ turn_taking: BEFORE, language: 'de' });
    const plain = await call({ language: 'de' });

    await sql.unsafe(readFileSync(path.join(MIGRATIONS_DIR, '084_turn_taking_barge_in.sql'), 'utf8')).simple();

    const turnTaking = async (id: string) => (await sql`select turn_taking from agents where id = ${id}`)[0]!.turn_taking;
    expect(await turnTaking(old)).toEqual({ ...BEFORE, barge_in: 'words' });
    expect(await turnTaking(set)).toEqual({ ...BEFORE, barge_in: 'pause' });
    const overrides = async (id: string) => (await sql`select overrides from calls where id = ${id}`)[0]!.overrides;
    expect(await overrides(overridden)).toEqual({ turn_taking: { ...BEFORE, barge_in: 'words' }, language: 'de' });
    expect(await overrides(plain)).toEqual({ language: 'de' });
    const [fresh] = await sql`insert into agents (org_id, name, llm_id, transcriber, tts) values (${org!.id}, 'b', ${llm!.id}, ${sql.json({})}, ${sql.json({})}) returning turn_taking`;
    expect(fresh!.turn_taking).toMatchObject({ barge_in: 'pause', ignore_backchannels: true });
  });
});
