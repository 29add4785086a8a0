// Random identifiers and keys.
import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Base62 of `bytes` random bytes, left-padded to a fixed length so every key has the same size. */
export function randomBase62(bytes: number): string {
  let n = BigInt('0x' + randomBytes(bytes).toString('hex'));
  const width = Math.ceil((bytes * 8) / Math.log2(62));
  let out = '';
  while (n > 0n) {
    out = ALPHABET[Number(n % 62n)]! + out;
    n /= 62n;
  }
  return out.padStart(width, '0');
}

export const newRequestId = () => `req_${randomBase62(12)}`;
