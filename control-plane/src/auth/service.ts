// Authentication of every request: secret API keys, publishable keys and dashboard JWTs.
// Key lookups are served from a process cache; revocation invalidates it at once in this process and,
// through NOTIFY on channel `vap_auth`, in every other process.
import { createRemoteJWKSet, jwtVerify, errors as joseErrors, type JWTVerifyGetKey, type JWTPayload } from 'jose';
import type { Sql, TransactionSql } from 'postgres';
import type { Config } from '../config.ts';
import type { Logger } from '../../../shared/logger.ts';
import { unauthorized } from '../http/errors.ts';
import { hashKey, looksLikeKey, PUBLISHABLE_PREFIX, SECRET_PREFIX } from './keys.ts';

export type ActorType = 'api_key' | 'user' | 'publishable_key' | 'system' | 'worker';

export interface Auth {
  orgId: string;
  actorType: ActorType;
  actorId: string;
  /** Present for publishable keys only. */
  publishable?: { scopes: string[]; allowedOrigins: string[]; agentIds: string[] | null; allowedOverrides: string[] };
}

interface CacheEntry {
  auth: Auth | null;
  keyId: string | null;
  expiresAt: number | null;
  cachedAt: number;
}

type KeyTable = 'api_keys' | 'publishable_keys';

const CACHE_MAX = 50_000;
export const AUTH_CHANNEL = 'vap_auth';

export class AuthService {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly usage = new Map<string, { table: KeyTable; at: Date }>();
  private readonly jwtKey: JWTVerifyGetKey | Uint8Array | null;
  private flushTimer: NodeJS.Timeout | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private readonly sql: Sql;
  private readonly config: Config;
  private readonly log: Logger;

  constructor(sql: Sql, config: Config, log: Logger) {
    this.sql = sql;
    this.config = config;
    this.log = log;
    if (config.JWT_JWKS_URL) this.jwtKey = createRemoteJWKSet(new URL(config.JWT_JWKS_URL));
    else if (config.JWT_SECRET) this.jwtKey = new TextEncoder().encode(config.JWT_SECRET);
    else this.jwtKey = null;
  }

  async start(): Promise<void> {
    const sub = await this.sql.listen(
      AUTH_CHANNEL,
      (keyId) => this.forget(keyId),
      // (Re)connected: anything may have changed while the listener was away.
      () => this.cache.clear(),
    );
    this.unlisten = () => sub.unlisten();
    this.flushTimer = setInterval(() => void this.flushUsage().catch((err: unknown) => this.log.warn({ err }, 'key usage flush failed')), 5000);
    this.flushTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.flushTimer) clearInterval(this.flushTimer);
    await this.flushUsage().catch(() => {});
    await this.unlisten?.().catch(() => {});
  }

  /** Drops any cached entry for a key id (called after revoke or update, and on NOTIFY). */
  forget(keyId: string): void {
    for (const [k, v] of this.cache) if (v.keyId === keyId) this.cache.delete(k);
  }

  /** Call inside the transaction that revokes or changes a key: other processes drop it on commit. */
  static async notifyChanged(tx: Sql | TransactionSql, keyId: string): Promise<void> {
    await tx`select pg_notify(${AUTH_CHANNEL}, ${keyId})`;
  }

  async authenticate(header: string | undefined): Promise<Auth> {
    if (!header) throw unauthorized('Missing Authorization header; send "Authorization: Bearer <API key>"');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) throw unauthorized('Malformed Authorization header; expected "Bearer <API key>"');
    const token = m[1]!;
    if (token.startsWith(SECRET_PREFIX)) return this.byKey(token, 'api_keys');
    if (token.startsWith(PUBLISHABLE_PREFIX)) return this.byKey(token, 'publishable_keys');
    if (token.split('.').length === 3) return this.byJwt(token);
    throw unauthorized('Malformed credential');
  }

  private async byKey(token: string, table: KeyTable): Promise<Auth> {
    const prefix = table === 'api_keys' ? SECRET_PREFIX : PUBLISHABLE_PREFIX;
    if (!looksLikeKey(token, prefix)) throw unauthorized('Malformed API key');
    const hash = hashKey(token);
    const cacheKey = hash.toString('base64');
    const now = Date.now();
    let entry = this.cache.get(cacheKey);
    if (!entry || now - entry.cachedAt > this.config.AUTH_CACHE_TTL_SECONDS * 1000) {
      entry = await this.load(hash, table);
      if (this.cache.size >= CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(cacheKey, entry);
    }
    if (!entry.auth) throw unauthorized('Invalid or revoked API key');
    if (entry.expiresAt !== null && entry.expiresAt <= now) throw unauthorized('API key has expired');
    this.usage.set(entry.keyId!, { table, at: new Date(now) });
    return entry.auth;
  }

  private async load(hash: Buffer, table: KeyTable): Promise<CacheEntry> {
    const cachedAt = Date.now();
    if (table === 'api_keys') {
      const [row] = await this.sql<{ id: string; org_id: string; expires_at: Date | null }[]>`
        select id, org_id, expires_at from api_keys where key_hash = ${hash} and revoked_at is null`;
      if (!row) return { auth: null, keyId: null, expiresAt: null, cachedAt };
      return {
        auth: { orgId: row.org_id, actorType: 'api_key', actorId: row.id },
        keyId: row.id,
        expiresAt: row.expires_at?.getTime() ?? null,
        cachedAt,
      };
    }
    const [row] = await this.sql<
      { id: string; org_id: string; is_active: boolean; scopes: string[]; allowed_origins: string[]; agent_ids: string[] | null; allowed_overrides: string[] }[]
    >`select id, org_id, is_active, scopes, allowed_origins, agent_ids, allowed_overrides from publishable_keys where key_hash = ${hash}`;
    if (!row) return { auth: null, keyId: null, expiresAt: null, cachedAt };
    // A paused key can be resumed: its refusal is cached under its id so that the change can drop it.
    if (!row.is_active) return { auth: null, keyId: row.id, expiresAt: null, cachedAt };
    return {
      auth: {
        orgId: row.org_id,
        actorType: 'publishable_key',
        actorId: row.id,
        publishable: { scopes: row.scopes, allowedOrigins: row.allowed_origins, agentIds: row.agent_ids, allowedOverrides: row.allowed_overrides },
      },
      keyId: row.id,
      expiresAt: null,
      cachedAt,
    };
  }

  private async byJwt(token: string): Promise<Auth> {
    if (!this.jwtKey) throw unauthorized('Dashboard tokens are not enabled on this server');
    const opts = {
      algorithms: this.config.JWT_JWKS_URL ? ['RS256', 'ES256'] : ['HS256'],
      ...(this.config.JWT_ISSUER ? { issuer: this.config.JWT_ISSUER } : {}),
      ...(this.config.JWT_AUDIENCE ? { audience: this.config.JWT_AUDIENCE } : {}),
      requiredClaims: ['exp', 'sub'],
    };
    let payload: JWTPayload;
    try {
      ({ payload } =
        this.jwtKey instanceof Uint8Array ? await jwtVerify(token, this.jwtKey, opts) : await jwtVerify(token, this.jwtKey, opts));
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw unauthorized('Token has expired');
      if (err instanceof joseErrors.JWTClaimValidationFailed) throw unauthorized(`Token claim "${err.claim}" is invalid`);
      throw unauthorized('Invalid token');
    }
    const orgId = payload.org_id;
    const subject = payload.sub;
    if (typeof orgId !== 'string' || !/^[0-9a-f-]{36}$/i.test(orgId) || !subject) throw unauthorized('Token lacks a valid org_id claim');
    const email = typeof payload.email === 'string' ? payload.email : null;
    const [user] = await this.sql<{ id: string }[]>`
      insert into users (org_id, subject, email, last_seen_at)
      select ${orgId}, ${subject}, ${email}, now() where exists (select 1 from orgs where id = ${orgId})
      on conflict (org_id, subject) do update set last_seen_at = now(), email = coalesce(excluded.email, users.email)
      returning id`;
    if (!user) throw unauthorized('Unknown organisation');
    return { orgId, actorType: 'user', actorId: user.id };
  }

  /** Writes batched `last_used_at` values (one statement per table). */
  async flushUsage(): Promise<void> {
    if (!this.usage.size) return;
    const batch = [...this.usage.entries()];
    this.usage.clear();
    for (const table of ['api_keys', 'publishable_keys'] as const) {
      const rows = batch.filter(([, v]) => v.table === table).map(([id, v]) => [id, v.at.toISOString()]);
      if (!rows.length) continue;
      await this.sql`
        update ${this.sql(table)} k set last_used_at = greatest(k.last_used_at, v.at::timestamptz)
        from (values ${this.sql(rows)}) as v(id, at) where k.id = v.id::uuid`;
    }
  }
}
