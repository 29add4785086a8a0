import { defineRoute, reply } from '../../http/route.ts';
import { conflict, notFound } from '../../http/errors.ts';
import {
  AddSourceForm,
  AddSourceNewBaseForm,
  AddSourceResult,
  CreateKnowledgeBase,
  JobParams,
  KbParams,
  KnowledgeBase,
  KnowledgeBaseList,
  KnowledgeBaseListQuery,
  KnowledgeJob,
  KnowledgeSource,
  KnowledgeSourceList,
  ReingestSourceResult,
  SourceParams,
  UpdateKnowledgeBase,
} from '../../../../schemas/knowledge-bases.ts';
import { deleteKb, deleteSource, getJob, getKb, getSource, insertKb, jobView, kbView, listKbs, listSources, queueReingest, setChunksConfig, sourcesOf, sourceView, tsConfigOf, updateKb } from './queries.ts';
import { addSource, POLL_MESSAGE, readSourceForm } from './service.ts';
import { sendInTx } from '../../jobs/boss.ts';
import { INGEST_QUEUE } from './jobs.ts';

const ADD_SOURCE_DOC =
  'multipart/form-data with `type`:\n' +
  '- `url` and `source`: a publicly accessible http(s) URL. Its site is crawled breadth first: same host only, ' +
  'robots.txt respected, the sitemap followed, at most KB_CRAWL_MAX_PAGES pages (default 50) within KB_CRAWL_MAX_DEPTH ' +
  'link hops (default 2), KB_CRAWL_TIMEOUT_MS per request (default 10 s), pages over KB_CRAWL_MAX_PAGE_BYTES (default ' +
  '2 MiB) or not HTML/plain text are left out. A private or local address is a 422 at ["body","source"].\n' +
  '- `file` and `file`: PDF, DOCX, HTML, Markdown, TXT or CSV up to KB_MAX_FILE_BYTES (default 10 MiB). A larger file is ' +
  'a **413** (`payload_too_large`); any other type a **422** at ["body","file"] with type `unsupported_file_type`.\n' +
  '- `text` and `text`: inline UTF-8 text (Markdown headings are kept) up to KB_MAX_TEXT_BYTES (default 2 MiB, 413 above).\n\n' +
  'Answers 201 `{source, job, message}` at once; ingestion runs in the background. The source goes `queued → processing ' +
  '→ ready | error` (`error_message` says what to do); poll `GET /v1/knowledge-bases/{kb_id}/jobs/{job_id}` for progress. ' +
  'A source whose tokens would exceed the organisation\'s `kb_token_budget` ends in `error` with nothing indexed.';

export const knowledgeBaseRoutes = [
  defineRoute({
    method: 'get',
    path: '/knowledge-bases',
    operationId: 'listKnowledgeBases',
    tag: 'knowledge-bases',
    summary: 'List knowledge bases',
    description: 'Newest first, each with its sources.',
    query: KnowledgeBaseListQuery,
    responses: { 200: { description: 'Knowledge bases of the organisation', schema: KnowledgeBaseList } },
    handler: async ({ query, auth, db }) => {
      const { items, total } = await listKbs(db, auth.orgId, query);
      const sources = await sourcesOf(db, items.map((k) => k.id));
      return { items: items.map((k) => kbView(k, sources.get(k.id)!)), total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/knowledge-bases',
    operationId: 'createKnowledgeBase',
    tag: 'knowledge-bases',
    summary: 'Create an empty knowledge base',
    description:
      'Defaults: `chunk_size` 512 tokens, `multilingual` false, `language` english, `mode` retrieval. Modes: `retrieval` searches ' +
      'the base before each reply and adds the best chunks (within KB_RETRIEVAL_MAX_TOKENS) to that turn; `stuff` puts the whole ' +
      'base in the system prompt, as long as the bases of the model fit in KB_STUFF_MAX_TOKENS (else they are searched per turn). ' +
      'Bases are also created by adding a source without a base (`POST /v1/knowledge-bases/sources`).',
    body: CreateKnowledgeBase,
    status: 201,
    responses: { 201: { description: 'The knowledge base', schema: KnowledgeBase } },
    handler: async ({ body, auth, db, audit }) => {
      const kb = await insertKb(db, auth.orgId, {
        name: body.name,
        chunk_size: body.chunk_size ?? 512,
        multilingual: body.multilingual ?? false,
        language: body.language ?? 'english',
        mode: body.mode ?? 'retrieval',
      });
      await audit({ action: 'knowledge_base.create', resourceType: 'knowledge_base', resourceId: kb.id, details: { name: kb.name } });
      return kbView(kb, []);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/knowledge-bases/sources',
    operationId: 'createKnowledgeBaseFromSource',
    tag: 'knowledge-bases',
    summary: 'Add a source to a new knowledge base',
    description: `Creates a knowledge base (settings as form fields; name defaults to the URL host or file name) and adds the source to it.\n\n${ADD_SOURCE_DOC}`,
    body: AddSourceNewBaseForm,
    bodyType: 'multipart',
    transaction: false,
    status: 201,
    responses: { 201: { description: 'Source accepted; poll the job', schema: AddSourceResult }, 413: { description: 'File or text over the size limit' } },
    handler: async ({ auth, services, ctx }) => {
      const { form, write } = await readSourceForm(ctx, services, true);
      return addSource(services, auth, ctx, null, form, write);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/knowledge-bases/:kb_id',
    operationId: 'getKnowledgeBase',
    tag: 'knowledge-bases',
    summary: 'Get a knowledge base',
    params: KbParams,
    responses: { 200: { description: 'The knowledge base with its sources', schema: KnowledgeBase } },
    handler: async ({ params, auth, db }) => {
      const kb = await getKb(db, auth.orgId, params.kb_id);
      if (!kb) throw notFound('Knowledge base');
      return kbView(kb, (await sourcesOf(db, [kb.id])).get(kb.id)!);
    },
  }),
  defineRoute({
    method: 'patch',
    path: '/knowledge-bases/:kb_id',
    operationId: 'updateKnowledgeBase',
    tag: 'knowledge-bases',
    summary: 'Update a knowledge base',
    description: 'Absent fields keep their value. `chunk_size` applies to sources added afterwards; `multilingual` and `language` re-index the chunks at once.',
    params: KbParams,
    body: UpdateKnowledgeBase,
    responses: { 200: { description: 'The updated knowledge base', schema: KnowledgeBase } },
    handler: async ({ params, body, auth, db, audit }) => {
      const cur = await getKb(db, auth.orgId, params.kb_id, { forUpdate: true });
      if (!cur) throw notFound('Knowledge base');
      const next = {
        name: body.name ?? cur.name,
        chunk_size: body.chunk_size ?? cur.chunk_size,
        multilingual: body.multilingual ?? cur.multilingual,
        language: body.language ?? cur.language,
        mode: body.mode ?? cur.mode,
      };
      const kb = await updateKb(db, auth.orgId, cur.id, next);
      if (tsConfigOf(kb) !== tsConfigOf(cur)) await setChunksConfig(db, kb.id, tsConfigOf(kb));
      await audit({ action: 'knowledge_base.update', resourceType: 'knowledge_base', resourceId: kb.id, details: { fields: Object.keys(body) } });
      return kbView(kb, (await sourcesOf(db, [kb.id])).get(kb.id)!);
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/knowledge-bases/:kb_id',
    operationId: 'deleteKnowledgeBase',
    tag: 'knowledge-bases',
    summary: 'Delete a knowledge base',
    description: 'Deletes the base with its sources, chunks and jobs, gives its tokens back to the budget and unlinks it from every LLM model.',
    params: KbParams,
    status: 204,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ params, auth, db, audit }) => {
      const cur = await getKb(db, auth.orgId, params.kb_id, { forUpdate: true });
      if (!cur) throw notFound('Knowledge base');
      await deleteKb(db, auth.orgId, cur.id);
      await audit({ action: 'knowledge_base.delete', resourceType: 'knowledge_base', resourceId: cur.id, details: { name: cur.name } });
      return reply(204);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/knowledge-bases/:kb_id/sources',
    operationId: 'addKnowledgeSource',
    tag: 'knowledge-bases',
    summary: 'Add a source to a knowledge base',
    description: ADD_SOURCE_DOC,
    params: KbParams,
    body: AddSourceForm,
    bodyType: 'multipart',
    transaction: false,
    status: 201,
    responses: { 201: { description: 'Source accepted; poll the job', schema: AddSourceResult }, 413: { description: 'File or text over the size limit' } },
    handler: async ({ params, auth, services, ctx, db }) => {
      // The base first: another organisation's id is a 404 whatever the body.
      const kb = await getKb(db, auth.orgId, params.kb_id);
      if (!kb) throw notFound('Knowledge base');
      const { form, write } = await readSourceForm(ctx, services, false);
      return addSource(services, auth, ctx, kb, form, write);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/knowledge-bases/:kb_id/sources',
    operationId: 'listKnowledgeSources',
    tag: 'knowledge-bases',
    summary: 'List the sources of a knowledge base',
    description: 'Newest first.',
    params: KbParams,
    query: KnowledgeBaseListQuery,
    responses: { 200: { description: 'Sources', schema: KnowledgeSourceList } },
    handler: async ({ params, query, auth, db }) => {
      const kb = await getKb(db, auth.orgId, params.kb_id);
      if (!kb) throw notFound('Knowledge base');
      const { items, total } = await listSources(db, kb.id, query);
      return { items: items.map(sourceView), total, limit: query.limit, offset: query.offset };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/knowledge-bases/:kb_id/sources/:source_id',
    operationId: 'getKnowledgeSource',
    tag: 'knowledge-bases',
    summary: 'Get a knowledge source',
    params: SourceParams,
    responses: { 200: { description: 'The source', schema: KnowledgeSource } },
    handler: async ({ params, auth, db }) => {
      const s = await getSource(db, auth.orgId, params.kb_id, params.source_id);
      if (!s) throw notFound('Knowledge source');
      return sourceView(s);
    },
  }),
  defineRoute({
    method: 'post',
    path: '/knowledge-bases/:kb_id/sources/:source_id/reingest',
    operationId: 'reingestKnowledgeSource',
    tag: 'knowledge-bases',
    summary: 'Re-ingest a knowledge source',
    description:
      'Reads the source again in place: same `source_id`, a new job to poll. A URL source is crawled again (with the same ' +
      'limits and address checks as when it was added); a file or text source is parsed again from the content stored when it ' +
      'was added. The base\'s current `chunk_size` applies. The source goes back to `queued → processing`, and its previous ' +
      'chunks stay searched (and counted in the budget) until the new ones replace them in one transaction when the job ' +
      'succeeds. If it fails, the source is `error` with the reason and still has its previous chunks (`chunk_count`). ' +
      '**409** while the source is `queued` or `processing`; **409** when a file or text source has no stored content.',
    params: SourceParams,
    status: 202,
    responses: { 202: { description: 'Re-ingestion queued; poll the job', schema: ReingestSourceResult } },
    handler: async ({ params, auth, db, audit, services }) => {
      // Locked: two concurrent requests see each other's `queued`, so only one job is queued.
      const s = await getSource(db, auth.orgId, params.kb_id, params.source_id, { forUpdate: true });
      if (!s) throw notFound('Knowledge source');
      if (s.status === 'queued' || s.status === 'processing') {
        throw conflict(`This source is already being ingested (status ${s.status}); wait for its job to finish, then re-ingest`, { status: s.status });
      }
      const queued = await queueReingest(db, s);
      if (!queued) throw conflict('The content of this source is not stored; add the file or text again as a new source');
      await sendInTx(services.boss, db, INGEST_QUEUE, { job_id: queued.job.id }, { singletonKey: queued.job.id });
      await audit({
        action: 'knowledge_source.reingest',
        resourceType: 'knowledge_source',
        resourceId: s.id,
        details: { kb_id: s.kb_id, type: s.type, job_id: queued.job.id, previous_status: s.status },
      });
      return {
        source: sourceView(queued.source),
        job: jobView(queued.job),
        message: POLL_MESSAGE.replace('{kb_id}', s.kb_id).replace('{job_id}', queued.job.id),
      };
    },
  }),
  defineRoute({
    method: 'delete',
    path: '/knowledge-bases/:kb_id/sources/:source_id',
    operationId: 'deleteKnowledgeSource',
    tag: 'knowledge-bases',
    summary: 'Delete a knowledge source',
    description: 'Removes the source and its chunks at once and gives its tokens back to the budget; a job still running for it writes nothing.',
    params: SourceParams,
    status: 204,
    responses: { 204: { description: 'Deleted' } },
    handler: async ({ params, auth, db, audit }) => {
      const s = await getSource(db, auth.orgId, params.kb_id, params.source_id, { forUpdate: true });
      if (!s) throw notFound('Knowledge source');
      await deleteSource(db, s.kb_id, s.id);
      await audit({ action: 'knowledge_source.delete', resourceType: 'knowledge_source', resourceId: s.id, details: { kb_id: s.kb_id, tokens: s.token_count } });
      return reply(204);
    },
  }),
  defineRoute({
    method: 'get',
    path: '/knowledge-bases/:kb_id/jobs/:job_id',
    operationId: 'getKnowledgeJob',
    tag: 'knowledge-bases',
    summary: 'Get an ingestion job',
    description:
      'Status (`queued → running → succeeded | failed`; an attempt that will be retried returns to `queued`), progress (pages ' +
      'found, fetched, skipped, failed; chunks and tokens), timings of the last attempt, and the error.',
    params: JobParams,
    responses: { 200: { description: 'The job', schema: KnowledgeJob } },
    handler: async ({ params, auth, db }) => {
      const j = await getJob(db, auth.orgId, params.kb_id, params.job_id);
      if (!j) throw notFound('Ingestion job');
      return jobView(j);
    },
  }),
];
