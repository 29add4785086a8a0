// /v1/campaigns: create (JSON, or a CSV upload as multipart/form-data), list, get, pause/resume/edit, cancel,
// the contacts (paginated, by state) and the CSV export.
import { Readable } from 'node:stream';
import type { Context } from 'koa';
import { defineRoute, reply } from '../../http/route.ts';
import { notFound, ValidationFailure } from '../../http/errors.ts';
import { readMultipart } from '../../http/multipart.ts';
import { compile, problems } from '../../http/validation.ts';
import type { Services } from '../../services.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import {
  Campaign,
  CampaignContactList,
  CampaignContactQuery,
  CampaignCreated,
  CampaignList,
  CampaignListQuery,
  CampaignParams,
  CampaignSettings,
  CreateCampaign,
  CreateCampaignForm,
  UpdateCampaign,
} from '../../../../schemas/campaigns.ts';
import { readCsv, readJsonContacts } from './contacts.ts';
import { exportCsv } from './export.ts';
import { campaignView, cancelCampaign, createCampaign, updateCampaignSettings, type CreateInput } from './service.ts';
import { contactCounts, getCampaign, listCampaigns, listContacts } from './queries.ts';

const meta = (ctx: Context) => ({ requestId: ctx.state.requestId as string, ip: ctx.ip || null });

const checkSettings = compile(CampaignSettings, 'body');
const JSON_FIELDS = ['schedule', 'pacing', 'retry', 'stop_on', 'variables', 'metadata', 'agent_version'] as const;
/** Text fields of the form other than the JSON ones: short values (numbers, ids, a URL). */
const MAX_FIELD_BYTES = 256 * 1024;

/** The multipart form: its fields as the JSON body's settings (objects given as JSON text) and the CSV file. */
async function readForm(ctx: Context, services: Services): Promise<CreateInput> {
  const form = await readMultipart(ctx, { maxFileBytes: services.config.CAMPAIGN_UPLOAD_MAX_BYTES, maxFieldBytes: MAX_FIELD_BYTES });
  const found: ValidationErrorItem[] = [];
  const file = form.files[0];
  if (file && file.field !== 'file') found.push({ loc: ['body', file.field], msg: 'Only the "file" field may carry a file', type: 'extra_forbidden' });
  if (!file) found.push({ loc: ['body', 'file'], msg: 'Field required: the contacts as a CSV file', type: 'missing' });
  if ('contacts' in form.fields) found.push({ loc: ['body', 'contacts'], msg: 'A form sends its contacts as the CSV "file"', type: 'extra_forbidden' });
  const settings: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(form.fields)) {
    if (k === 'contacts') continue;
    if ((JSON_FIELDS as readonly string[]).includes(k)) {
      try {
        settings[k] = JSON.parse(v);
      } catch {
        found.push({ loc: ['body', k], msg: `"${k}" must be JSON`, type: 'json_invalid', input: v.slice(0, 200) });
      }
    } else if (k === 'from_numbers') {
      settings[k] = v.split(',').map((n) => n.trim()).filter(Boolean);
    } else settings[k] = v;
  }
  if (found.length) throw new ValidationFailure(found);
  const invalid = problems(checkSettings, settings, 'body');
  if (invalid.length) throw new ValidationFailure(invalid);
  const read = await readCsv(file!.data, services.config.CAMPAIGN_MAX_CONTACTS);
  return { settings: settings as CampaignSettings, rows: read.rows, columns: read.columns, readProblems: read.problems };
}

export const campaignRoutes = [
  defineRoute({
    method: 'post',
    path: '/campaigns',
    operationId: 'createCampaign',
    tag: 'calls',
    summary: 'Create a campaign',
    description:
      'Calls a list of contacts with one agent, within each callee\'s calling windows, at the set pace, with retries. ' +
      'Send JSON with `contacts`, or `multipart/form-data` with the same settings as fields (objects as JSON text, ' +
      '`from_numbers` comma-separated) and the contacts as a CSV `file` (a header row with `to_number`, optionally ' +
      '`timezone`, and any other columns as variables). Each row is checked: an invalid number, one the workspace\'s ' +
      'destination policy refuses, a duplicate, a number on the do-not-call list or an unknown time zone is skipped ' +
      'and reported in `import.problems` with its row; the rest are called. More than CAMPAIGN_MAX_CONTACTS rows is a ' +
      '422 naming the rows over the limit; an upload over CAMPAIGN_UPLOAD_MAX_BYTES is a 413. The campaign starts at ' +
      '`schedule.start_at` (default: at once). Each attempt is an outbound call with this `campaign_id`, counted ' +
      'against the organisation\'s limits like any other.',
    body: CreateCampaign,
    bodyType: 'json-or-multipart',
    formBody: CreateCampaignForm,
    bodyLimit: (services) => services.config.CAMPAIGN_UPLOAD_MAX_BYTES,
    transaction: false,
    status: 201,
    responses: { 201: { description: 'The campaign, with the report of its import', schema: CampaignCreated }, 413: { description: 'The upload is over CAMPAIGN_UPLOAD_MAX_BYTES' } },
    handler: async ({ body, auth, services, ctx }) => {
      let input: CreateInput;
      if (typeof ctx.is('multipart/form-data') === 'string') input = await readForm(ctx, services);
      else {
        const { contacts, ...settings } = body;
        const read = readJsonContacts(contacts, services.config.CAMPAIGN_MAX_CONTACTS);
        input = { settings, rows: read.rows, columns: read.columns, readProblems: [] };
      }
      return createCampaign(services, auth, input, meta(ctx));
    },
  }),
  defineRoute({
    method: 'get',
    path: '/campaigns',
    operationId: 'listCampaigns',
    tag: 'calls',
    summary: 'List campaigns',
    description: 'Newest first, with the contacts of each by state.',
    query: CampaignListQuery,
    responses: { 200: { description: 'Campaigns', schema: CampaignList } },
    handler: async ({ query, auth, db }) => {
      const { rows, total } = await listCampaigns(db, auth.orgId, query);
      const counts = await contactCounts(db, rows.map((r) => r.id));
      return { items: rows.map((r) => campaignView(r, counts.get(r.id)!)), total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/campaigns/:campaign_id',
    operationId: 'getCampaign',
    tag: 'calls',
    summary: 'Get a campaign',
    description: 'Its settings, status and the live report: contacts by state and the attempts placed.',
    params: CampaignParams,
    responses: { 200: { description: 'The campaign', schema: Campaign } },
    handler: async ({ params, auth, db }) => {
      const row = await getCampaign(db, auth.orgId, params.campaign_id);
      if (!row) throw notFound('Campaign');
      return campaignView(row, (await contactCounts(db, [row.id])).get(row.id)!);
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/campaigns/:campaign_id',
    operationId: 'updateCampaign',
    tag: 'calls',
    summary: 'Pause, resume or edit a campaign',
    description:
      '`status: "paused"` stops new calls (calls in progress go on; `campaign.paused` with reason `manual`); ' +
      '`status: "running"` resumes a paused campaign, whatever paused it. `schedule`, `pacing`, `retry` and `stop_on` ' +
      'replace the given fields and apply from the next call. A completed or canceled campaign answers 409.',
    params: CampaignParams,
    body: UpdateCampaign,
    responses: { 200: { description: 'The campaign', schema: Campaign } },
    handler: async ({ params, body, auth, db, audit, services }) => updateCampaignSettings(services, auth, db, params.campaign_id, body, audit),
  }),
  defineRoute({
    method: 'post',
    path: '/campaigns/:campaign_id/cancel',
    operationId: 'cancelCampaign',
    tag: 'calls',
    summary: 'Cancel a campaign',
    description:
      'No more attempts: contacts not called yet, or waiting for a retry, become `canceled`, and attempts still queued ' +
      'for the dial are stopped (`canceled`); calls ringing or connected go on to their end. Canceling a canceled ' +
      'campaign answers it as it is; a completed one answers 409.',
    params: CampaignParams,
    transaction: false,
    responses: { 200: { description: 'The campaign', schema: Campaign } },
    handler: async ({ params, auth, services, ctx }) => cancelCampaign(services, auth, params.campaign_id, meta(ctx)),
  }),
  defineRoute({
    method: 'get',
    path: '/campaigns/:campaign_id/contacts',
    operationId: 'listCampaignContacts',
    tag: 'calls',
    summary: "List a campaign's contacts",
    description: 'In row order, filtered by `state`, each with its attempts (call ids) and the outcome of its last call.',
    params: CampaignParams,
    query: CampaignContactQuery,
    responses: { 200: { description: 'Contacts', schema: CampaignContactList } },
    handler: async ({ params, query, auth, db }) => {
      const c = await getCampaign(db, auth.orgId, params.campaign_id);
      if (!c) throw notFound('Campaign');
      const { rows, total } = await listContacts(db, c.id, query);
      return {
        items: rows.map((r) => ({
          id: r.id,
          campaign_id: r.campaign_id,
          row: r.row_number,
          to_number: r.to_number,
          timezone: r.timezone ?? r.zone_key,
          state: r.state,
          skip_reason: r.skip_reason,
          attempts: r.attempts,
          last_result: r.last_result,
          next_attempt_at: r.next_attempt_at?.toISOString() ?? null,
          call_ids: r.call_ids,
          outcome: r.outcome,
          variables: r.variables,
          updated_at: r.updated_at.toISOString(),
        })),
        total,
        limit: query.limit,
        offset: query.offset,
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/campaigns/:campaign_id/export.csv',
    operationId: 'exportCampaign',
    tag: 'calls',
    summary: 'Export a campaign as CSV',
    description:
      'One row per contact in row order: `row`, `to_number`, `timezone`, `state`, `skip_reason`, `attempts`, ' +
      '`last_result`, `outcome`, `call_ids` and `attempt_results` (each attempt, `;`-separated, first to last), ' +
      '`first_attempt_at`, `last_attempt_at`, then the upload\'s variable columns. Cells a spreadsheet would run as ' +
      'a formula start with an apostrophe.',
    params: CampaignParams,
    responses: { 200: { description: 'The CSV', contentType: 'text/csv', schema: { type: 'string' } as never } },
    handler: async ({ params, auth, services }) => {
      const c = await getCampaign(services.sql, auth.orgId, params.campaign_id);
      if (!c) throw notFound('Campaign');
      return reply(200, Readable.from(exportCsv(services.sql, c)), {
        'content-type': 'text/csv; charset=utf-8',
        'content-disposition': `attachment; filename="campaign-${c.id}.csv"`,
        'cache-control': 'no-store',
      });
    },
  }),
];
