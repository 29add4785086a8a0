// Secret and publishable key formats, and the only form in which they are stored (a SHA-256).
import { createHash } from 'node:crypto';
import { randomBase62 } from '../../../shared/ids.ts';

export const SECRET_PREFIX = 'vap_sk_';
export const PUBLISHABLE_PREFIX = 'vap_pk_';

export interface NewKey {
  key: string;
  hash: Buffer;
  prefix: string;
  last4: string;
}

export function generateKey(prefix: string): NewKey {
  // 32 random bytes -> 43 base62 characters.
  const key = prefix + randomBase62(32);
  return { key, hash: hashKey(key), prefix, last4: key.slice(-4) };
}

export const hashKey = (key: string): Buffer => createHash('sha256').update(key).digest();

/** How a stored key is shown after creation: the prefix and the last four characters. */
export const maskKey = (prefix: string, last4: string) => `${prefix}...${last4}`;

const KEY_BODY = /^[0-9A-Za-z]{43}$/;
export const looksLikeKey = (token: string, prefix: string) => token.startsWith(prefix) && KEY_BODY.test(token.slice(prefix.length));
