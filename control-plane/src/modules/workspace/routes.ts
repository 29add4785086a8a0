// The caller's organisation: name and settings are the customer's to change; limits only the operator's.
import { defineRoute } from '../../http/route.ts';
import { invalidField, ValidationFailure } from '../../http/errors.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { UpdateWorkspace, Workspace } from '../../../../schemas/workspace.ts';
import { checkReferences, type Reference } from '../../http/references.ts';
import { getWorkspace, updateWorkspace, type WorkspaceRow } from './queries.ts';
import { getCountries } from 'libphonenumber-js/max';
import { DEFAULT_BLOCKED_NUMBER_TYPES, NON_GEOGRAPHIC } from '../../../../shared/destination-policy.ts';
import { destinationCeilingFor } from './destination-policy.ts';

const COUNTRIES = new Set<string>([...getCountries(), NON_GEOGRAPHIC]);

/** The canonical IANA name (`europe/paris` -> `Europe/Paris`, `US/Eastern` -> `America/New_York`), or null. */
export function canonicalTimeZone(tz: string): string | null {
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat('en-US', { timeZone: tz }).resolvedOptions().timeZone;
  } catch {
    return null;
  }
  // Intl also takes UTC offsets ("+01:00"), which are not zone names and know no daylight saving time.
  return /^[A-Za-z]/.test(resolved) ? resolved : null;
}

function present(row: WorkspaceRow) {
  return {
    id: row.id,
    name: row.name,
    settings: {
      timezone: row.timezone,
      default_webhook_id: row.default_webhook_id,
      default_agent_id: row.default_agent_id,
      destination_policy: {
        allowed_countries: row.destination_allowed_countries,
        blocked_number_types: row.destination_blocked_number_types ?? [...DEFAULT_BLOCKED_NUMBER_TYPES],
        allowed_sip_hosts: row.destination_allowed_sip_hosts,
      },
      data_retention: row.data_retention,
      retain_days: row.retain_days,
    },
    limits: {
      max_calls_per_day: row.max_calls_per_day,
      kb_token_budget: row.kb_token_budget,
      max_concurrent_calls: row.max_concurrent_calls,
      daily_spend_cap_cents: row.daily_spend_cap_cents,
      destination_extra_countries: row.destination_extra_countries,
      destination_unblockable_types: row.destination_unblockable_types,
    },
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export const workspaceRoutes = [
  defineRoute({
    method: 'get',
    path: '/workspace',
    operationId: 'getWorkspace',
    tag: 'workspace',
    summary: 'Get the workspace',
    description: "The caller's organisation: its name, settings and limits.",
    responses: { 200: { description: 'The workspace', schema: Workspace } },
    handler: async ({ auth, db }) => present(await getWorkspace(db, auth.orgId)),
  }),
  defineRoute({
    method: 'patch',
    path: '/workspace',
    operationId: 'updateWorkspace',
    tag: 'workspace',
    summary: 'Update the workspace',
    description:
      'Renames the organisation or changes settings; only the settings given change, and null clears a default. ' +
      '`timezone` is an IANA name, stored in its canonical form. `destination_policy` says where outbound calls and ' +
      'transfers may go: `allowed_countries` (null: the countries of your own numbers), `blocked_number_types` ' +
      '(null: premium_rate, shared_cost, satellite, unknown) and `allowed_sip_hosts` for sip: transfers. The policy may ' +
      'only narrow: allowing a country beyond those of your own numbers, or unblocking a default-blocked type, is a ' +
      "422 (`operator_limit`) unless the platform operator has granted it (`limits.destination_extra_countries`, " +
      '`limits.destination_unblockable_types`). ' +
      '`data_retention` (`everything`, `redact_pii`, `no_content`) says what calls keep of the conversation (an agent ' +
      'may override it) and `retain_days` how long their content is kept. `limits` ' +
      'are read-only here (422): the platform operator sets them with `npm run admin -- set-limits`.',
    body: UpdateWorkspace,
    responses: { 200: { description: 'The updated workspace', schema: Workspace } },
    handler: async ({ body, auth, db, audit }) => {
      if (body.limits !== undefined) {
        throw invalidField(['body', 'limits'], 'Limits are read-only; the platform operator changes them', 'read_only', body.limits);
      }
      const s = body.settings ?? {};
      const problems: ValidationErrorItem[] = [];
      let timezone: string | undefined;
      if (s.timezone !== undefined) {
        timezone = canonicalTimeZone(s.timezone) ?? undefined;
        if (!timezone) {
          problems.push({
            type: 'timezone',
            loc: ['body', 'settings', 'timezone'],
            msg: 'Input should be an IANA time zone name, such as "Europe/Paris" or "UTC"',
            input: s.timezone,
          });
        }
      }
      const policy = s.destination_policy;
      for (const [i, c] of (policy?.allowed_countries ?? []).entries()) {
        if (!COUNTRIES.has(c)) {
          problems.push({
            type: 'country_code',
            loc: ['body', 'settings', 'destination_policy', 'allowed_countries', i],
            msg: 'Input should be an ISO 3166-1 alpha-2 country code with phone numbers, such as "US" or "GB", or 001 for global services',
            input: c,
          });
        }
      }
      if (policy?.allowed_countries || policy?.blocked_number_types) problems.push(...(await beyondCeiling(db, auth.orgId, policy)));
      const refs: Reference[] = [];
      if (s.default_webhook_id) refs.push({ loc: ['body', 'settings', 'default_webhook_id'], table: 'webhooks', what: 'webhook', ids: s.default_webhook_id });
      if (s.default_agent_id) refs.push({ loc: ['body', 'settings', 'default_agent_id'], table: 'agents', what: 'agent', ids: s.default_agent_id });
      try {
        await checkReferences(db, auth.orgId, refs);
      } catch (err) {
        // Reported together with the time zone, as every validation error is.
        if (!(err instanceof ValidationFailure)) throw err;
        problems.push(...err.detail);
      }
      if (problems.length) throw new ValidationFailure(problems);

      const row = await updateWorkspace(db, auth.orgId, {
        name: body.name,
        timezone,
        defaultWebhookId: s.default_webhook_id,
        defaultAgentId: s.default_agent_id,
        allowedCountries: policy?.allowed_countries,
        blockedNumberTypes: policy?.blocked_number_types,
        allowedSipHosts: policy?.allowed_sip_hosts?.map((h) => h.toLowerCase()),
        dataRetention: s.data_retention,
        retainDays: s.retain_days,
      });
      await audit({
        action: 'workspace.update',
        resourceType: 'org',
        resourceId: auth.orgId,
        details: { ...(body.name !== undefined ? { name: body.name } : {}), ...(body.settings ? { settings: { ...s, ...(timezone ? { timezone } : {}) } } : {}) },
      });
      return present(row);
    },
  }),
];

/**
 * Widening past the operator's ceiling (issue 50): each country beyond the org's own numbers' and the operator's
 * extra ones, and each default-blocked type the operator has not made unblockable, as a 422 item.
 */
async function beyondCeiling(
  db: Parameters<typeof destinationCeilingFor>[0],
  orgId: string,
  policy: { allowed_countries?: string[] | null | undefined; blocked_number_types?: string[] | null | undefined },
): Promise<ValidationErrorItem[]> {
  const ceiling = await destinationCeilingFor(db, orgId);
  const problems: ValidationErrorItem[] = [];
  const allowed = [...ceiling.countries].sort().join(', ') || 'none';
  for (const [i, c] of (policy.allowed_countries ?? []).entries()) {
    if (COUNTRIES.has(c) && !ceiling.countries.has(c)) {
      problems.push({
        type: 'operator_limit',
        loc: ['body', 'settings', 'destination_policy', 'allowed_countries', i],
        msg: `Calls to ${c} are beyond this workspace's limits (the countries of its own numbers and those the platform operator allows: ${allowed}); the operator can allow more`,
        input: c,
        ctx: { allowed_countries: [...ceiling.countries].sort() },
      });
    }
  }
  if (policy.blocked_number_types) {
    const missing = ceiling.alwaysBlocked.filter((t) => !policy.blocked_number_types!.includes(t));
    if (missing.length) {
      problems.push({
        type: 'operator_limit',
        loc: ['body', 'settings', 'destination_policy', 'blocked_number_types'],
        msg: `Only the platform operator can unblock ${missing.join(', ')}: keep them in the list`,
        input: policy.blocked_number_types,
        ctx: { always_blocked: ceiling.alwaysBlocked },
      });
    }
  }
  return problems;
}
