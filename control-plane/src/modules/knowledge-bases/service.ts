// Adding a source: the multipart form is read and checked (422 per field, 413 over the size limits), the
// source and its job are inserted with the pg-boss job in one transaction, and the caller polls the job.
import type { Context } from 'koa';
import type { Services } from '../../services.ts';
import type { Auth } from '../../auth/service.ts';
import type { Db } from '../../db/types.ts';
import { ValidationFailure } from '../../http/errors.ts';
import { readMultipart } from '../../http/multipart.ts';
import { compile, problems } from '../../http/validation.ts';
import { sendInTx } from '../../jobs/boss.ts';
import { writeAudit } from '../audit-events/queries.ts';
import { checkUrl, SsrfBlockedError, ssrfOptions } from '../../net/ssrf.ts';
import { AddSourceForm, AddSourceNewBaseForm, type AddSourceNewBaseForm as NewBaseForm } from '../../../../schemas/knowledge-bases.ts';
import type { ValidationErrorItem } from '../../../../schemas/errors.ts';
import { detectKind, FILE_KINDS, mimeOfKind } from './parse.ts';
import { insertKb, insertSourceAndJob, jobView, sourceView, type KbRow, type SourceWrite } from './queries.ts';
import { INGEST_QUEUE } from './jobs.ts';

// Multipart fields arrive as strings: the coercing validator turns "true" and "512" into their types.
const checkForm = compile(AddSourceForm, 'query');
const checkNewBaseForm = compile(AddSourceNewBaseForm, 'query');

export const POLL_MESSAGE = 'Ingestion runs in the background: poll GET /v1/knowledge-bases/{kb_id}/jobs/{job_id} until its status is succeeded or failed';

/** A URL source's longest form (the schema cannot say it: `source` carries whole texts for type `text`). */
const MAX_URL_LENGTH = 2048;
const excerpt = (t: string) => (t.length > 80 ? `${t.slice(0, 77).trimEnd()}...` : t).replace(/\s+/g, ' ');

/** Reads and validates the form; returns what to insert (and, for a new base, its settings). */
export async function readSourceForm(ctx: Context, services: Services, newBase: boolean): Promise<{ form: NewBaseForm; write: SourceWrite }> {
  const c = services.config;
  const body = await readMultipart(ctx, { maxFileBytes: c.KB_MAX_FILE_BYTES, maxFieldBytes: c.KB_MAX_TEXT_BYTES });
  const file = body.files[0];
  const form: Record<string, unknown> = { ...body.fields };
  if (file) {
    if (file.field !== 'file') throw new ValidationFailure([{ loc: ['body', file.field], msg: 'Only the "file" field may carry a file', type: 'extra_forbidden' }]);
    form.file = file.fileName;
  }
  const found = problems(newBase ? checkNewBaseForm : checkForm, form, 'body');
  if (found.length) throw new ValidationFailure(found);
  const f = form as NewBaseForm;
  const missing = (field: string, why: string): ValidationErrorItem => ({ loc: ['body', field], msg: `Field required ${why}`, type: 'missing', input: body.fields });
  const extra = (field: string): ValidationErrorItem => ({ loc: ['body', field], msg: `Not allowed with type "${f.type}"`, type: 'extra_forbidden', input: form[field] });
  const issues: ValidationErrorItem[] = [];
  const others = { url: ['text', 'file'], file: ['source', 'text'], text: ['file'] }[f.type];
  for (const o of others) if (form[o] !== undefined) issues.push(extra(o));
  let write: SourceWrite | null = null;
  if (f.type === 'url') {
    if (!f.source) issues.push(missing('source', 'for type "url"'));
    else if (f.source.length > MAX_URL_LENGTH) {
      issues.push({ loc: ['body', 'source'], msg: `String should have at most ${MAX_URL_LENGTH} characters`, type: 'string_too_long', input: f.source.slice(0, 64), ctx: { max_length: MAX_URL_LENGTH } });
    } else {
      try {
        const u = checkUrl(f.source, ssrfOptions(c));
        write = { type: 'url', source: u.toString(), file_name: '', mime_type: '', file_size: 0, payload: null };
      } catch (err) {
        const msg = err instanceof SsrfBlockedError ? `URL is not a publicly accessible http(s) URL: ${err.message}` : 'Not a valid URL';
        issues.push({ loc: ['body', 'source'], msg, type: 'url_not_public', input: f.source });
      }
    }
  } else if (f.type === 'text') {
    // The spec's form names `source` as the field; `text` stays an alias. Both at once must say the same.
    const text = f.source ?? f.text;
    if (f.source !== undefined && f.text !== undefined && f.source !== f.text) {
      issues.push({ loc: ['body', 'text'], msg: '`source` and `text` differ; send the text in one of them', type: 'value_error', input: excerpt(f.text) });
    } else if (!text?.trim()) issues.push(missing('source', 'for type "text"'));
    else {
      const data = Buffer.from(text, 'utf8');
      const name = f.file_name ?? 'text';
      write = { type: 'text', source: excerpt(text.trim()), file_name: name, mime_type: 'text/plain', file_size: data.length, payload: data };
    }
  } else {
    if (!file) issues.push(missing('file', 'for type "file"'));
    else {
      const kind = detectKind(file.fileName, file.mimeType, file.data);
      if (!kind) {
        issues.push({
          loc: ['body', 'file'],
          msg: `Unsupported file type; upload ${FILE_KINDS.map((k) => k.toUpperCase()).join(', ')} (UTF-8 for text formats)`,
          type: 'unsupported_file_type',
          input: { file_name: file.fileName, mime_type: file.mimeType },
          ctx: { supported: [...FILE_KINDS] },
        });
      } else if (!file.data.length) {
        issues.push({ loc: ['body', 'file'], msg: 'The file is empty', type: 'value_error', input: { file_name: file.fileName } });
      } else {
        write = { type: 'file', source: file.fileName, file_name: file.fileName, mime_type: mimeOfKind(kind), file_size: file.data.length, payload: file.data };
      }
    }
  }
  if (issues.length) throw new ValidationFailure(issues);
  return { form: f, write: write! };
}

export function defaultBaseName(w: SourceWrite): string {
  if (w.type === 'url') return new URL(w.source).host;
  if (w.type === 'file') return w.file_name.slice(0, 255);
  return 'Knowledge base';
}

/** Inserts the source and its job, and enqueues the job in the same transaction. */
export async function addSource(services: Services, auth: Auth, ctx: Context, kb: KbRow | null, form: NewBaseForm, write: SourceWrite) {
  return services.sql.begin(async (tx) => {
    let base = kb;
    if (!base) {
      base = await insertKb(tx, auth.orgId, {
        name: form.name ?? defaultBaseName(write),
        chunk_size: form.chunk_size ?? 512,
        multilingual: form.multilingual ?? false,
        language: form.language ?? 'english',
        mode: form.mode ?? 'retrieval',
      });
      await audit(tx, auth, ctx, 'knowledge_base.create', 'knowledge_base', base.id, { name: base.name });
    }
    const { source, job } = await insertSourceAndJob(tx, auth.orgId, base.id, write);
    await sendInTx(services.boss, tx, INGEST_QUEUE, { job_id: job.id }, { singletonKey: job.id });
    await audit(tx, auth, ctx, 'knowledge_source.create', 'knowledge_source', source.id, { kb_id: base.id, type: write.type, source: write.source });
    return { source: sourceView(source), job: jobView(job), message: POLL_MESSAGE.replace('{kb_id}', base.id).replace('{job_id}', job.id) };
  });
}

export async function audit(db: Db, auth: Auth, ctx: Context, action: string, resourceType: string, resourceId: string, details: Record<string, unknown>) {
  await writeAudit(db, {
    orgId: auth.orgId,
    actorType: auth.actorType,
    actorId: auth.actorId,
    requestId: ctx.state.requestId as string,
    ip: ctx.ip || null,
    action,
    resourceType,
    resourceId,
    details,
  });
}
