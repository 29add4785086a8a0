// A minimal S3 server for tests, speaking the real wire protocol: path-style PutObject, multipart upload
// (create, upload part, complete, abort) and GetObject, every request authenticated with AWS Signature V4
// (Authorization header or presigned query), signatures and expiry checked. Objects live in memory.
// s3rver would have been the obvious choice, but it does not verify V4 signatures at all.
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { listenOnLoopback } from './loopback-server.ts';

export interface FakeS3 {
  url: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
  objects: Map<string, { body: Buffer; contentType: string }>;
  /** Requests seen, e.g. "PUT /bucket/key?partNumber=1&uploadId=..." (for asserting multipart use). */
  requests: string[];
  /** Makes the next n requests fail with 500 InternalError. */
  failNext(n: number): void;
  close(): Promise<void>;
}

const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
// RFC 3986 encoding, as SigV4 wants it.
const uriEncode = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const xml = (body: string) => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
const xmlEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** "20260101T000000Z" -> epoch ms */
function parseAmzDate(s: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  return m ? Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!) : NaN;
}

class S3Error extends Error {
  status: number;
  code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

interface Auth {
  credential: string;
  signedHeaders: string;
  signature: string;
  amzDate: string;
  payloadHash: string;
  expires?: number;
}

function readAuth(req: IncomingMessage, url: URL): Auth {
  const q = url.searchParams;
  if (q.get('X-Amz-Algorithm')) {
    if (q.get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') throw new S3Error(400, 'AuthorizationQueryParametersError', 'Unsupported algorithm');
    return {
      credential: q.get('X-Amz-Credential') ?? '',
      signedHeaders: q.get('X-Amz-SignedHeaders') ?? '',
      signature: q.get('X-Amz-Signature') ?? '',
      amzDate: q.get('X-Amz-Date') ?? '',
      payloadHash: 'UNSIGNED-PAYLOAD',
      expires: Number(q.get('X-Amz-Expires')),
    };
  }
  const header = req.headers.authorization ?? '';
  const m = /^AWS4-HMAC-SHA256 Credential=([^,]+),\s*SignedHeaders=([^,]+),\s*Signature=([0-9a-f]+)$/.exec(header);
  if (!m) throw new S3Error(403, 'AccessDenied', 'Missing or malformed Authorization');
  return {
    credential: m[1]!,
    signedHeaders: m[2]!,
    signature: m[3]!,
    amzDate: String(req.headers['x-amz-date'] ?? ''),
    payloadHash: String(req.headers['x-amz-content-sha256'] ?? ''),
  };
}

function verify(req: IncomingMessage, url: URL, body: Buffer, s3: Pick<FakeS3, 'accessKeyId' | 'secretAccessKey' | 'region'>): void {
  const auth = readAuth(req, url);
  const [keyId, date, region, service, term] = auth.credential.split('/');
  if (keyId !== s3.accessKeyId) throw new S3Error(403, 'InvalidAccessKeyId', 'The AWS access key Id you provided does not exist in our records.');
  if (region !== s3.region || service !== 's3' || term !== 'aws4_request') throw new S3Error(403, 'AccessDenied', 'Bad credential scope');
  const signedAt = parseAmzDate(auth.amzDate);
  if (!Number.isFinite(signedAt) || auth.amzDate.slice(0, 8) !== date) throw new S3Error(403, 'AccessDenied', 'Bad X-Amz-Date');
  if (auth.expires !== undefined) {
    if (!Number.isInteger(auth.expires) || auth.expires < 1 || auth.expires > 604800) throw new S3Error(400, 'AuthorizationQueryParametersError', 'Bad X-Amz-Expires');
    if (Date.now() > signedAt + auth.expires * 1000) throw new S3Error(403, 'AccessDenied', 'Request has expired');
  } else if (Math.abs(Date.now() - signedAt) > 15 * 60_000) {
    throw new S3Error(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.');
  }
  if (auth.payloadHash !== 'UNSIGNED-PAYLOAD' && auth.payloadHash !== sha256(body)) {
    throw new S3Error(400, 'XAmzContentSHA256Mismatch', 'The provided x-amz-content-sha256 header does not match what was computed.');
  }

  const query = [...url.searchParams.entries()]
    .filter(([k]) => k !== 'X-Amz-Signature')
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const names = auth.signedHeaders.split(';');
  const headers = names.map((n) => `${n}:${String(req.headers[n] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  // S3 signs the path as sent (encoded once), not re-encoded.
  const canonical = [req.method, url.pathname, query, headers, auth.signedHeaders, auth.payloadHash].join('\n');
  const scope = `${date}/${region}/s3/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', auth.amzDate, scope, sha256(canonical)].join('\n');
  let key = hmac(`AWS4${s3.secretAccessKey}`, date!);
  for (const part of [region!, 's3', 'aws4_request']) key = hmac(key, part);
  const expected = Buffer.from(createHmac('sha256', key).update(toSign).digest('hex'));
  const given = Buffer.from(auth.signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw new S3Error(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided.');
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

export async function startFakeS3(opts: { bucket?: string; region?: string } = {}): Promise<FakeS3> {
  const objects = new Map<string, { body: Buffer; contentType: string }>();
  const uploads = new Map<string, { key: string; contentType: string; parts: Map<number, Buffer> }>();
  const requests: string[] = [];
  let failures = 0;
  const s3 = { bucket: opts.bucket ?? 'recordings', region: opts.region ?? 'us-east-1', accessKeyId: 'AKIDFAKES3TEST', secretAccessKey: 'fake-s3-secret-key-0123456789' };

  const send = (res: ServerResponse, status: number, body = '', headers: Record<string, string> = {}) => {
    res.writeHead(status, { ...(body ? { 'content-type': 'application/xml' } : {}), ...headers });
    res.end(body);
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://s3.local');
    requests.push(`${req.method} ${url.pathname}${url.search.replace(/&?X-Amz-[^&]*/g, '')}`);
    const body = await readBody(req);
    if (failures > 0) {
      failures--;
      throw new S3Error(500, 'InternalError', 'We encountered an internal error. Please try again.');
    }
    verify(req, url, body, s3);
    const [, bucket, ...rest] = url.pathname.split('/');
    if (bucket !== s3.bucket) throw new S3Error(404, 'NoSuchBucket', 'The specified bucket does not exist');
    const key = decodeURIComponent(rest.join('/'));
    const q = url.searchParams;
    const contentType = String(req.headers['content-type'] ?? 'application/octet-stream');
    const etag = (b: Buffer) => `"${createHash('md5').update(b).digest('hex')}"`;

    if (req.method === 'POST' && q.has('uploads')) {
      const uploadId = randomUUID();
      uploads.set(uploadId, { key, contentType, parts: new Map() });
      return send(res, 200, xml(`<InitiateMultipartUploadResult><Bucket>${s3.bucket}</Bucket><Key>${xmlEscape(key)}</Key><UploadId>${uploadId}</UploadId></InitiateMultipartUploadResult>`));
    }
    if (q.has('uploadId')) {
      const upload = uploads.get(q.get('uploadId')!);
      if (!upload || upload.key !== key) throw new S3Error(404, 'NoSuchUpload', 'The specified upload does not exist.');
      if (req.method === 'PUT') {
        upload.parts.set(Number(q.get('partNumber')), body);
        return send(res, 200, '', { etag: etag(body) });
      }
      if (req.method === 'DELETE') {
        uploads.delete(q.get('uploadId')!);
        return send(res, 204);
      }
      if (req.method === 'POST') {
        const numbers = [...body.toString('utf8').matchAll(/<PartNumber>(\d+)<\/PartNumber>/g)].map((m) => Number(m[1]));
        if (numbers.length === 0 || numbers.some((n) => !upload.parts.has(n))) throw new S3Error(400, 'InvalidPart', 'One or more of the specified parts could not be found.');
        const full = Buffer.concat(numbers.map((n) => upload.parts.get(n)!));
        objects.set(key, { body: full, contentType: upload.contentType });
        uploads.delete(q.get('uploadId')!);
        return send(res, 200, xml(`<CompleteMultipartUploadResult><Bucket>${s3.bucket}</Bucket><Key>${xmlEscape(key)}</Key><ETag>${etag(full)}</ETag></CompleteMultipartUploadResult>`));
      }
    }
    if (req.method === 'PUT') {
      objects.set(key, { body, contentType });
      return send(res, 200, '', { etag: etag(body) });
    }
    if (req.method === 'DELETE') {
      // As S3: 204 whether or not the key existed.
      objects.delete(key);
      return send(res, 204);
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      const obj = objects.get(key);
      if (!obj) throw new S3Error(404, 'NoSuchKey', 'The specified key does not exist.');
      res.writeHead(200, { 'content-type': obj.contentType, 'content-length': String(obj.body.length), etag: etag(obj.body) });
      res.end(req.method === 'GET' ? obj.body : undefined);
      return;
    }
    throw new S3Error(405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.');
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const e = err instanceof S3Error ? err : new S3Error(500, 'InternalError', String(err));
      if (!res.headersSent) send(res, e.status, xml(`<Error><Code>${e.code}</Code><Message>${xmlEscape(e.message)}</Message></Error>`));
      else res.destroy();
    });
  });
  const { origin, close } = await listenOnLoopback(server);
  return {
    url: origin,
    ...s3,
    objects,
    requests,
    failNext(n) {
      failures = n;
    },
    close,
  };
}
