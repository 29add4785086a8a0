// Secrets at rest: AES-256-GCM under a master key from the environment. Each ciphertext records the
// version of the key that sealed it, so keys can be rotated: set the new MASTER_KEY (and its
// MASTER_KEY_VERSION), keep the old ones in MASTER_KEYS_PREVIOUS, and re-seal at leisure.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface Sealed {
  /** iv (12 bytes) | auth tag (16 bytes) | ciphertext */
  ciphertext: Buffer;
  keyVersion: number;
}

export class Secrets {
  private readonly keys: Map<number, Buffer>;
  readonly currentVersion: number;

  constructor(current: Buffer, currentVersion = 1, previous: Map<number, Buffer> = new Map()) {
    if (current.length !== 32) throw new Error('MASTER_KEY must be 32 bytes (base64 of 32 random bytes)');
    this.keys = new Map(previous);
    this.keys.set(currentVersion, current);
    this.currentVersion = currentVersion;
  }

  /** A 32-byte key for one purpose (URL signing, say), derived from the current master key with HKDF. */
  derive(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.keys.get(this.currentVersion)!, Buffer.alloc(0), `vap:${purpose}`, 32));
  }

  /** The key for a purpose under every configured master key, current first (to verify across a rotation). */
  deriveAll(purpose: string): Buffer[] {
    const versions = [this.currentVersion, ...[...this.keys.keys()].filter((v) => v !== this.currentVersion)];
    return versions.map((v) => Buffer.from(hkdfSync('sha256', this.keys.get(v)!, Buffer.alloc(0), `vap:${purpose}`, 32)));
  }

  seal(plaintext: string, aad = ''): Sealed {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.currentVersion)!, iv);
    if (aad) cipher.setAAD(Buffer.from(aad));
    const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return { ciphertext: Buffer.concat([iv, cipher.getAuthTag(), ct]), keyVersion: this.currentVersion };
  }

  open(sealed: Sealed, aad = ''): string {
    const key = this.keys.get(sealed.keyVersion);
    if (!key) throw new Error(`no master key of version ${sealed.keyVersion} is configured`);
    const buf = sealed.ciphertext;
    const decipher = createDecipheriv('aes-256-gcm', key, buf.subarray(0, 12));
    decipher.setAuthTag(buf.subarray(12, 28));
    if (aad) decipher.setAAD(Buffer.from(aad));
    return Buffer.concat([decipher.update(buf.subarray(28)), decipher.final()]).toString('utf8');
  }
}

const decodeKey = (b64: string, name: string): Buffer => {
  const key = Buffer.from(b64.trim(), 'base64');
  if (key.length !== 32) throw new Error(`${name} must be the base64 of 32 bytes`);
  return key;
};

/**
 * From MASTER_KEY (+ MASTER_KEY_VERSION, MASTER_KEYS_PREVIOUS="1:<b64>,2:<b64>"). Outside production, with no
 * MASTER_KEY, a key is generated once and kept in DATA_DIR/master.key so development data stays readable.
 */
export function secretsFromEnv(opts: { masterKey?: string | undefined; version?: number; previous?: string | undefined; dataDir: string; production: boolean }): Secrets {
  let current: Buffer;
  if (opts.masterKey) current = decodeKey(opts.masterKey, 'MASTER_KEY');
  else {
    if (opts.production) throw new Error('MASTER_KEY must be set in production');
    const file = path.join(opts.dataDir, 'master.key');
    if (!existsSync(file)) {
      mkdirSync(opts.dataDir, { recursive: true });
      writeFileSync(file, randomBytes(32).toString('base64') + '\n', { mode: 0o600 });
    }
    current = decodeKey(readFileSync(file, 'utf8'), file);
  }
  const previous = new Map<number, Buffer>();
  for (const part of (opts.previous ?? '').split(',').filter(Boolean)) {
    const [v, b64] = part.split(':');
    previous.set(Number(v), decodeKey(b64 ?? '', `MASTER_KEYS_PREVIOUS version ${v}`));
  }
  return new Secrets(current, opts.version ?? 1, previous);
}
