// deploy/compose/compose.yaml, read as a file, not started: every service has a pinned image and a health
// check, dependencies name real services and wait on health, secrets come only from the environment (required
// ones fail loudly), and the vap services run the npm scripts' entry points. Starting it (podman-compose) needs
// the pinned PostgreSQL, Redis, LiveKit and SIP images, which only a container registry has and these machines
// cannot reach; test/e2e/images.test.ts builds the vap images and runs them against the local stack instead.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import { loadConfig } from '../../control-plane/src/config.ts';
import { loadWorkerConfig } from '../../media-worker/src/config.ts';

const root = path.resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const text = readFileSync(path.join(root, 'deploy/compose/compose.yaml'), 'utf8');
const doc = parseDocument(text, { merge: true });
const compose = doc.toJS({ maxAliasCount: 100 }) as { services: Record<string, any>; volumes?: Record<string, unknown> };
const services = compose.services;

/** Compose's interpolation: ${VAR}, ${VAR:-default}, ${VAR:?message}. */
function interpolate(value: string, env: Record<string, string>): string {
  return value.replace(/\$\{(\w+)(?::([-?])([^}]*))?\}/g, (_, name: string, op?: string, arg?: string) => {
    const v = env[name];
    if (op === '?' && !v) throw new Error(`missing ${name}: ${arg}`);
    if (op === '-' && !v) return arg ?? '';
    return v ?? '';
  });
}
const fullEnv: Record<string, string> = {
  PUBLIC_IP: '203.0.113.10', PUBLIC_BASE_URL: 'https://vap.example.com', LIVEKIT_PUBLIC_URL: 'wss://lk.example.com',
  POSTGRES_PASSWORD: 'pw0123456789', MASTER_KEY: Buffer.alloc(32, 7).toString('base64'), WORKER_TOKEN: 'w'.repeat(40),
  LIVEKIT_API_KEY: 'APIkey123', LIVEKIT_API_SECRET: 's'.repeat(40),
};

describe('compose.yaml, read without a container engine', () => {
  it('parses, with no YAML errors or warnings', () => {
    expect(doc.errors).toEqual([]);
    expect(doc.warnings).toEqual([]);
  });

  it('declares the whole production-like stack: PostgreSQL, Redis, LiveKit, SIP, migrations, control plane, workers', () => {
    expect(Object.keys(services).sort()).toEqual(['control-plane', 'livekit', 'media-worker', 'migrate', 'postgres', 'redis', 'sip'].sort());
    expect(services['media-worker'].deploy.replicas).toBe('${WORKERS:-2}');
  });

  it('pins every image to an exact version', () => {
    for (const [name, s] of Object.entries(services)) {
      expect(s.image, name).toBeTruthy();
      const image = interpolate(s.image, {});
      expect(image, name).toMatch(/^[a-z0-9./-]+(:v?\d+\.\d+(\.\d+)?(-[a-z0-9.-]+)?|@sha256:[a-f0-9]{64})$/);
    }
  });

  it('gives every long-running service a health check, and waits on it', () => {
    for (const [name, s] of Object.entries(services)) {
      if (name === 'migrate') {
        expect(s.restart).toBe('no');
        continue;
      }
      expect(s.healthcheck?.test?.[0], name).toMatch(/^CMD/);
      for (const [dep, cond] of Object.entries(s.depends_on ?? {})) {
        expect(services, `${name} depends on ${dep}`).toHaveProperty(dep);
        expect((cond as { condition: string }).condition).toBe(dep === 'migrate' ? 'service_completed_successfully' : 'service_healthy');
      }
    }
    expect(Object.keys(services['control-plane'].depends_on)).toEqual(expect.arrayContaining(['postgres', 'migrate', 'livekit']));
    expect(Object.keys(services['media-worker'].depends_on)).toContain('control-plane');
  });

  it('points services at each other by their service names', () => {
    const names = new Set(Object.keys(services));
    for (const m of text.matchAll(/(?:https?|wss?|postgres):\/\/(?:[^@/\s]*@)?([a-z][a-z0-9-]*):\d+/g)) {
      if (m[1] === 'livekit' || m[1] === 'control-plane' || m[1] === 'postgres') expect(names.has(m[1])).toBe(true);
    }
    for (const m of text.matchAll(/address: ([a-z-]+):\d+/g)) expect(names.has(m[1]!), m[1]).toBe(true);
    const volumes = Object.keys(compose.volumes ?? {});
    for (const v of services.postgres.volumes) expect(volumes).toContain(v.split(':')[0]);
  });

  it('runs the npm scripts entry points', () => {
    expect(services['control-plane'].command).toEqual(pkg.scripts['start:api'].split(' '));
    expect(services['media-worker'].command).toEqual(pkg.scripts.worker.split(' '));
    expect(services.migrate.command).toEqual(pkg.scripts.migrate.split(' '));
  });

  it('takes every secret from the environment and refuses to start without the required ones', () => {
    for (const key of ['MASTER_KEY', 'WORKER_TOKEN', 'LIVEKIT_API_SECRET', 'POSTGRES_PASSWORD']) {
      expect(text).toMatch(new RegExp(`\\$\\{${key}:\\?`));
      const { [key]: _, ...without } = fullEnv;
      expect(() => interpolate(JSON.stringify(services), fullEnv)).not.toThrow();
      expect(() => interpolate(JSON.stringify(services), without)).toThrow(`missing ${key}`);
    }
    // No literal secret: every value of a secret-looking variable is an interpolation.
    for (const [name, s] of Object.entries(services)) {
      for (const [k, v] of Object.entries((s.environment ?? {}) as Record<string, string>)) {
        if (/KEY|SECRET|TOKEN|PASSWORD/.test(k) && !/VERSION/.test(k)) expect(String(v), `${name}.${k}`).toMatch(/^\$\{\w+(:[-?][^}]*)?\}$|^"?\$\{/);
      }
    }
  });

  it('gives the vap processes an environment their own config loaders accept', () => {
    const env = (name: string) =>
      Object.fromEntries(Object.entries(services[name].environment as Record<string, string>).map(([k, v]) => [k, interpolate(String(v), fullEnv)]).filter(([, v]) => v !== ''));
    const cp = loadConfig(env('control-plane'));
    expect(cp.NODE_ENV).toBe('production');
    expect(cp.HOST).toBe('0.0.0.0');
    expect(cp.DATABASE_URL).toBe('postgres://vap:pw0123456789@postgres:5432/vap');
    loadConfig(env('migrate'));
    const w = loadWorkerConfig(env('media-worker'));
    expect(w.controlPlaneUrl).toBe('http://control-plane:8080');
    expect(w.drainTimeoutMs).toBe(1_800_000);
    // The stop grace period outlasts the drain.
    const grace = /^(\d+)m$/.exec(services['media-worker'].stop_grace_period);
    expect(Number(grace![1]) * 60_000).toBeGreaterThan(w.drainTimeoutMs);
  });
});
