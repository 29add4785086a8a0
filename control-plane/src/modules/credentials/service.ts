// Sealing, masking and resolving provider keys. The plaintext key exists only in memory: at rest it is
// AES-256-GCM ciphertext bound to its credential id (as associated data), so a ciphertext copied onto
// another row, or another organisation's row, does not open.
import type { Secrets, Sealed } from '../../crypto/secrets.ts';
import type { Db } from '../../db/types.ts';
import type { CredentialProvider } from '../../../../schemas/credentials.ts';
import { newestKeyPerProvider, type KeyHints } from './queries.ts';

export type { KeyHints } from './queries.ts';

/** Keys shorter than this are shown as `****`: revealing 7 characters of a short key would give too much away. */
export const MASK_MIN_LENGTH = 16;


export function keyHints(apiKey: string): KeyHints {
  if (apiKey.length < MASK_MIN_LENGTH) return { key_prefix: null, last4: null };
  return { key_prefix: apiKey.slice(0, 3), last4: apiKey.slice(-4) };
}

export const maskedKey = (h: KeyHints): string => (h.key_prefix !== null && h.last4 !== null ? `${h.key_prefix}...${h.last4}` : '****');

const aad = (credentialId: string) => `credential:${credentialId}`;

export function sealKey(secrets: Secrets, credentialId: string, apiKey: string): Sealed {
  return secrets.seal(apiKey, aad(credentialId));
}

export function openKey(secrets: Secrets, credentialId: string, sealed: Sealed): string {
  return secrets.open(sealed, aad(credentialId));
}

export type ProviderKeys = Partial<Record<CredentialProvider, string>>;

/**
 * The organisation's own key for each provider it has a credential for (the newest credential of each
 * provider wins). Providers without a credential are absent: the media worker falls back to the platform's
 * own key for them. Used by the internal worker API.
 */
export async function resolveProviderKeys(db: Db, secrets: Secrets, orgId: string): Promise<ProviderKeys> {
  const rows = await newestKeyPerProvider(db, orgId);
  const out: ProviderKeys = {};
  for (const r of rows) {
    out[r.provider] = openKey(secrets, r.id, { ciphertext: r.ciphertext, keyVersion: r.key_version });
  }
  return out;
}
