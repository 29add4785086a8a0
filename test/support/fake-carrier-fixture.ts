// What the carrier adapter tests (telnyx.test.ts, twilio.test.ts) share: a fresh fake carrier for each test, the
// adapters made against it closed after the test (before the fake), and how a test expects a carrier call to fail.
import { afterEach, beforeEach, expect } from 'vitest';
import { CarrierError } from '../../control-plane/src/modules/phone-numbers/carriers/types.ts';

interface Closable {
  close(): Promise<void>;
}

/**
 * Starts a fake carrier before each test of the file and hands it to `started`; after each test closes the
 * adapters given to `track` meanwhile, then the fake.
 */
export function useFakeCarrier<F extends Closable>(start: () => Promise<F>, started: (fake: F) => void): { track<A extends Closable>(adapter: A): A } {
  const made: Closable[] = [];
  let fake: F | undefined;
  beforeEach(async () => {
    fake = await start();
    started(fake);
  });
  afterEach(async () => {
    await Promise.all(made.splice(0).map((a) => a.close()));
    await fake?.close();
  });
  return {
    track(adapter) {
      made.push(adapter);
      return adapter;
    },
  };
}

/** The CarrierError `p` fails with (and a failed expectation when it resolves or fails otherwise). */
export async function carrierFailure(p: Promise<unknown>): Promise<CarrierError> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(CarrierError);
  return e as CarrierError;
}
