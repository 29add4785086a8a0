// Production refuses LiveKit's development credentials (devkey/secret, public in LiveKit's docs): with them
// anyone reaching the LiveKit server mints tokens for every room. Both processes check at start-up.
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { loadConfig } from '../../control-plane/src/config.ts';
import { loadWorkerConfig } from '../../media-worker/src/config.ts';

const prod = { NODE_ENV: 'production', MASTER_KEY: randomBytes(32).toString('base64'), PUBLIC_BASE_URL: 'https://api.example.com' };
const real = { LIVEKIT_API_KEY: 'APIa1b2c3d4e5f6', LIVEKIT_API_SECRET: 'x'.repeat(40) };
const worker = { NODE_ENV: 'production', WORKER_TOKEN: 'w'.repeat(40) };

describe("LiveKit's development credentials in production", () => {
  it('the control plane refuses to start with them, unset (the defaults) or explicit, key or secret', () => {
    expect(() => loadConfig(prod)).toThrow(/development credentials \(devkey\/secret\)/);
    expect(() => loadConfig({ ...prod, LIVEKIT_API_KEY: 'devkey', LIVEKIT_API_SECRET: 'secret' })).toThrow(/LIVEKIT_API_KEY/);
    expect(() => loadConfig({ ...prod, ...real, LIVEKIT_API_KEY: 'devkey' })).toThrow(/development credentials/);
    expect(() => loadConfig({ ...prod, ...real, LIVEKIT_API_SECRET: 'secret' })).toThrow(/development credentials/);
    expect(loadConfig({ ...prod, ...real }).LIVEKIT_API_KEY).toBe(real.LIVEKIT_API_KEY);
    // Development and tests keep the local server's defaults.
    expect(loadConfig({}).LIVEKIT_API_KEY).toBe('devkey');
  });

  it('the media worker refuses to start with them', () => {
    expect(() => loadWorkerConfig(worker)).toThrow(/development credentials/);
    expect(() => loadWorkerConfig({ ...worker, LIVEKIT_API_KEY: 'devkey', LIVEKIT_API_SECRET: real.LIVEKIT_API_SECRET })).toThrow(/development credentials/);
    expect(() => loadWorkerConfig({ ...worker, LIVEKIT_API_KEY: real.LIVEKIT_API_KEY, LIVEKIT_API_SECRET: 'secret' })).toThrow(/development credentials/);
    expect(loadWorkerConfig({ ...worker, ...real }).livekitApiSecret).toBe(real.LIVEKIT_API_SECRET);
    expect(loadWorkerConfig({ WORKER_TOKEN: worker.WORKER_TOKEN }).livekitApiKey).toBe('devkey');
  });
});
