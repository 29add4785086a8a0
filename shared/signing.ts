// Standard Webhooks signatures (https://www.standardwebhooks.com), used for webhook deliveries and for
// requests to function tools' servers, so customers verify both the same way (e.g. with the
// `standardwebhooks` package or Svix's libraries).
import { createHmac, randomBytes } from 'node:crypto';

export const SECRET_PREFIX = 'whsec_';

/** `whsec_` + base64 of 32 random bytes. */
export function newSigningSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

function secretKey(secret: string): Buffer {
  const b64 = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = Buffer.from(b64, 'base64');
  if (key.length < 16) throw new Error('signing secret is too short');
  return key;
}

/** `v1,<base64 HMAC-SHA256 of "msgId.timestamp.body">`, keyed by the base64-decoded secret. */
export function signPayload(secret: string, msgId: string, timestamp: number, body: string | Buffer): string {
  const mac = createHmac('sha256', secretKey(secret));
  mac.update(`${msgId}.${timestamp}.`);
  mac.update(body);
  return `v1,${mac.digest('base64')}`;
}

export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The three Standard Webhooks headers. Several secrets give several space-separated signatures: during a
 * secret rotation requests are signed with the new and the previous secret, and receivers accept either.
 * `timestamp` is in seconds since the epoch.
 */
export function signatureHeaders(
  secrets: string | string[],
  msgId: string,
  body: string | Buffer,
  timestamp = Math.floor(Date.now() / 1000),
): SignatureHeaders {
  const list = Array.isArray(secrets) ? secrets : [secrets];
  if (!list.length) throw new Error('at least one signing secret is needed');
  return {
    'webhook-id': msgId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': list.map((s) => signPayload(s, msgId, timestamp, body)).join(' '),
  };
}
