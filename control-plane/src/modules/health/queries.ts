import type { Db } from '../../db/types.ts';

/** The cheapest round trip to the database, for the readiness probe. */
export async function ping(db: Db): Promise<void> {
  await db`select 1`;
}
