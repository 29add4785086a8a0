// SQL of agent versions and of an agent's rollout (published and draft version, traffic split, test gate).
import type { Db } from '../../db/types.ts';
import type { ActorType } from '../../auth/service.ts';
import type { VersionKind, VersionSource } from '../../../../schemas/agent-versions.ts';
import { pageOf, totalColumn, type Counted } from '../../db/list-page.ts';
import type { RunRow } from '../agent-tests/queries.ts';
import type { ModelSnapshot, Snapshot, ToolSnapshot } from './types.ts';

export interface VersionRow {
  agent_id: string;
  version: number;
  org_id: string;
  snapshot: Snapshot;
  kind: VersionKind;
  base_version: number | null;
  changes: string[];
  cause: { resource_type: string; resource_id: string; action: string } | null;
  actor_type: ActorType;
  actor_id: string | null;
  published_at: Date | null;
  created_at: Date;
}

export interface RolloutRow {
  id: string;
  org_id: string;
  published_version: number | null;
  draft_version: number | null;
  split_version: number | null;
  split_percent: number | null;
  test_suite_id: string | null;
}

export interface NewVersion {
  orgId: string;
  agentId: string;
  snapshot: Snapshot;
  kind: VersionKind;
  baseVersion: number | null;
  changes: string[];
  cause?: VersionRow['cause'];
  actor: { type: ActorType; id: string | null };
}

/** The next version of the agent. Callers hold the agent's row lock, so two writers never take the same number. */
export async function insertVersion(db: Db, v: NewVersion): Promise<VersionRow> {
  const [row] = await db<VersionRow[]>`
    insert into agent_versions (agent_id, version, org_id, snapshot, kind, base_version, changes, cause, actor_type, actor_id)
    select ${v.agentId}, coalesce(max(version), 0) + 1, ${v.orgId}, ${db.json(v.snapshot as never)}, ${v.kind}, ${v.baseVersion},
           ${db.array(v.changes)}::text[], ${v.cause ? db.json(v.cause) : null}, ${v.actor.type}, ${v.actor.id}
    from agent_versions where agent_id = ${v.agentId}
    returning *`;
  return row!;
}

export async function getVersion(db: Db, orgId: string, agentId: string, version: number): Promise<VersionRow | null> {
  const [row] = await db<VersionRow[]>`select * from agent_versions where agent_id = ${agentId} and version = ${version} and org_id = ${orgId}`;
  return row ?? null;
}

export async function listVersions(db: Db, orgId: string, agentId: string, q: { limit: number; offset: number }) {
  const from = db`agent_versions where org_id = ${orgId} and agent_id = ${agentId}`;
  const rows = await db<Counted<Omit<VersionRow, 'snapshot'>>[]>`
    select agent_id, version, org_id, kind, base_version, changes, cause, actor_type, actor_id, published_at, created_at, ${totalColumn(db, from)}
    from ${from} order by version desc limit ${q.limit} offset ${q.offset}`;
  return pageOf(db, rows, q.offset, from);
}

export async function getRollout(db: Db, orgId: string, agentId: string, opts: { forUpdate?: boolean } = {}): Promise<RolloutRow | null> {
  const [row] = await db<RolloutRow[]>`
    select id, org_id, published_version, draft_version, split_version, split_percent, test_suite_id
    from agents where id = ${agentId} and org_id = ${orgId} and deleted_at is null ${opts.forUpdate ? db`for update` : db``}`;
  return row ?? null;
}

/** Makes `version` the published one (first publication time kept); a split to it, and a draft that it is, end. */
export async function markPublished(db: Db, agentId: string, version: number): Promise<void> {
  await db`update agent_versions set published_at = coalesce(published_at, now()) where agent_id = ${agentId} and version = ${version}`;
  await db`
    update agents set published_version = ${version},
      draft_version = case when draft_version = ${version} then null else draft_version end,
      split_version = case when split_version = ${version} then null else split_version end,
      split_percent = case when split_version = ${version} then null else split_percent end
    where id = ${agentId}`;
}

export async function setDraft(db: Db, agentId: string, version: number | null): Promise<void> {
  await db`update agents set draft_version = ${version} where id = ${agentId}`;
}

export async function setRollout(db: Db, agentId: string, r: { split: { version: number; percent: number } | null; testSuiteId: string | null }): Promise<void> {
  await db`
    update agents set split_version = ${r.split?.version ?? null}, split_percent = ${r.split?.percent ?? null},
      test_suite_id = ${r.testSuiteId}, updated_at = now()
    where id = ${agentId}`;
}

/** Live agents of the org whose model is one of `modelIds`, locked in id order (no deadlock between two writers). */
export async function agentsOfModels(db: Db, orgId: string, modelIds: string[]): Promise<RolloutRow[]> {
  if (!modelIds.length) return [];
  return db<RolloutRow[]>`
    select id, org_id, published_version, draft_version, split_version, split_percent, test_suite_id
    from agents where org_id = ${orgId} and llm_id = any(${modelIds}::uuid[]) and deleted_at is null
    order by id for update`;
}

export async function modelIdsLinkingTool(db: Db, orgId: string, toolId: string): Promise<string[]> {
  const rows = await db<{ id: string }[]>`
    select id from llm_models where org_id = ${orgId} and tool_ids @> array[${toolId}::uuid] and deleted_at is null`;
  return rows.map((r) => r.id);
}

// ---- Calls -------------------------------------------------------------------------------------------------------

/** What the config fetch reads of a call's agent to pick its version (one indexed row). */
export async function rolloutForCall(db: Db, agentId: string) {
  const [row] = await db<Pick<RolloutRow, 'published_version' | 'split_version' | 'split_percent'>[]>`
    select published_version, split_version, split_percent from agents where id = ${agentId}`;
  return row ?? null;
}

/**
 * Records the version a call runs, unless one is recorded already (a pin, or an earlier fetch), and returns the
 * call's version with its snapshot: one statement, so two fetches of one call agree on it.
 */
export async function claimCallVersion(
  db: Db,
  call: { id: string; agent_id: string },
  chosen: { version: number; source: VersionSource },
): Promise<{ version: number; source: VersionSource; snapshot: Snapshot } | null> {
  const [row] = await db<{ version: number; source: VersionSource; snapshot: Snapshot }[]>`
    with claimed as (
      update calls set agent_version = ${chosen.version}, agent_version_source = ${chosen.source}
      where id = ${call.id} and agent_version is null
      returning agent_version, agent_version_source
    ), current as (
      select agent_version, agent_version_source from claimed
      union all
      select agent_version, agent_version_source from calls where id = ${call.id} and not exists (select 1 from claimed)
    )
    select v.version, c.agent_version_source as source, v.snapshot
    from current c join agent_versions v on v.agent_id = ${call.agent_id} and v.version = c.agent_version`;
  return row ?? null;
}

export async function snapshotOf(db: Db, agentId: string, version: number): Promise<Snapshot | null> {
  const [row] = await db<{ snapshot: Snapshot }[]>`select snapshot from agent_versions where agent_id = ${agentId} and version = ${version}`;
  return row?.snapshot ?? null;
}

/** The published version of an agent with its snapshot (squad members, whose calls follow it). */
export async function publishedSnapshot(db: Db, agentId: string): Promise<{ version: number; snapshot: Snapshot } | null> {
  const [row] = await db<{ version: number; snapshot: Snapshot }[]>`
    select v.version, v.snapshot from agents a join agent_versions v on v.agent_id = a.id and v.version = a.published_version
    where a.id = ${agentId}`;
  return row ?? null;
}

/** Pins a call to a version at its creation (a number's, a campaign's, or the request's). */
export async function pinCall(db: Db, callId: string, version: number): Promise<void> {
  await db`update calls set agent_version = ${version}, agent_version_source = 'pinned' where id = ${callId}`;
}

export async function versionExists(db: Db, orgId: string, agentId: string, version: number): Promise<boolean> {
  const [row] = await db`select 1 from agent_versions where agent_id = ${agentId} and version = ${version} and org_id = ${orgId}`;
  return !!row;
}

/** Whether a model still exists (a version whose model was deleted since cannot be published again). */
export async function modelIsLive(db: Db, orgId: string, modelId: string): Promise<boolean> {
  const [row] = await db`select 1 from llm_models where id = ${modelId} and org_id = ${orgId} and deleted_at is null`;
  return !!row;
}

export async function webhookExists(db: Db, orgId: string, id: string): Promise<boolean> {
  const [row] = await db`select 1 from webhooks where id = ${id} and org_id = ${orgId}`;
  return !!row;
}

/** An agent's model (of the org), its live tools and its knowledge bases, in the model's order, as a snapshot holds them. */
export async function referencesOf(db: Db, orgId: string, modelId: string) {
  const [row] = await db<{ model: ModelSnapshot; tools: ToolSnapshot[]; knowledge_bases: { id: string; name: string }[] }[]>`
    select
      jsonb_build_object('id', m.id, 'name', m.name, 'provider', m.provider, 'model', m.model, 'base_url', m.base_url,
                         'system_prompt', m.system_prompt, 'temperature', m.temperature, 'max_tokens', m.max_tokens,
                         'realtime', m.realtime) as model,
      coalesce((
        select jsonb_agg(jsonb_build_object(
                 'id', t.id, 'type', t.type, 'name', t.name, 'description', t.description, 'parameters', t.parameters,
                 'url', t.url, 'method', t.method, 'timeout_ms', t.timeout_ms, 'destination', t.destination,
                 'transfer_mode', t.transfer_mode) order by array_position(m.tool_ids, t.id))
        from tools t where t.id = any(m.tool_ids) and t.org_id = m.org_id and t.deleted_at is null), '[]'::jsonb) as tools,
      coalesce((
        select jsonb_agg(jsonb_build_object('id', k.id, 'name', k.name) order by array_position(m.knowledge_base_ids, k.id))
        from knowledge_bases k where k.id = any(m.knowledge_base_ids) and k.org_id = m.org_id), '[]'::jsonb) as knowledge_bases
    from llm_models m where m.id = ${modelId} and m.org_id = ${orgId}`;
  return row ?? null;
}

/** The newest run of a suite against one version of an agent, made since `since` (the suite's last edit). */
export async function newestGateRun(db: Db, orgId: string, agentId: string, suiteId: string, version: number, since: Date): Promise<RunRow | null> {
  const [row] = await db<RunRow[]>`
    select id, org_id, agent_id, suite_id, mode, status, total, passed, failed, errored, started_at, ended_at, created_at, agent_version
    from agent_test_runs
    where org_id = ${orgId} and agent_id = ${agentId} and suite_id = ${suiteId} and agent_version = ${version} and created_at >= ${since}
    order by created_at desc, id desc limit 1`;
  return row ?? null;
}

/**
 * claimCallVersion in a transaction of its own whose commit does not wait for the WAL flush (synchronous_commit
 * off for it alone): the config fetch's one write (call-version.ts says why that is safe).
 */
export async function claimCallVersionQuickly(db: Db, call: { id: string; agent_id: string }, chosen: { version: number; source: VersionSource }) {
  if (!('begin' in db)) return claimCallVersion(db, call, chosen);
  return db.begin(async (tx) => {
    await tx`set local synchronous_commit = off`;
    return claimCallVersion(tx, call, chosen);
  });
}
