// The caller's organisation: name and settings are the customer's to change; limits only the operator's.
import { defineRoute } from '../../http/route.ts';
import { invalidField, ValidationFailure } from '../../http/errors.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { UpdateWorkspace, Workspace } from '../../../../schemas/workspace.ts';
import { checkReferences, type Reference } from '../../http/references.ts';
import { getWorkspace, updateWorkspace, type WorkspaceRow } from './queries.ts';

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
    },
    limits: {
      max_calls_per_day: row.max_calls_per_day,
      kb_token_budget: row.kb_token_budget,
      max_concurrent_calls: row.max_concurrent_calls,
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
      '`timezone` is an IANA name, stored in its canonical form. `limits` are read-only here (422): the platform ' +
      'operator sets them with `npm run admin -- set-limits`.',
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
