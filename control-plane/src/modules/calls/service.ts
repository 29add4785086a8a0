// Calls: the public resource view, web call creation, stop, and the session config a media worker fetches.
import { randomUUID } from 'node:crypto';
import type { Services } from '../../services.ts';
import type { Auth } from '../../auth/service.ts';
import type { Db } from '../../db/types.ts';
import { conflict, forbidden, HttpError, notFound, ValidationFailure } from '../../http/errors.ts';
import { detectionProblems, resolveTranscriber, resolveTts, resolveTurnTaking } from '../agents/service.ts';
import type { TurnTaking } from '../../../../shared/turn-taking.ts';
import type { TranscriberConfig } from '../../../../shared/voices.ts';
import type { AgentRow } from '../agents/queries.ts';
import { resolveCallTarget, setCallSquad } from '../squads/target.ts';
import { squadConfigFor } from '../squads/call-config.ts';
import { squadMembers } from '../squads/queries.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { writeAudit } from '../audit-events/queries.ts';
import type { CallConfig, ToolConfig } from '../../../../schemas/internal.ts';
import { IVR_DEFAULTS, type CallOverrides } from '../../../../schemas/calls.ts';
import { agentBehaviour } from '../../../../schemas/agents.ts';
import { effectiveSystemPrompt } from '../../../../shared/prompt.ts';
import { interpolate, mergeVariables } from '../../../../shared/template.ts';
import { loadToolsForCall, type ToolForCall } from '../tools/service.ts';
import { checkPin, versionForCall, toolsOfSnapshot } from '../agent-versions/call-version.ts';
import { pinCall, publishedSnapshot } from '../agent-versions/queries.ts';
import { agentOfSnapshot, type ModelSnapshot, type Snapshot } from '../agent-versions/snapshot.ts';
import { resolveProviderKeys } from '../credentials/service.ts';
import { knowledgeConfigFor } from '../knowledge-bases/search.ts';
import { agentAndModelForCall, getCall, getCallById, insertCall, retentionOfCall, type CallRow } from './queries.ts';
import { admissionError, admitCall } from './limits.ts';
import { failCall, finishCall, isFinal, LIVEKIT_UNREACHABLE, markInitiated } from './lifecycle.ts';
import { overridesRefused, refusedFields } from '../publishable-keys/allowed-overrides.ts';
import { policyOptionsFor } from './destinations.ts';
import { destinationPolicyFor } from '../workspace/destination-policy.ts';
import { carrierFor } from '../phone-numbers/carriers/index.ts';
import { recordingUploadUrl } from './recordings.ts';
import { dispatchCallAgent } from './capability.ts';
import { recordingUrl } from './storage/index.ts';
import { closeTransfers, transfersOf } from './transfers.ts';
import type { CallTransfer } from '../../../../schemas/calls.ts';
import { SpanKind, inSpan, traceCarrier } from '../../../../shared/tracing.ts';

export const roomNameFor = (callId: string) => `call-${callId}`;

const NO_SAMPLES = Object.freeze({ avg_ms: 0, p50_ms: 0, min_ms: 0, max_ms: 0, samples: 0 });

/** The spec's Call resource. `recording_url` is minted afresh on each call (signed or presigned, 4 hours). */
export async function callView(services: Services, row: CallRow, opts: { db?: Db; transfers?: CallTransfer[] } = {}) {
  const messages = row.messages ?? null;
  const ended = isFinal(row.status);
  const stored = ended ? (row.latency) : null;
  return {
    id: row.id,
    agent_id: row.agent_id,
    agent_version: row.agent_version ?? null,
    agent_version_source: row.agent_version_source ?? null,
    type: row.type,
    status: row.status,
    direction: row.direction,
    to_number: row.to_number,
    from_number: row.from_number,
    room_name: row.room_name,
    carrier_call_sid: row.carrier_call_sid,
    scheduled_at: row.scheduled_at,
    variables: row.variables,
    started_at: row.started_at,
    ended_at: row.ended_at,
    duration_seconds: row.duration_seconds,
    end_reason: row.end_reason,
    error: row.error_code ? { code: row.error_code, message: row.error_message ?? '' } : null,
    outcome: row.outcome,
    recording_url: row.recording_key ? await recordingUrl(services, row.id, row.recording_key) : null,
    recording_consent: row.recording_consent ?? null,
    // `messages` is the conversation once the call has ended; `transcript` is its deprecated mirror.
    transcript: ended ? messages : null,
    messages: ended ? messages : null,
    ai_summary: row.ai_summary,
    analysis: { outcome: row.outcome, summary: row.analysis_summary, status: row.analysis_status, error: row.analysis_error, method: row.analysis_method ?? null, model: row.analysis_model ?? null },
    metadata: row.metadata,
    // Null until the call has ended with the worker's figures: "not yet measured", where zeros would read as measured.
    latency: stored
      ? {
          llm_ttft: stored.llm_ttft ?? NO_SAMPLES,
          tts_ttfb: stored.tts_ttfb ?? NO_SAMPLES,
          eou_delay: stored.eou_delay ?? NO_SAMPLES,
          ...(stored.e2e ? { e2e: stored.e2e } : {}),
        }
      : null,
    credits_used: row.duration_seconds === null ? null : row.duration_seconds / 60,
    cost_cents: row.cost_cents,
    campaign_id: row.campaign_id ?? null,
    squad_id: row.squad_id ?? null,
    handoffs: row.handoffs ?? [],
    supervision: row.supervision ?? [],
    // A page of calls brings them in one query (routes.ts); a single call reads its own, on the request's
    // connection (a second one per request could starve the pool).
    transfers: opts.transfers ?? (await transfersOf(opts.db ?? services.sql, [row.id])).get(row.id) ?? [],
    agent_latency: ended ? (row.agent_latency ?? null) : null,
    ivr_goal: row.ivr_goal ?? null,
    ivr: row.ivr_goal ? { max_menus: row.ivr_max_menus ?? IVR_DEFAULTS.max_menus } : null,
    created_at: row.created_at,
  };
}

export { secondsToUtcMidnight } from './limits.ts';

export interface CreateWebCallInput {
  agent_id?: string | undefined;
  squad_id?: string | undefined;
  agent_version?: number | undefined;
  variables?: Record<string, unknown> | undefined;
  metadata?: Record<string, unknown> | undefined;
  overrides?: CallOverrides | undefined;
}

/**
 * A web call's room and its agent dispatch, and a token for the caller to join it (a web page, or an agent
 * test's simulated caller). Throws when LiveKit cannot be reached.
 */
export async function openWebCallRoom(services: Services, id: string, room: string): Promise<string> {
  const { livekit } = services;
  return inSpan('call.dispatch', { kind: SpanKind.PRODUCER, attributes: { 'vap.call_id': id, 'livekit.room': room } }, async () => {
    // The worker's job continues this trace: traceparent travels in the dispatch (and room) metadata. The
    // call's capability goes in the dispatch only: room metadata is visible to everyone in the room.
    const trace = traceCarrier();
    await livekit.rooms.createRoom({ name: room, metadata: JSON.stringify({ call_id: id, ...trace }), emptyTimeout: 120, departureTimeout: 15 });
    await dispatchCallAgent(services, room, id, trace);
    return livekit.participantToken(room, `user-${id}`, { name: 'caller' });
  });
}

/**
 * POST /v1/calls/web. The call row and the daily-cap slot commit first (one short transaction); then the room
 * and the explicit dispatch are created on LiveKit with no transaction open; then the call is `initiated`.
 */
export async function createWebCall(services: Services, auth: Auth, input: CreateWebCallInput, meta: { requestId: string; ip: string | null }) {
  const { sql, livekit } = services;
  const publishable = auth.publishable;
  if (publishable) {
    // A key limited to some agents starts a squad only if it may start every member (the squad's agents all speak).
    const wanted = input.agent_id !== undefined ? [input.agent_id] : await squadMembers(sql, auth.orgId, input.squad_id);
    if (publishable.agentIds && !wanted.every((a) => publishable.agentIds!.includes(a))) {
      throw forbidden(input.agent_id !== undefined ? 'This publishable key may not start calls with this agent' : 'This publishable key may not start calls with every agent of this squad');
    }
    const refused = refusedFields(publishable.allowedOverrides, input);
    if (refused.length) throw overridesRefused(refused);
    // A page's key has its own limits, checked before the org's: calls per minute per client IP here, its
    // concurrent calls in admitCall (docs/decisions/003-publishable-keys.md, "Publishable keys and phone capacity").
    services.limits.publishableWebCalls.take(`web:${auth.orgId}:${meta.ip ?? ''}`);
  }
  const id = randomUUID();
  let room = roomNameFor(id);
  let standby = false;
  const call = await sql.begin(async (tx) => {
    // A missing (or another org's) agent or squad is a 422 reference_not_found, as on POST /v1/calls.
    const { agent, squad } = await resolveCallTarget(tx, auth.orgId, input);
    const overrides = resolveOverrides(input.overrides, agent);
    const admission = await admitCall(tx, auth.orgId, publishable ? { publishable: { maxConcurrent: services.config.PUBLISHABLE_WEB_CALL_CONCURRENCY } } : {});
    if (!admission.ok) throw admissionError(admission);
    // A standby agent's room, when one is ready: its agent is already there (modules/standby). Taken after every
    // refusal above, so a refused call never uses one up; the call row, inserted next in this transaction, is
    // committed before the agent hears of it.
    const standbyRoom = await services.standby.take(tx, id);
    if (standbyRoom) [room, standby] = [standbyRoom, true];
    const inserted = await insertCall(tx, {
      id,
      org_id: auth.orgId,
      agent_id: agent.id,
      type: 'web',
      direction: null,
      to_number: null,
      from_number: null,
      room_name: room,
      variables: input.variables ?? {},
      metadata: input.metadata ?? {},
      overrides,
      webhook_url: null,
      publishable_key_id: publishable ? auth.actorId : null,
    });
    const row = await setCallSquad(tx, inserted, squad);
    await pinRequested(tx, auth.orgId, row, squad, input.agent_version);
    await writeAudit(tx, {
      orgId: auth.orgId,
      actorType: auth.actorType,
      actorId: auth.actorId,
      action: 'call.create',
      resourceType: 'call',
      resourceId: id,
      requestId: meta.requestId,
      ip: meta.ip,
      details: { type: 'web', agent_id: agent.id, ...(squad ? { squad_id: squad.id } : {}), ...(input.agent_version ? { agent_version: input.agent_version } : {}) },
    });
    // The room and its agent exist already: the call is initiated with its commit.
    if (standby) await markInitiated(tx, id);
    return row;
  });

  let token: string;
  try {
    if (standby) {
      services.standby.afterTake(room);
      token = await livekit.participantToken(room, `user-${id}`, { name: 'caller' });
    } else token = await openWebCallRoom(services, id, room);
  } catch (err) {
    services.log.error({ err, call_id: id }, 'room or dispatch failed');
    await sql.begin((tx) => failCall(tx, call, 'media_unavailable', 'dispatch_failed', LIVEKIT_UNREACHABLE));
    throw new HttpError(503, 'service_unavailable', 'The media service is unavailable; the call was not started', { extra: { call_id: id } });
  }
  if (!standby) await markInitiated(sql, id);
  const fresh = (await getCallById(sql, id))!;
  return {
    id,
    agent_id: call.agent_id,
    type: 'web' as const,
    status: fresh.status,
    room_name: room,
    server_url: livekit.publicUrl,
    participant_token: token,
    created_at: call.created_at,
  };
}

/**
 * A version the request pins (web and outbound calls): one of the agent's versions (else 422 at agent_version),
 * and only for a call on one agent (a squad's members follow their published versions).
 */
export async function pinRequested(db: Db, orgId: string, call: CallRow, squad: { id: string } | null | undefined, version: number | undefined): Promise<void> {
  if (version === undefined) return;
  if (squad) throw new ValidationFailure([{ loc: ['body', 'agent_version'], msg: 'A version is pinned on a call with agent_id, not on a squad', type: 'value_error', input: version }]);
  await checkPin(db, orgId, call.agent_id, version, ['body', 'agent_version']);
  await pinCall(db, call.id, version);
  Object.assign(call, { agent_version: version, agent_version_source: 'pinned' });
}

/**
 * POST /v1/calls/{id}/stop, in every state. The call ends at the moment of the stop: `ended_at`, the duration
 * (and so the billed minutes and cost) and `end_reason` are fixed here, and the room is deleted, which hangs up
 * the phone leg. A call in progress completes with `api_stop`; its worker's report, which follows, only brings
 * the conversation, latency and usage. A call that never connected ends at once with duration 0: an outbound
 * call that is queued (scheduled or waiting for its dial job) or ringing fails `canceled` (call.failed, no
 * analysis) and is never dialled afterwards (the dial job checks the status under the row lock); a web call
 * completes `api_stop`. On a call
 * that has already ended it changes nothing and answers the call as it is.
 */
export async function stopCall(services: Services, auth: Auth, callId: string, meta: { requestId: string; ip: string | null }) {
  const { sql } = services;
  const before = await getCall(sql, auth.orgId, callId);
  if (!before) throw notFound('Call');
  if (isFinal(before.status)) return before;

  const endedAt = new Date().toISOString();
  const row = await sql.begin(async (tx) => {
    const locked = await getCallById(tx, callId, { lock: true });
    if (!locked || isFinal(locked.status)) return locked!;
    const connected = locked.status === 'in_progress';
    const endReason = !connected && locked.type === 'outbound' ? 'canceled' : 'api_stop';
    await writeAudit(tx, {
      orgId: auth.orgId,
      actorType: auth.actorType,
      actorId: auth.actorId,
      action: 'call.stop',
      resourceType: 'call',
      resourceId: callId,
      requestId: meta.requestId,
      ip: meta.ip,
      details: { status: locked.status, end_reason: endReason },
    });
    if (connected) {
      await closeTransfers(tx, locked.id);
      return (
        (await finishCall(tx, services, locked, { endReason, endedAt }, { awaitReport: { graceSeconds: services.config.STOP_REPORT_GRACE_SECONDS } })) ?? locked
      );
    }
    // An outbound call stopped while queued or ringing never connected: it fails `canceled` (call.failed, no
    // call.ended, no analysis), as a call the callee did not answer does (docs/decisions/spec-stop-before-connect.md).
    if (locked.type === 'outbound') return (await failCall(tx, locked, 'canceled', 'canceled')) ?? locked;
    // A web call stopped before it connected: no conversation took place, nothing more will be reported.
    return (await finishCall(tx, services, locked, { endReason, endedAt, durationSeconds: 0, messages: [] })) ?? locked;
  });
  if (row.room_name && row.status !== before.status) {
    await services.livekit.rooms.deleteRoom(row.room_name).catch((err: unknown) => {
      // A room that was never created (a queued call), or LiveKit unreachable: the reaper closes what is left.
      services.log.debug({ err, call_id: callId }, 'room delete after stop failed');
    });
  }
  return row;
}

/**
 * Checks the voice and transcriber of the overrides against the catalogue, as for an agent, and fills their
 * defaults; the other override fields were validated by the schema.
 */
export function resolveOverrides(o: CallOverrides | undefined, agent: Pick<AgentRow, 'language' | 'responsiveness' | 'turn_taking' | 'transcriber'>): Record<string, unknown> {
  if (!o) return {};
  const problems: ValidationErrorItem[] = [];
  const out: Record<string, unknown> = { ...o };
  const at = (p: ValidationErrorItem): ValidationErrorItem => ({ ...p, loc: ['body', 'overrides', ...p.loc.slice(1)] });
  if (o.tts) {
    const found: ValidationErrorItem[] = [];
    out.tts = resolveTts(o.tts, found);
    problems.push(...found.map(at));
  }
  if (o.transcriber) {
    const found: ValidationErrorItem[] = [];
    // As on the agent: a transcriber without a language speaks the call's language (overridden or the agent's).
    out.transcriber = resolveTranscriber(o.transcriber, o.language ?? agent.language, found);
    problems.push(...found.map(at));
  }
  if (o.turn_taking || o.responsiveness !== undefined) {
    // As on an agent's update: a turn_taking merges over the defaults; responsiveness alone re-derives the delays.
    const responsiveness = { value: o.responsiveness ?? agent.responsiveness, given: o.responsiveness !== undefined };
    out.turn_taking = resolveTurnTaking(o.turn_taking, responsiveness, agent.turn_taking, problems, ['body', 'overrides', 'turn_taking']);
  }
  // The call's detection and transcriber, overridden or the agent's, must agree (detection `stt` needs Flux).
  detectionProblems((out.turn_taking as TurnTaking | undefined) ?? agent.turn_taking, (out.transcriber as TranscriberConfig | undefined) ?? agent.transcriber, { detection: o.turn_taking?.detection !== undefined }, problems, {
    turnTaking: ['body', 'overrides', 'turn_taking'],
    transcriber: ['body', 'overrides', 'transcriber'],
  });
  if (problems.length) throw new ValidationFailure(problems);
  return out;
}

/** The agent's behaviour fields (the keys of `agentBehaviour`), as the session config carries them. */
export function pickBehaviour(agent: AgentRow): Pick<AgentRow, keyof typeof agentBehaviour> {
  return Object.fromEntries((Object.keys(agentBehaviour) as (keyof typeof agentBehaviour)[]).map((k) => [k, agent[k]])) as Pick<AgentRow, keyof typeof agentBehaviour>;
}

/** Applies a web call's overrides over its agent (only the fields CallOverrides allows). */
export function withOverrides(agent: AgentRow, overrides: Record<string, unknown>): AgentRow {
  const out = { ...agent } as Record<string, unknown>;
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) out[k] = v;
  return out as unknown as AgentRow;
}

/**
 * Whether the worker listens for an answering machine. Outbound: the agent's `voicemail_detection` (after the
 * call's overrides). Inbound: the dialled number's `inbound_routing.voicemail_message`, which the call keeps as
 * its `voicemail_message` override (phone-numbers/inbound.ts): the number's message is the opt-in, whatever the
 * agent's flag says (docs/decisions/016-phone-numbers-and-inbound-calls.md, "Voicemail on inbound calls").
 */
function detectsVoicemail(call: CallRow, agent: AgentRow): boolean {
  if (call.type === 'outbound') return agent.voicemail_detection;
  if (call.type !== 'inbound') return false;
  const message = call.overrides.voicemail_message;
  return typeof message === 'string' && message.trim() !== '';
}

/** A tool as a session carries it: decrypted headers, the current signing secret, defaults filled. */
export function toolConfigOf(t: ToolForCall): ToolConfig {
  switch (t.type) {
    case 'function':
      return {
        type: 'function',
        name: t.name,
        description: t.description ?? '',
        parameters: t.parameters ?? { type: 'object', properties: {} },
        url: t.url!,
        method: t.method as 'POST',
        headers: t.headers,
        timeout_ms: t.timeout_ms ?? 5000,
        signing_secret: t.signing_secrets[0] ?? null,
      };
    case 'transfer_call':
      return {
        type: 'transfer_call',
        name: t.name,
        ...(t.description ? { description: t.description } : {}),
        destination: t.destination!,
        ...(t.transfer_mode === 'warm' ? { mode: 'warm' as const } : {}),
      };
    default:
      return { type: t.type, name: t.name, ...(t.description ? { description: t.description } : {}) };
  }
}

/** The tools of a model as they are now (an agent without versions). */
export async function toolConfigs(services: Services, db: Db, orgId: string, toolIds: string[]): Promise<ToolConfig[]> {
  return (await loadToolsForCall(db, services.secrets, orgId, toolIds)).map(toolConfigOf);
}

/** What a call runs of an agent: its fields, model settings and prompt, tools and knowledge bases. */
export interface AgentParts {
  agent: AgentRow;
  model: ModelSnapshot;
  tools: ToolConfig[];
  knowledgeBaseIds: string[];
}

/** An agent's parts from a version's snapshot (tools with their current secrets). */
export async function partsOfSnapshot(services: Services, db: Db, orgId: string, agentId: string, s: Snapshot): Promise<AgentParts> {
  const agent = { id: agentId, ...agentOfSnapshot(s), created_at: '', updated_at: '' };
  const tools = (await toolsOfSnapshot(db, services.secrets, orgId, s.tools)).map(toolConfigOf);
  return { agent, model: s.model, tools, knowledgeBaseIds: s.knowledge_bases.map((k) => k.id) };
}

/** An agent's parts as its rows are now: for an agent without versions (written to the database directly). */
async function liveParts(services: Services, db: Db, orgId: string, agentId: string): Promise<AgentParts | null> {
  const { agent, model } = await agentAndModelForCall(db, agentId);
  if (!agent || !model) return null;
  return {
    agent,
    model: { id: agent.llm_id, name: '', provider: model.provider, model: model.model, base_url: model.base_url, system_prompt: model.system_prompt, temperature: model.temperature, max_tokens: model.max_tokens, realtime: model.realtime },
    tools: await toolConfigs(services, db, orgId, model.tool_ids),
    knowledgeBaseIds: model.knowledge_base_ids,
  };
}

/** A squad member's parts: its published version (members follow the published version), or its rows as they are. */
export async function memberParts(services: Services, db: Db, orgId: string, agentId: string): Promise<AgentParts | null> {
  const published = await publishedSnapshot(db, agentId);
  return published ? partsOfSnapshot(services, db, orgId, agentId, published.snapshot) : liveParts(services, db, orgId, agentId);
}

/** GET /internal/v1/calls/{id}/config: everything a worker needs, resolved and decrypted. */
export async function resolveCallConfig(services: Services, db: Db, callId: string): Promise<CallConfig> {
  const call = await getCallById(db, callId);
  if (!call) throw notFound('Call');
  if (isFinal(call.status)) throw conflict('The call has already ended');
  // The version the call runs (a pin, the traffic split or the published one), recorded on the call at its first
  // fetch: a later publish or rollback does not reach a call in progress.
  const version = await versionForCall(db, call);
  const parts = version ? await partsOfSnapshot(services, db, call.org_id, call.agent_id, version.snapshot) : await liveParts(services, db, call.org_id, call.agent_id);
  if (!parts) throw notFound('Agent');
  const { model, tools } = parts;
  const agent = withOverrides(parts.agent, call.overrides);

  const variables = mergeVariables(agent.dynamic_variables ?? {}, call.variables ?? {});
  const prompt = interpolate(effectiveSystemPrompt(agent.job_description, model.system_prompt) ?? '', variables);
  const knowledge = await knowledgeConfigFor(db, call.org_id, parts.knowledgeBaseIds, services.config.KB_STUFF_MAX_TOKENS);
  const dataRetention = await retentionOfCall(db, call.id);
  const squad = await squadConfigFor(services, db, call, { behaviour: pickBehaviour, member: memberParts });
  return {
    call: {
      id: call.id,
      type: call.type,
      direction: call.direction,
      to_number: call.to_number,
      from_number: call.from_number,
      variables,
      metadata: call.metadata,
      voicemail_detection: detectsVoicemail(call, agent),
      ...(version ? { agent_version: version.version } : {}),
      // Outbound with a phone-menu goal: the worker navigates the menu before the conversation.
      ...(call.type === 'outbound' && call.ivr_goal ? { ivr: { goal: call.ivr_goal, max_menus: call.ivr_max_menus ?? IVR_DEFAULTS.max_menus } } : {}),
    },
    // Every behaviour field of the agent schema (schemas/agents.ts), so a field added there reaches the worker.
    agent: { id: agent.id, name: agent.name, ...pickBehaviour(agent) },
    prompt,
    llm: { provider: model.provider, model: model.model, base_url: model.base_url, temperature: model.temperature, max_tokens: model.max_tokens, realtime: model.realtime ?? null },
    tools,
    knowledge,
    provider_keys: await resolveProviderKeys(db, services.secrets, call.org_id),
    // `no_content` keeps no recording, whatever the agent or a web call's override says.
    recording:
      agent.enable_recording && dataRetention !== 'no_content'
        ? { enabled: true, upload_url: recordingUploadUrl(services, call.id) }
        : { enabled: false },
    data_retention: dataRetention,
    // Transfers (the worker's transfer_call tool) go where outbound calls may (shared/destination-policy.ts).
    destination_policy: await destinationPolicyFor(db, call.org_id, policyOptionsFor(carrierFor(services))),
    ...(squad ? { squad } : {}),
  };
}
