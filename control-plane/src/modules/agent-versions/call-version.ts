// Which version a call runs (docs/decisions/038-agent-versions.md: pinning and the traffic split), resolved when the worker fetches
// the call's config and recorded on the call, so the call keeps it whatever is published later: a pin (the call's
// number, campaign or request named a version) wins; else the agent's traffic split sends its share of callers to
// the split version; else the published version.
import { createHash } from 'node:crypto';
import type { Db } from '../../db/types.ts';
import type { Secrets } from '../../crypto/secrets.ts';
import type { VersionSource } from '../../../../schemas/agent-versions.ts';
import { loadToolsForCall, type ToolForCall } from '../tools/service.ts';
import { claimCallVersion, claimCallVersionQuickly, publishedSnapshot, rolloutForCall, snapshotOf, versionExists } from './queries.ts';
import type { Snapshot, ToolSnapshot } from './snapshot.ts';
import { ValidationFailure } from '../../http/errors.ts';
import { referenceError } from '../../http/references.ts';

/** Buckets of the split: a percent is a whole number of them. */
const BUCKETS = 100;

/**
 * A caller's bucket for an agent's split, 0-99: the first 32 bits of SHA-256 over the agent id and the number.
 * Stable (the same caller lands on the same side on every call while the split lasts, and raising the share only
 * moves callers towards the split version), and uniform enough that the split holds its share
 * (agent-versions/split.test.ts). The agent id in the hash keeps one caller's sides independent across agents.
 */
export function splitBucket(agentId: string, key: string): number {
  return createHash('sha256').update(`${agentId}\n${key}`).digest().readUInt32BE(0) % BUCKETS;
}

/** The number that identifies the other party: the caller of an inbound call, the callee of an outbound one. */
export function stickyKey(call: { id: string; type: string; from_number: string | null; to_number: string | null }): string {
  const number = call.type === 'inbound' ? call.from_number : call.type === 'outbound' ? call.to_number : null;
  // A web call has no number: each call draws on its own (random) id.
  return number ?? `call:${call.id}`;
}

export interface CallVersion {
  version: number;
  source: VersionSource;
  snapshot: Snapshot;
}

/**
 * The version of a call, recorded on the call at its first resolution. Null for an agent without versions (one
 * written to the database directly): the caller then resolves the agent as it is.
 */
export async function versionForCall(
  db: Db,
  call: { id: string; agent_id: string; type: string; from_number: string | null; to_number: string | null; agent_version?: number | null },
): Promise<CallVersion | null> {
  let chosen: { version: number; source: VersionSource } | null = null;
  if (call.agent_version == null) {
    const r = await rolloutForCall(db, call.agent_id);
    if (!r?.published_version) return null;
    const split = r.split_version !== null && r.split_percent !== null && splitBucket(call.agent_id, stickyKey(call)) < r.split_percent;
    chosen = split ? { version: r.split_version!, source: 'split' } : { version: r.published_version, source: 'published' };
  }
  // A pinned call carries its version already: the claim only reads it.
  if (!chosen) return claimCallVersion(db, call, { version: call.agent_version!, source: 'pinned' });
  // Recording the choice is the one write of a config fetch. Its commit need not wait for the WAL to reach the disk
  // (synchronous_commit off, for this transaction only): a crash in that instant loses only the record, and the
  // call's next fetch chooses again. It would otherwise put a disk flush on every call's start (bench:versions).
  return claimCallVersionQuickly(db, call, chosen);
}

/**
 * A version's tools as a call runs them: each tool's definition from the snapshot, with the tool's current
 * secrets (headers, signing secret). A tool deleted since is left out: its secrets are gone with it.
 */
export async function toolsOfSnapshot(db: Db, secrets: Secrets, orgId: string, tools: ToolSnapshot[]): Promise<ToolForCall[]> {
  const live = new Map((await loadToolsForCall(db, secrets, orgId, tools.map((t) => t.id))).map((t) => [t.id, t]));
  return tools.flatMap((t) => {
    const current = live.get(t.id);
    if (!current) return [];
    return [{ ...current, ...t, type: t.type as ToolForCall['type'] }];
  });
}

/** Checks a version pin given in a request: a version of that agent, else a 422 at `loc`. */
export async function checkPin(db: Db, orgId: string, agentId: string, version: number | null | undefined, loc: (string | number)[]): Promise<void> {
  if (version == null) return;
  if (!(await versionExists(db, orgId, agentId, version))) {
    throw new ValidationFailure([{ ...referenceError(loc, 'version of this agent', version), msg: `The agent has no version ${version}` }]);
  }
}

/**
 * The knowledge bases a call's agent searches: those of the call's version, or for another agent of its squad those
 * of that agent's published version; null for an agent without versions (its model's, as they are).
 */
export async function knowledgeBasesForCall(db: Db, call: { agent_id: string; agent_version?: number | null }, agentId: string): Promise<string[] | null> {
  const s =
    agentId === call.agent_id && call.agent_version != null ? await snapshotOf(db, agentId, call.agent_version) : ((await publishedSnapshot(db, agentId))?.snapshot ?? null);
  return s ? s.knowledge_bases.map((k) => k.id) : null;
}
