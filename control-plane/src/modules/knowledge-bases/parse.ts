// Documents to text sections ({heading, text}), each format through a well-kept parser:
//   HTML: Readability on linkedom (main content; navigation, boilerplate and scripts dropped);
//   DOCX: mammoth to HTML; Markdown: marked to HTML; PDF: unpdf (PDF.js), a section per page;
//   CSV: csv-parse, a paragraph per row ("column: value; ..."); TXT as is.
// HTML of every origin is then walked once, so headings become the context of the text under them.
// Every format runs under ParseLimits (checked before the expensive step where the format allows it); the
// whole of it runs in a separate process (parse-sandbox.ts) with caps on memory and time.
import { parseHTML } from 'linkedom';
import { Readability } from '@mozilla/readability';
import { readZipDirectory, ZipFormatError } from './zip-directory.ts';

export interface Section {
  /** Heading path, e.g. "Billing › Refunds"; '' before the first heading. */
  heading: string;
  text: string;
}

export interface ParsedDocument {
  title: string;
  sections: Section[];
}

export const FILE_KINDS = ['pdf', 'docx', 'html', 'markdown', 'txt', 'csv'] as const;
export type FileKind = (typeof FILE_KINDS)[number];

const KIND_MIME: Record<FileKind, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  html: 'text/html',
  markdown: 'text/markdown',
  txt: 'text/plain',
  csv: 'text/csv',
};
export const mimeOfKind = (k: FileKind) => KIND_MIME[k];

const EXT: Record<string, FileKind> = {
  pdf: 'pdf', docx: 'docx', html: 'html', htm: 'html', xhtml: 'html', md: 'markdown', markdown: 'markdown', mdown: 'markdown',
  txt: 'txt', text: 'txt', csv: 'csv',
};
const MIME: Record<string, FileKind> = {
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/plain': 'txt',
  'text/csv': 'csv',
  'application/csv': 'csv',
};

/**
 * The kind of an upload from its content (PDF and ZIP signatures), its name and its declared type; null when
 * unsupported. A `.docx` must be a ZIP, a `.pdf` must start with %PDF, and text kinds must be valid UTF-8.
 */
export function detectKind(fileName: string, mimeType: string, data: Buffer): FileKind | null {
  const ext = /\.([a-z0-9]+)$/i.exec(fileName)?.[1]?.toLowerCase() ?? '';
  const declared = EXT[ext] ?? MIME[mimeType.split(';')[0]!.trim().toLowerCase()] ?? null;
  const isPdf = data.subarray(0, 5).toString('latin1') === '%PDF-';
  const isZip = data.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04]));
  if (isPdf) return declared === null || declared === 'pdf' ? 'pdf' : null;
  if (declared === 'pdf') return null;
  if (declared === 'docx') return isZip ? 'docx' : null;
  if (isZip || !declared) return null;
  return isUtf8(data) ? declared : null;
}

function isUtf8(data: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(data);
    return !data.includes(0);
  } catch {
    return false;
  }
}

/** What one document may cost to parse (see KB_MAX_* in config.ts). */
export interface ParseLimits {
  /** Sum of the sizes a DOCX's ZIP directory declares for its entries. */
  maxUnzippedBytes: number;
  maxZipEntries: number;
  maxPdfPages: number;
  /** csv-parse's max_record_size: one record (the header included), in characters. */
  maxCsvRecordBytes: number;
  /** Characters of text extracted from one document. */
  maxTextChars: number;
}

export const DEFAULT_PARSE_LIMITS: ParseLimits = {
  maxUnzippedBytes: 200 * 1024 * 1024,
  maxZipEntries: 10_000,
  maxPdfPages: 2000,
  maxCsvRecordBytes: 128 * 1024,
  maxTextChars: 5_000_000,
};

/** A document over one of the limits: the message says which, for the source's `error`. */
export class ParseLimitError extends Error {
  override name = 'ParseLimitError';
}

const mb = (n: number) => `${Math.round((n / 1048576) * 10) / 10} MB`;

/** Refuses a DOCX whose entries would unpack to more than the limit, from its ZIP directory alone. */
export function checkZipSize(data: Buffer, limits: ParseLimits): void {
  let entries;
  try {
    entries = readZipDirectory(data, limits.maxZipEntries);
  } catch (err) {
    if (err instanceof ZipFormatError) throw new ParseLimitError(`the DOCX archive was refused: ${err.message}`);
    throw err;
  }
  const total = entries.reduce((n, e) => n + e.uncompressedSize, 0);
  if (total > limits.maxUnzippedBytes) {
    throw new ParseLimitError(`the DOCX would unpack to ${mb(total)}, more than the limit of ${mb(limits.maxUnzippedBytes)}`);
  }
}

export async function parseFile(kind: FileKind, data: Buffer, fileName: string, limits: ParseLimits = DEFAULT_PARSE_LIMITS): Promise<ParsedDocument> {
  const doc = await parseKind(kind, data, fileName, limits);
  const chars = doc.sections.reduce((n, s) => n + s.heading.length + s.text.length, 0);
  if (chars > limits.maxTextChars) {
    throw new ParseLimitError(`the document holds ${chars} characters of text, more than the limit of ${limits.maxTextChars}`);
  }
  return doc;
}

async function parseKind(kind: FileKind, data: Buffer, fileName: string, limits: ParseLimits): Promise<ParsedDocument> {
  const title = fileName;
  switch (kind) {
    case 'pdf': {
      const { extractText, getDocumentProxy } = await import('unpdf');
      const pdf = await getDocumentProxy(new Uint8Array(data));
      try {
        // The page count comes from the page tree, before any page is read.
        if (pdf.numPages > limits.maxPdfPages) {
          throw new ParseLimitError(`the PDF has ${pdf.numPages} pages, more than the limit of ${limits.maxPdfPages}`);
        }
        const { text } = await extractText(pdf, { mergePages: false });
        return { title, sections: text.map((t, i) => ({ heading: `Page ${i + 1}`, text: normaliseText(t) })).filter((s) => s.text) };
      } finally {
        await pdf.destroy?.();
      }
    }
    case 'docx': {
      checkZipSize(data, limits);
      const mammoth = (await import('mammoth')).default;
      // Images are never read (their text is not ours to index): mammoth would otherwise inline each as base64.
      const { value } = await mammoth.convertToHtml({ buffer: data }, { convertImage: mammoth.images.imgElement(async () => ({ src: '' })) });
      return { title, sections: htmlSections(value) };
    }
    case 'markdown': {
      const { marked } = await import('marked');
      const html = await marked.parse(data.toString('utf8'), { async: true });
      return { title, sections: htmlSections(html) };
    }
    case 'html':
      return htmlDocument(data.toString('utf8'), fileName);
    case 'csv': {
      const { parse } = await import('csv-parse/sync');
      let rows: Record<string, string>[];
      try {
        rows = parse(data, { columns: true, skip_empty_lines: true, relax_column_count: true, bom: true, trim: true, max_record_size: limits.maxCsvRecordBytes });
      } catch (err) {
        if ((err as { code?: string }).code === 'CSV_MAX_RECORD_SIZE') {
          throw new ParseLimitError(`a CSV record is longer than the limit of ${limits.maxCsvRecordBytes} characters`);
        }
        throw err;
      }
      const text = rows
        .map((r) => Object.entries(r).filter(([, v]) => v !== '' && v != null).map(([k, v]) => `${k}: ${v}`).join('; '))
        .filter(Boolean)
        .join('\n\n');
      return { title, sections: text ? [{ heading: '', text }] : [] };
    }
    case 'txt': {
      const text = normaliseText(data.toString('utf8'));
      return { title, sections: text ? [{ heading: '', text }] : [] };
    }
  }
}

/** A web page or HTML file: its main content (Readability), else its body without page furniture. */
export function htmlDocument(html: string, fallbackTitle = ''): ParsedDocument {
  const { document } = parseHTML(html);
  const docTitle = document.querySelector('title')?.textContent?.trim() || fallbackTitle;
  let article: { title?: string | null; content?: string | null } | null = null;
  try {
    // Readability changes the document it reads: give it a copy.
    article = new Readability(parseHTML(html).document as never, { charThreshold: 200 }).parse();
  } catch {
    article = null;
  }
  let sections = article?.content ? htmlSections(article.content) : [];
  // Readability drops the page's first heading into `title`; put it back as the context of the leading text.
  if (sections.length && article?.title) {
    sections = sections.map((s) => (s.heading ? s : { ...s, heading: article.title! }));
  }
  if (!sections.length) sections = htmlSections(document.querySelector('body')?.innerHTML ?? html);
  return { title: article?.title?.trim() || docTitle, sections };
}

const SKIP = new Set(['script', 'style', 'noscript', 'template', 'svg', 'nav', 'footer', 'header', 'aside', 'form', 'button', 'iframe', 'object', 'select', 'menu']);
const BLOCK = new Set([
  'p', 'div', 'section', 'article', 'main', 'ul', 'ol', 'li', 'pre', 'blockquote', 'table', 'thead', 'tbody', 'tr', 'td', 'th',
  'dl', 'dt', 'dd', 'figure', 'figcaption', 'br', 'hr', 'address', 'details', 'summary',
]);

/** Walks HTML once: headings open sections (with their parents as context), blocks end paragraphs. */
export function htmlSections(html: string): Section[] {
  const { document } = parseHTML(`<!doctype html><html><body>${html}</body></html>`);
  const sections: Section[] = [];
  const headings: string[] = [];
  let paragraphs: string[] = [];
  let buf = '';
  const flushParagraph = () => {
    const t = buf.replace(/\s+/g, ' ').trim();
    if (t) paragraphs.push(t);
    buf = '';
  };
  const flushSection = () => {
    flushParagraph();
    if (paragraphs.length) sections.push({ heading: headings.filter(Boolean).join(' › '), text: paragraphs.join('\n\n') });
    paragraphs = [];
  };
  const walk = (node: any): void => {
    if (node.nodeType === 3) {
      buf += node.textContent;
      return;
    }
    if (node.nodeType !== 1) return;
    const tag = String(node.tagName).toLowerCase();
    if (SKIP.has(tag) || node.getAttribute?.('hidden') != null || node.getAttribute?.('aria-hidden') === 'true') return;
    const level = /^h([1-6])$/.exec(tag);
    if (level) {
      flushSection();
      const n = Number(level[1]);
      headings.length = n - 1;
      headings[n - 1] = (node.textContent ?? '').replace(/\s+/g, ' ').trim();
      return;
    }
    const block = BLOCK.has(tag);
    if (block) flushParagraph();
    if (tag === 'li') buf += '- ';
    for (const child of node.childNodes) walk(child);
    if (block) flushParagraph();
    else if (tag === 'td' || tag === 'th') buf += ' ';
  };
  walk(document.querySelector('body'));
  flushSection();
  return sections;
}

/** Collapses runs of blank space while keeping paragraph breaks (blank lines). */
export function normaliseText(s: string): string {
  return s
    .replace(/\r\n?/g, '\n')
    .split(/\n\s*\n/)
    .map((p) => p.replace(/\s+/g, ' ').trim())
    .filter(Boolean)
    .join('\n\n');
}

/** Text of a `text` source: paragraphs as given; Markdown-looking text keeps its headings. */
export async function parseInlineText(text: string, name: string, limits: ParseLimits = DEFAULT_PARSE_LIMITS): Promise<ParsedDocument> {
  if (/^#{1,6}\s/m.test(text)) return parseFile('markdown', Buffer.from(text, 'utf8'), name, limits);
  const t = normaliseText(text);
  return { title: name, sections: t ? [{ heading: '', text: t }] : [] };
}
