// Creating, changing, pausing, resuming and canceling campaigns. The contacts are checked row by row before
// anything is written (contacts.ts); the campaign, its contacts, its first scheduler tick and its audit event
// commit in one transaction. The scheduler (scheduler.ts) does the calling.
import { randomUUID } from 'node:crypto';
import type { Services } from '../../services.ts';
import type { Auth } from '../../auth/service.ts';
import type { Db } from '../../db/types.ts';
import { conflict, notFound, ValidationFailure } from '../../http/errors.ts';
import { referenceError } from '../../http/references.ts';
import { checkUrl, SsrfBlockedError, ssrfOptions } from '../../net/ssrf.ts';
import { inTx } from '../../jobs/boss.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import type { Campaign, CampaignPacing, CampaignSchedule, CampaignSettings, CampaignStopOn, ContactState, ImportProblem, UpdateCampaign } from '../../../../schemas/campaigns.ts';
import { CONTACT_STATES } from '../../../../schemas/campaigns.ts';
import { getAgent } from '../agents/queries.ts';
import { writeAudit } from '../audit-events/queries.ts';
import { getCallById } from '../calls/queries.ts';
import { callerNumber } from '../calls/queries-outbound.ts';
import { callLimitsOf } from '../calls/queries-admission.ts';
import { failCall, isFinal } from '../calls/lifecycle.ts';
import { policyOptionsFor } from '../calls/destinations.ts';
import { carrierFor } from '../phone-numbers/carriers/index.ts';
import { destinationPolicyFor } from '../workspace/destination-policy.ts';
import { emitEvent } from '../events/emit.ts';
import { listedAmong } from '../do-not-call/queries.ts';
import { checkContacts, MAX_LISTED_PROBLEMS, normaliseAll, type RawContact } from './contacts.ts';
import { DEFAULT_WINDOWS, minuteOf } from './zones.ts';
import { DEFAULT_RETRY, retryRules } from './results.ts';
import {
  closeOpenContacts,
  contactCounts,
  countActiveCampaigns,
  getCampaign,
  insertCampaign,
  insertContacts,
  lockCampaignCreation,
  queuedCallIds,
  updateCampaign,
  type CampaignRow,
  type StoredSchedule,
} from './queries.ts';
import { checkPin } from '../agent-versions/call-version.ts';

export const TICK_QUEUE = 'campaigns.tick';

export interface RequestMeta {
  requestId: string;
  ip: string | null;
}

const DEFAULT_PACING = { calls_per_minute: 10, max_concurrent: 5 };
const DEFAULT_STOP_WINDOW = 50;

/** Asks for a scheduler tick of the campaign `delaySeconds` from now, in `db`'s transaction (one queued per campaign). */
export async function wakeScheduler(services: Services, db: Db, campaignId: string, delaySeconds = 0): Promise<void> {
  await services.boss.upsert(TICK_QUEUE, { campaign_id: campaignId }, {
    singletonKey: campaignId,
    startAfter: new Date(Date.now() + Math.max(0, delaySeconds) * 1000),
    db: inTx(db),
  } as never);
}

// ---- Views ----------------------------------------------------------------------------------------------------

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function campaignView(row: CampaignRow, counts: Record<string, number>): Campaign {
  const byState = Object.fromEntries(CONTACT_STATES.map((s) => [s, counts[s] ?? 0])) as Record<ContactState, number>;
  return {
    id: row.id,
    name: row.name,
    agent_id: row.agent_id,
    agent_version: row.agent_version ?? null,
    from_numbers: row.from_numbers,
    status: row.status,
    pause_reason: row.pause_reason as Campaign['pause_reason'],
    schedule: { start_at: row.schedule.start_at, end_at: row.schedule.end_at, windows: row.schedule.windows, holidays: row.schedule.holidays },
    pacing: row.pacing,
    retry: row.retry,
    stop_on: row.stop_on,
    webhook_url: row.webhook_url,
    variables: row.variables,
    metadata: row.metadata,
    contacts: { total: Object.values(byState).reduce((a, b) => a + b, 0), ...byState },
    attempts: row.dials,
    started_at: iso(row.started_at),
    paused_at: iso(row.paused_at),
    completed_at: iso(row.completed_at),
    canceled_at: iso(row.canceled_at),
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

export async function viewOf(db: Db, row: CampaignRow): Promise<Campaign> {
  return campaignView(row, (await contactCounts(db, [row.id])).get(row.id)!);
}

// ---- Settings -------------------------------------------------------------------------------------------------

/** The schedule as stored, with its defaults; every problem goes to `problems` (locs under `at`). */
function resolveSchedule(services: Services, given: CampaignSchedule | undefined, base: StoredSchedule | null, problems: ValidationErrorItem[], at: (string | number)[], now: Date): StoredSchedule {
  const s: StoredSchedule = {
    start_at: given?.start_at !== undefined ? given.start_at : (base?.start_at ?? null),
    end_at: given?.end_at !== undefined ? given.end_at : (base?.end_at ?? null),
    windows: given?.windows ?? base?.windows ?? DEFAULT_WINDOWS,
    holidays: given?.holidays ?? base?.holidays ?? [],
  };
  s.windows.forEach((w, i) => {
    if (minuteOf(w.start) >= minuteOf(w.end)) {
      problems.push({ loc: [...at, 'windows', i, 'end'], msg: 'A window ends after it starts (split a window across midnight into two)', type: 'window_invalid', input: w });
    }
  });
  const horizonDays = services.config.OUTBOUND_SCHEDULE_HORIZON_DAYS;
  // Only a start being set now is checked against the clock: a stored one may lie in the past by now.
  if (given?.start_at && Date.parse(given.start_at) > now.getTime() + horizonDays * 86400_000) {
    problems.push({ loc: [...at, 'start_at'], msg: `Input should be at most ${horizonDays} days ahead`, type: 'datetime_horizon', input: given.start_at, ctx: { horizon_days: horizonDays } });
  }
  if (given?.end_at) {
    if (Date.parse(given.end_at) <= now.getTime()) problems.push({ loc: [...at, 'end_at'], msg: 'Input should be in the future', type: 'datetime_future', input: given.end_at });
    else if (s.start_at && Date.parse(given.end_at) <= Date.parse(s.start_at)) {
      problems.push({ loc: [...at, 'end_at'], msg: 'end_at should be after start_at', type: 'datetime_order', input: given.end_at });
    }
  }
  return s;
}

function resolvePacing(services: Services, given: CampaignPacing | undefined, base: CampaignRow['pacing'] | null, orgMaxConcurrent: number, problems: ValidationErrorItem[], at: (string | number)[]) {
  const p = {
    calls_per_minute: given?.calls_per_minute ?? base?.calls_per_minute ?? DEFAULT_PACING.calls_per_minute,
    max_concurrent: given?.max_concurrent ?? base?.max_concurrent ?? Math.min(DEFAULT_PACING.max_concurrent, orgMaxConcurrent),
  };
  const maxRate = services.config.CAMPAIGN_MAX_CALLS_PER_MINUTE;
  if (p.calls_per_minute > maxRate) {
    problems.push({ loc: [...at, 'calls_per_minute'], msg: `Input should be at most ${maxRate} (CAMPAIGN_MAX_CALLS_PER_MINUTE)`, type: 'less_than_equal', input: p.calls_per_minute, ctx: { le: maxRate } });
  }
  if (p.max_concurrent > orgMaxConcurrent) {
    problems.push({
      loc: [...at, 'max_concurrent'],
      msg: `Input should be at most ${orgMaxConcurrent}, the organisation's max_concurrent_calls`,
      type: 'less_than_equal',
      input: p.max_concurrent,
      ctx: { le: orgMaxConcurrent, limit: 'max_concurrent_calls' },
    });
  }
  return p;
}

const resolveStopOn = (s: CampaignStopOn | null | undefined, base: CampaignRow['stop_on']): CampaignRow['stop_on'] =>
  s === undefined ? base : s === null ? null : { failure_rate: s.failure_rate, window: s.window ?? DEFAULT_STOP_WINDOW, results: s.results ?? ['failed'] };

// ---- Create -------------------------------------------------------------------------------------------------

export interface CreateInput {
  settings: CampaignSettings;
  rows: RawContact[];
  /** Variable columns in the upload's order (the export writes them back). */
  columns: string[];
  /** Problems already found while reading the rows (CSV rows that could not be read). */
  readProblems: ImportProblem[];
}

export async function createCampaign(services: Services, auth: Auth, input: CreateInput, meta: RequestMeta) {
  const { settings } = input;
  const now = new Date();
  const problems: ValidationErrorItem[] = [];
  if (settings.webhook_url) {
    try {
      checkUrl(settings.webhook_url, ssrfOptions(services.config));
    } catch (err) {
      if (!(err instanceof SsrfBlockedError)) throw err;
      problems.push({ loc: ['body', 'webhook_url'], msg: `URL is not allowed: ${err.message}`, type: 'url_not_allowed', input: settings.webhook_url });
    }
  }
  if (settings.from_number && settings.from_numbers) {
    problems.push({ loc: ['body', 'from_numbers'], msg: 'Give from_number or from_numbers, not both', type: 'value_error', input: settings.from_numbers });
  }
  const schedule = resolveSchedule(services, settings.schedule, null, problems, ['body', 'schedule'], now);
  if (problems.length) throw new ValidationFailure(problems);

  const carrier = carrierFor(services);
  const id = randomUUID();
  return services.sql.begin(async (tx) => {
    // At most CAMPAIGN_MAX_ACTIVE_PER_ORG campaigns not yet over, per org; under a per-org lock, so concurrent
    // creations cannot pass it together (issue 50, low).
    await lockCampaignCreation(tx, auth.orgId);
    const active = await countActiveCampaigns(tx, auth.orgId);
    const maxActive = services.config.CAMPAIGN_MAX_ACTIVE_PER_ORG;
    if (active >= maxActive) {
      throw conflict(`At most ${maxActive} campaigns may be scheduled, running or paused at once: cancel or finish one first`, {
        reason: 'campaign_limit',
        limit: 'campaign_max_active_per_org',
        limit_value: maxActive,
      });
    }
    const agent = await getAgent(tx, auth.orgId, settings.agent_id);
    if (!agent) throw new ValidationFailure([referenceError(['body', 'agent_id'], 'agent', settings.agent_id)]);
    await checkPin(tx, auth.orgId, agent.id, settings.agent_version, ['body', 'agent_version']);
    const found: ValidationErrorItem[] = [];
    const fromNumbers = await resolveFromNumbers(tx, auth.orgId, agent.id, settings, found);
    const limits = (await callLimitsOf(tx, auth.orgId))!;
    const pacing = resolvePacing(services, settings.pacing, null, limits.max_concurrent_calls, found, ['body', 'pacing']);
    if (found.length) throw new ValidationFailure(found);

    const policy = await destinationPolicyFor(tx, auth.orgId, policyOptionsFor(carrier));
    const defaultCountry = settings.default_country ?? null;
    const numbers = await normaliseAll(input.rows, defaultCountry, policy.fictional_numbers);
    const doNotCall = await listedAmong(tx, auth.orgId, [...new Set(numbers)]);
    const checked = await checkContacts(input.rows, { defaultCountry, policy, doNotCall });
    const allProblems = [...input.readProblems, ...checked.problems].sort((a, b) => a.row - b.row);

    const startsLater = schedule.start_at !== null && Date.parse(schedule.start_at) > now.getTime();
    const row = await insertCampaign(tx, {
      id,
      org_id: auth.orgId,
      name: settings.name,
      agent_id: agent.id,
      agent_version: settings.agent_version ?? null,
      from_numbers: fromNumbers,
      status: startsLater ? 'scheduled' : 'running',
      schedule,
      pacing,
      retry: retryRules(settings.retry, DEFAULT_RETRY),
      stop_on: resolveStopOn(settings.stop_on, null),
      webhook_url: settings.webhook_url ?? null,
      variables: settings.variables ?? {},
      metadata: settings.metadata ?? {},
      variable_columns: input.columns,
      zone_keys: [...new Set(checked.contacts.map((c) => c.zone_key).filter((k): k is string => !!k))],
      started_at: startsLater ? null : now,
      created_at: now,
    });
    await insertContacts(tx, id, auth.orgId, checked.contacts, now);
    const accepted = checked.contacts.filter((c) => c.state === 'pending').length;
    if (!startsLater) await emitStarted(tx, row, checked.contacts.length);
    await wakeScheduler(services, tx, id, startsLater ? Math.min(60, (Date.parse(schedule.start_at!) - now.getTime()) / 1000) : 0);
    await writeAudit(tx, {
      orgId: auth.orgId,
      actorType: auth.actorType,
      actorId: auth.actorId,
      action: 'campaign.create',
      resourceType: 'campaign',
      resourceId: id,
      requestId: meta.requestId,
      ip: meta.ip,
      details: { name: row.name, agent_id: agent.id, rows: input.rows.length + input.readProblems.length, accepted },
    });
    return {
      ...(await viewOf(tx, row)),
      import: {
        rows: input.rows.length + input.readProblems.length,
        accepted,
        skipped: input.rows.length + input.readProblems.length - accepted,
        problems: allProblems.slice(0, MAX_LISTED_PROBLEMS),
        problems_truncated: allProblems.length > MAX_LISTED_PROBLEMS,
      },
    };
  });
}

/** The caller IDs: each must be one of the org's numbers that can place calls; none given, the agent's number. */
async function resolveFromNumbers(db: Db, orgId: string, agentId: string, s: CampaignSettings, problems: ValidationErrorItem[]): Promise<string[]> {
  const given = s.from_numbers ?? (s.from_number ? [s.from_number] : []);
  if (!given.length) {
    const own = await callerNumber(db, orgId, { agentId });
    if (!own) {
      problems.push({
        loc: ['body', 'from_number'],
        msg: 'from_number is required: the agent has no active phone number to call from. Give one of your numbers, or assign one to the agent',
        type: 'missing',
      });
      return [];
    }
    return [own.phone_number];
  }
  for (const [i, n] of given.entries()) {
    if (!(await callerNumber(db, orgId, { number: n }))) {
      problems.push({
        loc: s.from_numbers ? ['body', 'from_numbers', i] : ['body', 'from_number'],
        msg: 'Must be one of your active phone numbers (GET /v1/phone-numbers)',
        type: 'phone_number_not_owned',
        input: n,
      });
    }
  }
  return given;
}

// ---- Events -----------------------------------------------------------------------------------------------------

export async function emitStarted(db: Db, c: CampaignRow, contacts: number): Promise<void> {
  await emitEvent(db, {
    orgId: c.org_id,
    type: 'campaign.started',
    agentId: c.agent_id,
    webhookUrl: c.webhook_url,
    payload: { campaign_id: c.id, agent_id: c.agent_id, name: c.name, contacts },
  });
}

export async function emitPaused(db: Db, c: CampaignRow, reason: string, extra: { failure_rate?: number; window?: number } = {}): Promise<void> {
  await emitEvent(db, {
    orgId: c.org_id,
    type: 'campaign.paused',
    agentId: c.agent_id,
    webhookUrl: c.webhook_url,
    payload: { campaign_id: c.id, agent_id: c.agent_id, name: c.name, reason, ...extra },
  });
}

export async function emitCompleted(db: Db, c: CampaignRow): Promise<void> {
  const counts = (await contactCounts(db, [c.id])).get(c.id)!;
  await emitEvent(db, {
    orgId: c.org_id,
    type: 'campaign.completed',
    agentId: c.agent_id,
    webhookUrl: c.webhook_url,
    payload: { campaign_id: c.id, agent_id: c.agent_id, name: c.name, contacts: Object.fromEntries(CONTACT_STATES.map((s) => [s, counts[s] ?? 0])) },
  });
}

// ---- Update, pause, resume, cancel ------------------------------------------------------------------------------

const FINAL = new Set(['completed', 'canceled']);

export async function updateCampaignSettings(services: Services, auth: Auth, db: Db, id: string, body: UpdateCampaign, audit: (e: { action: string; resourceType: string; resourceId: string; details?: Record<string, unknown> }) => Promise<void>) {
  const cur = await getCampaign(db, auth.orgId, id, { lock: true });
  if (!cur) throw notFound('Campaign');
  const fields = Object.keys(body);
  if (!fields.length) return viewOf(db, cur);
  if (FINAL.has(cur.status)) throw conflict(`The campaign is ${cur.status}; it can no longer change`, { status: cur.status });
  const now = new Date();
  const problems: ValidationErrorItem[] = [];
  const schedule = body.schedule ? resolveSchedule(services, body.schedule, cur.schedule, problems, ['body', 'schedule'], now) : undefined;
  const limits = (await callLimitsOf(db, auth.orgId))!;
  const pacing = body.pacing ? resolvePacing(services, body.pacing, cur.pacing, limits.max_concurrent_calls, problems, ['body', 'pacing']) : undefined;
  if (problems.length) throw new ValidationFailure(problems);

  let row = await updateCampaign(
    db,
    cur.id,
    {
      ...(body.name !== undefined ? { name: body.name } : {}),
      ...(schedule ? { schedule } : {}),
      ...(pacing ? { pacing } : {}),
      ...(body.retry ? { retry: retryRules(body.retry, cur.retry) } : {}),
      ...(body.stop_on !== undefined ? { stop_on: resolveStopOn(body.stop_on, cur.stop_on) } : {}),
    },
    now,
  );
  if (body.status === 'paused' && (row.status === 'running' || row.status === 'scheduled')) {
    row = await updateCampaign(db, row.id, { status: 'paused', pause_reason: 'manual', paused_at: now }, now);
    await emitPaused(db, row, 'manual');
  } else if (body.status === 'running' && row.status === 'paused') {
    // The failure window starts over: the attempts that tripped the rule must not pause it again at once.
    row = await updateCampaign(db, row.id, { status: row.started_at ? 'running' : 'scheduled', pause_reason: null, paused_at: null, recent_results: [], pace_next_at: null }, now);
  }
  await audit({ action: 'campaign.update', resourceType: 'campaign', resourceId: row.id, details: { fields, ...(body.status ? { status: body.status } : {}) } });
  await wakeScheduler(services, db, row.id);
  return viewOf(db, row);
}

/**
 * Cancels: no more attempts. Contacts not yet called (or waiting for a retry) become `canceled`, and calls
 * still queued for the dial are stopped (`canceled`); calls ringing or connected go on to their end.
 */
export async function cancelCampaign(services: Services, auth: Auth, id: string, meta: RequestMeta) {
  return services.sql.begin(async (tx) => {
    const cur = await getCampaign(tx, auth.orgId, id, { lock: true });
    if (!cur) throw notFound('Campaign');
    if (cur.status === 'canceled') return viewOf(tx, cur);
    if (cur.status === 'completed') throw conflict('The campaign is completed; there is nothing left to cancel', { status: cur.status });
    const now = new Date();
    const row = await updateCampaign(tx, cur.id, { status: 'canceled', canceled_at: now, pause_reason: null }, now);
    const closed = await closeOpenContacts(tx, cur.id, 'canceled', now);
    let stopped = 0;
    for (const callId of await queuedCallIds(tx, cur.id)) {
      const call = await getCallById(tx, callId, { lock: true });
      if (!call || isFinal(call.status) || call.status !== 'queued') continue;
      // Never dialled: it fails `canceled`, as POST /v1/calls/{id}/stop ends a queued call.
      await failCall(tx, call, 'canceled', 'canceled');
      stopped++;
    }
    await writeAudit(tx, {
      orgId: auth.orgId,
      actorType: auth.actorType,
      actorId: auth.actorId,
      action: 'campaign.cancel',
      resourceType: 'campaign',
      resourceId: cur.id,
      requestId: meta.requestId,
      ip: meta.ip,
      details: { contacts_canceled: closed, calls_stopped: stopped },
    });
    // The scheduler records how the stopped and the live calls ended.
    await wakeScheduler(services, tx, cur.id);
    return viewOf(tx, row);
  });
}
