// multipart/form-data bodies for routes with `bodyType: 'multipart'` (busboy). Files are buffered in memory
// up to `maxFileBytes`: over it the answer is 413 (the rest of the upload is drained, not stored). Text fields
// are bounded too. A wrong content type is a 422 at ["header","content-type"], like JSON bodies.
import type { Context } from 'koa';
import busboy from 'busboy';
import { HttpError, ValidationFailure } from './errors.ts';

export interface UploadedFile {
  field: string;
  fileName: string;
  /** As declared by the client; callers sniff the content themselves. */
  mimeType: string;
  data: Buffer;
}

export interface MultipartBody {
  fields: Record<string, string>;
  files: UploadedFile[];
}

export interface MultipartLimits {
  maxFileBytes: number;
  maxFieldBytes: number;
  maxFiles?: number;
  maxFields?: number;
}

const mib = (n: number) => (n >= 1024 * 1024 ? `${+(n / 1024 / 1024).toFixed(1)} MiB` : `${Math.ceil(n / 1024)} KiB`);

export async function readMultipart(ctx: Context, limits: MultipartLimits): Promise<MultipartBody> {
  if (!ctx.is('multipart/form-data')) {
    throw new ValidationFailure([
      { type: 'content_type', loc: ['header', 'content-type'], msg: 'Content-Type must be multipart/form-data', input: ctx.get('content-type') || null },
    ]);
  }
  // A declared length far over what we accept is refused before reading a byte.
  const declared = Number(ctx.get('content-length') || 0);
  const ceiling = limits.maxFileBytes + limits.maxFieldBytes * 2 + 64 * 1024;
  if (declared > ceiling) throw tooLarge(`Upload exceeds the limit of ${mib(limits.maxFileBytes)} per file`);

  return new Promise<MultipartBody>((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({
        headers: ctx.req.headers,
        limits: { fileSize: limits.maxFileBytes, fieldSize: limits.maxFieldBytes, files: limits.maxFiles ?? 1, fields: limits.maxFields ?? 20, parts: 40 },
      });
    } catch (err) {
      reject(new ValidationFailure([{ type: 'content_type', loc: ['header', 'content-type'], msg: (err as Error).message, input: ctx.get('content-type') || null }]));
      return;
    }
    const fields: Record<string, string> = {};
    const files: UploadedFile[] = [];
    let failure: Error | null = null;
    const fail = (err: Error) => void (failure ??= err);

    bb.on('field', (name, value, info) => {
      if (info.valueTruncated) fail(tooLarge(`Field "${name}" exceeds the limit of ${mib(limits.maxFieldBytes)}`));
      else fields[name] = value;
    });
    bb.on('file', (name, stream, info) => {
      const parts: Buffer[] = [];
      stream.on('data', (d: Buffer) => {
        if (!failure) parts.push(d);
      });
      stream.on('limit', () => {
        fail(tooLarge(`File "${info.filename ?? name}" exceeds the limit of ${mib(limits.maxFileBytes)}`));
        parts.length = 0;
      });
      stream.on('close', () => {
        if (!failure) files.push({ field: name, fileName: info.filename ?? name, mimeType: info.mimeType || 'application/octet-stream', data: Buffer.concat(parts) });
      });
    });
    bb.on('filesLimit', () => fail(new ValidationFailure([{ type: 'too_many_files', loc: ['body'], msg: `At most ${limits.maxFiles ?? 1} file per request` }])));
    bb.on('fieldsLimit', () => fail(new ValidationFailure([{ type: 'too_many_fields', loc: ['body'], msg: 'Too many form fields' }])));
    bb.on('partsLimit', () => fail(new ValidationFailure([{ type: 'too_many_fields', loc: ['body'], msg: 'Too many form parts' }])));
    bb.on('error', (err: Error) =>
      reject(failure ?? new ValidationFailure([{ type: 'multipart_invalid', loc: ['body'], msg: `Malformed multipart body: ${err.message}` }])),
    );
    bb.on('close', () => {
      if (failure) reject(failure);
      else resolve({ fields, files });
    });
    ctx.req.on('aborted', () => reject(new HttpError(400, 'bad_request', 'The upload was aborted')));
    ctx.req.pipe(bb);
  });
}

const tooLarge = (detail: string) => new HttpError(413, 'payload_too_large', detail);
