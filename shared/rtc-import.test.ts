import { afterEach, describe, expect, it } from 'vitest';
import { importRtcQuietly } from './rtc-import.ts';

describe('importRtcQuietly', () => {
  const original = process.env.NODE_ENV;
  afterEach(() => {
    if (original === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = original;
  });

  it('loads with NODE_ENV production (rtc-node then logs quietly) and puts it back after', async () => {
    process.env.NODE_ENV = 'development';
    const seen = await importRtcQuietly(async () => process.env.NODE_ENV);
    expect(seen).toBe('production');
    expect(process.env.NODE_ENV).toBe('development');
  });

  it('leaves an unset NODE_ENV unset, also when the load fails', async () => {
    delete process.env.NODE_ENV;
    await expect(importRtcQuietly(() => Promise.reject(new Error('no module')))).rejects.toThrow('no module');
    expect('NODE_ENV' in process.env).toBe(false);
  });
});
