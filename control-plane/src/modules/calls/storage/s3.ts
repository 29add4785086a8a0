// S3-compatible backend (AWS S3, MinIO, Ceph, R2...): multipart streaming uploads, presigned GET URLs.
import { DeleteObjectCommand, GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { PassThrough } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Config } from '../../../config.ts';
import { contentTypeOf, limitBytes, type RecordingStorage } from './types.ts';

const PREFIX = 's3://';

export function parseS3Key(key: string): { bucket: string; key: string } | null {
  if (!key.startsWith(PREFIX)) return null;
  const rest = key.slice(PREFIX.length);
  const slash = rest.indexOf('/');
  return slash > 0 ? { bucket: rest.slice(0, slash), key: rest.slice(slash + 1) } : null;
}

export function s3Client(config: Config): S3Client {
  return new S3Client({
    region: config.S3_REGION,
    // A custom endpoint (MinIO and most self-hosted stores) wants path-style addressing: no bucket DNS names.
    ...(config.S3_ENDPOINT ? { endpoint: config.S3_ENDPOINT, forcePathStyle: true } : {}),
    // Without explicit keys the SDK's default chain applies (environment, profile, instance role).
    ...(config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY
      ? { credentials: { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY } }
      : {}),
    // Checksums only where S3 requires them: many S3-compatible stores reject the newer default
    // (aws-chunked bodies with trailing CRC32 checksums).
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

export function s3Storage(config: Config, client: S3Client = s3Client(config)): RecordingStorage {
  const bucket = config.S3_BUCKET!;
  return {
    kind: 's3',
    async put({ orgId, callId, format, body, maxBytes }) {
      const key = `recordings/${orgId}/${callId}.${format}`;
      limitBytes(body, maxBytes);
      // The request stream goes through a PassThrough so a failure on either side ends both: Upload
      // reads parts of 5 MiB at most, then aborts the multipart upload on error.
      const pass = new PassThrough();
      const upload = new Upload({
        client,
        params: { Bucket: bucket, Key: key, Body: pass, ContentType: contentTypeOf(format) },
        queueSize: 2,
        partSize: 5 * 1024 * 1024,
      });
      const piped = pipeline(body, pass);
      try {
        await Promise.all([piped, upload.done()]);
      } catch (err) {
        pass.destroy();
        await upload.abort().catch(() => {});
        throw err;
      }
      return `${PREFIX}${bucket}/${key}`;
    },
    owns: (key) => parseS3Key(key)?.bucket === bucket,
    async readUrl(_callId, key, ttlSeconds) {
      const loc = parseS3Key(key)!;
      return getSignedUrl(client, new GetObjectCommand({ Bucket: loc.bucket, Key: loc.key }), { expiresIn: ttlSeconds });
    },
    async delete(key) {
      const loc = parseS3Key(key)!;
      // S3 answers 204 for a key that does not exist: a repeated delete is no error.
      await client.send(new DeleteObjectCommand({ Bucket: loc.bucket, Key: loc.key }));
    },
  };
}
