// Knowledge bases, their sources and ingestion jobs (tag `knowledge-bases`).
import { Type, DateTime, Nullable, Strict, StringEnum, Uuid, ListEnvelope, Pagination, type Static } from './common.ts';

export const KB_MODES = ['stuff', 'retrieval'] as const;
export type KbMode = (typeof KB_MODES)[number];

/** PostgreSQL text-search configurations a base may use (stemming and stop words); `simple` splits on words only. */
export const KB_LANGUAGES = [
  'simple', 'arabic', 'armenian', 'basque', 'catalan', 'danish', 'dutch', 'english', 'finnish', 'french', 'german', 'greek',
  'hindi', 'hungarian', 'indonesian', 'irish', 'italian', 'lithuanian', 'nepali', 'norwegian', 'portuguese', 'romanian',
  'russian', 'serbian', 'spanish', 'swedish', 'tamil', 'turkish', 'yiddish',
] as const;

export const SOURCE_TYPES = ['url', 'file', 'text'] as const;
export const SOURCE_STATUSES = ['queued', 'processing', 'ready', 'error'] as const;
export const JOB_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;

const Mode = StringEnum(KB_MODES, {
  description:
    '`retrieval` (default): before each reply the agent searches the base and adds the best chunks to that turn. ' +
    '`stuff`: the whole base goes into the system prompt once, for small bases; when the bases linked to a model ' +
    'exceed the stuffing limit (KB_STUFF_MAX_TOKENS, default 8000 tokens), the call searches them per turn instead.',
});
const ChunkSize = Type.Integer({ minimum: 64, maximum: 4096, description: 'Target chunk length in tokens (cl100k_base); default 512' });
const Language = StringEnum(KB_LANGUAGES, {
  description: 'Text-search configuration (stemming, stop words) of the base; default `english`. Ignored (`simple`) when `multilingual` is true.',
});

export const KnowledgeSource = Type.Object(
  {
    source_id: Uuid(),
    kb_id: Uuid(),
    type: StringEnum(SOURCE_TYPES),
    source: Type.String({ description: 'The URL, the file name, or the first characters of the text' }),
    chunk_count: Type.Integer({ minimum: 0 }),
    status: StringEnum(SOURCE_STATUSES, { description: 'queued → processing → ready | error' }),
    error_message: Nullable(Type.String({ description: 'What went wrong and what to do about it; set when status is `error`' })),
    created_at: DateTime(),
    file_name: Type.String({ description: 'Uploaded file name; empty for URL and text sources' }),
    mime_type: Type.String({ description: 'Detected content type; empty for URL sources' }),
    file_size: Type.Integer({ minimum: 0, description: 'Bytes uploaded (file or text); 0 for URL sources' }),
    token_count: Type.Integer({ minimum: 0, default: 0 }),
  },
  { title: 'KnowledgeSource', additionalProperties: false },
);
export type KnowledgeSource = Static<typeof KnowledgeSource>;

export const KnowledgeBase = Type.Object(
  {
    kb_id: Uuid(),
    name: Type.String(),
    chunk_size: Type.Integer(),
    multilingual: Type.Boolean(),
    language: Type.String(),
    created_at: DateTime(),
    updated_at: DateTime(),
    total_tokens: Type.Integer({ minimum: 0, default: 0, description: 'Tokens of the ready sources; counted against the organisation\'s kb_token_budget' }),
    mode: Type.String({ description: '`stuff` or `retrieval`' }),
    sources: Type.Array(KnowledgeSource),
  },
  { title: 'KnowledgeBase', additionalProperties: false },
);
export type KnowledgeBase = Static<typeof KnowledgeBase>;

export const KnowledgeBaseList = ListEnvelope(KnowledgeBase, 'KnowledgeBase');
export const KnowledgeBaseListQuery = Pagination({ default: 50, maximum: 100 });
export const KnowledgeSourceList = ListEnvelope(KnowledgeSource, 'KnowledgeSource');

export const CreateKnowledgeBase = Strict(
  {
    name: Type.String({ minLength: 1, maxLength: 255 }),
    chunk_size: Type.Optional(ChunkSize),
    multilingual: Type.Optional(Type.Boolean({ description: 'Index with the `simple` configuration (no stemming), for content in several languages; default false' })),
    language: Type.Optional(Language),
    mode: Type.Optional(Mode),
  },
  { title: 'CreateKnowledgeBase', examples: [{ name: 'Help centre', mode: 'retrieval', chunk_size: 512 }] },
);
export type CreateKnowledgeBase = Static<typeof CreateKnowledgeBase>;

export const UpdateKnowledgeBase = Strict(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    chunk_size: Type.Optional(ChunkSize),
    multilingual: Type.Optional(Type.Boolean()),
    language: Type.Optional(Language),
    mode: Type.Optional(Mode),
  },
  { title: 'UpdateKnowledgeBase', description: '`chunk_size` applies to sources added afterwards; `multilingual` and `language` re-index the existing chunks at once.' },
);
export type UpdateKnowledgeBase = Static<typeof UpdateKnowledgeBase>;

const sourceFields = {
  type: StringEnum(SOURCE_TYPES, { description: '`url`: crawl a public site from `source`; `file`: the uploaded `file`; `text`: the inline text in `source` (or `text`)' }),
  source: Type.Optional(
    Type.String({
      minLength: 1,
      description:
        'For `url`: a publicly accessible http(s) URL (at most 2048 characters) whose same-site linked pages are crawled. For `text`: the content (UTF-8)',
    }),
  ),
  text: Type.Optional(Type.String({ minLength: 1, description: 'For `text`: the content, as an alias of `source` (send one; both must be equal if both are sent)' })),
  file: Type.Optional(Type.String({ format: 'binary', description: 'For `file`: PDF, DOCX, HTML, Markdown, TXT or CSV' })),
  file_name: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Name for a `text` source (default `text`)' })),
};

export const AddSourceForm = Strict(sourceFields, {
  title: 'AddKnowledgeSource',
  description:
    'multipart/form-data. `source` for types `url` (the URL) and `text` (the text; `text` is accepted as an alias), or `file` ' +
    'for type `file`. ' +
    'Files: PDF, DOCX, HTML, Markdown, TXT, CSV up to KB_MAX_FILE_BYTES (default 10 MiB): a larger file is a 413, ' +
    'another type a 422 at ["body","file"].',
});
export type AddSourceForm = Static<typeof AddSourceForm>;

export const AddSourceNewBaseForm = Strict(
  {
    ...sourceFields,
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Name of the new base (default: the URL host, file name or "Knowledge base")' })),
    chunk_size: Type.Optional(ChunkSize),
    multilingual: Type.Optional(Type.Boolean()),
    language: Type.Optional(Language),
    mode: Type.Optional(Mode),
  },
  { title: 'AddKnowledgeSourceNewBase', description: 'As AddKnowledgeSource, plus the settings of the base it creates.' },
);
export type AddSourceNewBaseForm = Static<typeof AddSourceNewBaseForm>;

export const KnowledgeJob = Type.Object(
  {
    job_id: Uuid(),
    kb_id: Uuid(),
    source_id: Uuid(),
    status: StringEnum(JOB_STATUSES, { description: 'queued → running → succeeded | failed (a failed attempt that will be retried goes back to queued)' }),
    attempts: Type.Integer({ minimum: 0 }),
    progress: Type.Object(
      {
        pages_found: Type.Integer({ description: 'URLs discovered (start URL, sitemap, links); 1 for a file or text' }),
        pages_fetched: Type.Integer(),
        pages_skipped: Type.Integer({ description: 'Not fetched or not used: robots.txt, other site, duplicate, not HTML, over the page limit' }),
        pages_failed: Type.Integer({ description: 'Timeouts, HTTP errors, too large, blocked addresses, redirect loops' }),
        chunks: Type.Integer(),
        tokens: Type.Integer(),
      },
      { additionalProperties: false },
    ),
    timings: Type.Object(
      {
        created_at: DateTime(),
        started_at: Nullable(DateTime()),
        finished_at: Nullable(DateTime()),
        duration_ms: Nullable(Type.Integer({ description: 'finished_at - started_at of the last attempt' })),
      },
      { additionalProperties: false },
    ),
    error: Nullable(Type.String()),
  },
  { title: 'KnowledgeJob', additionalProperties: false },
);
export type KnowledgeJob = Static<typeof KnowledgeJob>;

export const AddSourceResult = Type.Object(
  {
    source: KnowledgeSource,
    job: KnowledgeJob,
    message: Type.String(),
  },
  { title: 'AddKnowledgeSourceResult', additionalProperties: false },
);

export const ReingestSourceResult = Type.Object(
  {
    source: KnowledgeSource,
    job: KnowledgeJob,
    message: Type.String(),
  },
  { title: 'ReingestKnowledgeSourceResult', additionalProperties: false },
);

export const KbParams = Strict({ kb_id: Uuid() });
export const SourceParams = Strict({ kb_id: Uuid(), source_id: Uuid() });
export const JobParams = Strict({ kb_id: Uuid(), job_id: Uuid() });
