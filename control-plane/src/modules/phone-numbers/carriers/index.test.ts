// The carrier factory: CARRIER=twilio / telnyx builds the real adapter from the environment, pointed here at
// the local stand-ins of each carrier's API, and its requests are measured on the registry it is given.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import client from 'prom-client';
import type { Sql } from 'postgres';
import { createSql } from '../../../db/connect.ts';
import { loadConfig } from '../../../config.ts';
import { createTestDatabase } from '../../../../../test/support/db.ts';
import { startFakeTwilio } from '../../../../../test/support/fake-twilio.ts';
import { startFakeTelnyx } from '../../../../../test/support/fake-telnyx.ts';
import { createCarrier } from './index.ts';

let db: Awaited<ReturnType<typeof createTestDatabase>>;
let sql: Sql;

beforeAll(async () => {
  db = await createTestDatabase();
  sql = createSql(db.url, { max: 1 });
});
afterAll(async () => {
  await sql.end();
  await db.drop();
});

describe('carrier factory', () => {
  it('CARRIER=twilio builds a working Twilio adapter', async () => {
    const fake = await startFakeTwilio();
    try {
      const config = loadConfig({ CARRIER: 'twilio', TWILIO_ACCOUNT_SID: fake.accountSid, TWILIO_AUTH_TOKEN: fake.authToken, TWILIO_API_BASE_URL: fake.url, TWILIO_TRUNKING_BASE_URL: fake.url });
      const registry = new client.Registry();
      const carrier = createCarrier(config, sql, { registry });
      expect(carrier.name).toBe('twilio');
      const [first] = await carrier.search({ country: 'US', area_code: '415', limit: 1 });
      const bought = await carrier.purchase(first!.phone_number, {});
      await carrier.routeToIngress(bought.carrier_number_id, { address: '127.0.0.1:5060', transport: 'udp' });
      expect(fake.numbers.get(bought.carrier_number_id)?.trunk_sid).toMatch(/^TK/);
      await carrier.release(bought.carrier_number_id);
      expect(fake.numbers.size).toBe(0);
      expect(await registry.metrics()).toMatch(/vap_carrier_request_duration_seconds_count\{carrier="twilio",operation="purchase",outcome="ok"\} 1/);
    } finally {
      await fake.close();
    }
  });

  it('CARRIER=telnyx builds a working Telnyx adapter', async () => {
    const fake = await startFakeTelnyx();
    try {
      const config = loadConfig({ CARRIER: 'telnyx', TELNYX_API_KEY: fake.apiKey, TELNYX_API_BASE_URL: fake.url });
      const carrier = createCarrier(config, sql);
      expect(carrier.name).toBe('telnyx');
      const [first] = await carrier.search({ country: 'US', area_code: '312', limit: 1 });
      const bought = await carrier.purchase(first!.phone_number, {});
      await carrier.routeToIngress(bought.carrier_number_id, { address: '127.0.0.1:5060', transport: 'udp' });
      expect(fake.numbers.get(bought.carrier_number_id)?.connection_id).toBe([...fake.connections.keys()][0]);
      await carrier.release(bought.carrier_number_id);
      expect(fake.numbers.size).toBe(0);
    } finally {
      await fake.close();
    }
  });
});
