// SQL of the simulated carrier's termination edge.
import type { Db } from '../../../db/types.ts';

/** The ingress (`udp:host:port`) of a simulated number a customer holds, or null. */
export async function simulatedIngress(db: Db, phoneNumber: string): Promise<string | null> {
  const [row] = await db<{ ingress: string | null }[]>`
    select ingress from simulated_numbers where phone_number = ${phoneNumber} and purchased_at is not null`;
  return row?.ingress ?? null;
}
