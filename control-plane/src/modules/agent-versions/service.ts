// Recording, publishing and rolling back agent versions, and the versions that a change to an agent's model or
// tool makes (docs/decisions/038-agent-versions.md). Every function runs inside the caller's transaction and
// expects the agent's row to be locked (getRollout forUpdate), so version numbers never collide.
import type { Db } from '../../db/types.ts';
import type { ActorType } from '../../auth/service.ts';
import { conflict, notFound } from '../../http/errors.ts';
import { referenceError } from '../../http/references.ts';
import { ValidationFailure } from '../../http/errors.ts';
import type { AgentVersion, VersionKind } from '../../../../schemas/agent-versions.ts';
import { updateAgent } from '../agents/queries.ts';
import { agentOfSnapshot, diffSnapshots, effectiveSystemPrompt, resolveSnapshot, sameSnapshot, type Snapshot } from './snapshot.ts';
import {
  agentsOfModels,
  getVersion,
  insertVersion,
  markPublished,
  modelIdsLinkingTool,
  modelIsLive,
  setDraft,
  webhookExists,
  type RolloutRow,
  type VersionRow,
} from './queries.ts';

export interface Actor {
  type: ActorType;
  id: string | null;
}

/**
 * Records `snapshot` as the agent's next version, made from `base`; null when it equals the base (a change that
 * changes nothing makes no version).
 */
export async function recordVersion(
  db: Db,
  a: { orgId: string; agentId: string; snapshot: Snapshot; kind: VersionKind; base: VersionRow | null; actor: Actor; cause?: VersionRow['cause'] },
): Promise<VersionRow | null> {
  if (a.base && sameSnapshot(a.base.snapshot, a.snapshot)) return null;
  return insertVersion(db, {
    orgId: a.orgId,
    agentId: a.agentId,
    snapshot: a.snapshot,
    kind: a.kind,
    baseVersion: a.base?.version ?? null,
    changes: diffSnapshots(a.base?.snapshot ?? null, a.snapshot).map((c) => c.path),
    cause: a.cause ?? null,
    actor: a.actor,
  });
}

/**
 * Publishes a version: the agents row takes its own fields (so the agent resource reads as the published version),
 * and calls that follow the published version run it from their next start. A webhook deleted since is dropped,
 * as deleting a webhook does to the agents using it; a model deleted since cannot be published again (409).
 */
export async function publish(db: Db, orgId: string, agentId: string, v: VersionRow): Promise<void> {
  const agent = agentOfSnapshot(v.snapshot);
  if (!(await modelIsLive(db, orgId, agent.llm_id))) {
    throw conflict(`Version ${v.version} uses an LLM model that was deleted since; it cannot be published again`, { version: v.version, llm_id: agent.llm_id });
  }
  const webhookId = agent.webhook_id && (await webhookExists(db, orgId, agent.webhook_id)) ? agent.webhook_id : null;
  await updateAgent(db, orgId, agentId, { ...agent, webhook_id: webhookId });
  await markPublished(db, agentId, v.version);
}

/** A version number named in a request body: it must be one of the agent's (422 at `loc` otherwise, as other references). */
export async function versionAt(db: Db, orgId: string, agentId: string, version: number, loc: (string | number)[]): Promise<VersionRow> {
  const row = await getVersion(db, orgId, agentId, version);
  if (!row) throw new ValidationFailure([{ ...referenceError(loc, 'version of this agent', version), msg: `The agent has no version ${version}` }]);
  return row;
}

export async function currentVersions(db: Db, orgId: string, r: RolloutRow): Promise<{ published: VersionRow | null; draft: VersionRow | null }> {
  return {
    published: r.published_version ? await getVersion(db, orgId, r.id, r.published_version) : null,
    draft: r.draft_version ? await getVersion(db, orgId, r.id, r.draft_version) : null,
  };
}

/**
 * A change to models (their prompt, settings, tools or knowledge bases) or to a tool they link: each live agent
 * using them gets a version with its references resolved again. Without a test gate the new version of the
 * published one is published at once (the spec's behaviour: agents pick up a model's change on their next call)
 * and a draft is re-resolved as a new draft; with a gate, the change lands in the draft only, to be tested and
 * published. Pinned and split versions keep the snapshot they had.
 */
export async function propagateChange(
  db: Db,
  actor: Actor,
  orgId: string,
  changed: { modelIds?: string[]; toolId?: string },
  cause: NonNullable<VersionRow['cause']>,
): Promise<number[]> {
  const modelIds = [...(changed.modelIds ?? []), ...(changed.toolId ? await modelIdsLinkingTool(db, orgId, changed.toolId) : [])];
  const touched: number[] = [];
  for (const agent of await agentsOfModels(db, orgId, modelIds)) {
    const { published, draft } = await currentVersions(db, orgId, agent);
    if (!published) continue;
    const again = async (base: VersionRow) =>
      recordVersion(db, { orgId, agentId: agent.id, snapshot: await resolveSnapshot(db, orgId, agentOfSnapshot(base.snapshot)), kind: 'dependency', base, actor, cause });
    if (agent.test_suite_id) {
      const v = await again(draft ?? published);
      if (v) await setDraft(db, agent.id, v.version);
      if (v) touched.push(v.version);
      continue;
    }
    const live = await again(published);
    if (live) {
      await publish(db, orgId, agent.id, live);
      touched.push(live.version);
    }
    if (draft) {
      const d = await again(draft);
      if (d) await setDraft(db, agent.id, d.version);
    }
  }
  return touched;
}

/** The public view of a version; `diffAgainst` (with `detail`) adds the snapshot, the prompt and the diff. */
export function versionView(v: Omit<VersionRow, 'snapshot'> & { snapshot?: Snapshot }, r: Pick<RolloutRow, 'published_version' | 'draft_version'>, detail?: { against: VersionRow | null }): AgentVersion {
  const snapshot = detail && v.snapshot ? v.snapshot : null;
  return {
    agent_id: v.agent_id,
    version: v.version,
    kind: v.kind,
    base_version: v.base_version,
    status: v.version === r.published_version ? 'published' : v.version === r.draft_version ? 'draft' : 'archived',
    published_at: v.published_at ? v.published_at.toISOString() : null,
    actor: { type: v.actor_type, id: v.actor_id },
    changes: v.changes,
    cause: v.cause,
    created_at: v.created_at.toISOString(),
    snapshot: snapshot ? { ...snapshot, agent: agentOfSnapshot(snapshot) as unknown as Record<string, unknown> } : null,
    effective_system_prompt: snapshot ? effectiveSystemPrompt(agentOfSnapshot(snapshot).job_description, snapshot.model.system_prompt) : null,
    diff: snapshot && detail ? { against: detail.against?.version ?? null, changes: diffSnapshots(detail.against?.snapshot ?? null, snapshot) } : null,
  };
}

export function requireVersion<T>(v: T | null, what = 'Agent version'): T {
  if (!v) throw notFound(what);
  return v;
}
