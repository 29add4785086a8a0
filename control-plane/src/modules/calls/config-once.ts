// A call's session config holds the organisation's decrypted provider keys: it is handed out once per call (the
// inbound open, a standby agent's claim, or the first GET .../config with the dispatch's ticket), to a live call
// only, with the call's capability in it. Whoever replays a request later (the worker token and a logged room, a
// ticket read from LiveKit's dispatch list or from a log) gets a 409 and no keys (docs/security.md, issue 50). The
// holder of the capability (which only that one hand-out gave) may ask again: it proves it is the one served.
import type { Db } from '../../db/types.ts';
import type { Services } from '../../services.ts';
import { conflict } from '../../http/errors.ts';
import { mintCapability, verifyCapability } from './capability.ts';
import { resolveCallConfig } from './service.ts';
import { claimConfig } from './queries.ts';

export { claimConfig };

/**
 * The call's config with its capability: for the call's capability, as often as asked; for anything else (a ticket,
 * the inbound open), once, and a 409 after that.
 */
export async function configOnce(services: Services, db: Db, callId: string, presented?: string) {
  if (presented && verifyCapability(services, callId, presented)) return { ...(await resolveCallConfig(services, db, callId)), capability: presented };
  if (!(await claimConfig(db, callId))) throw conflict("This call's config was already handed out, or the call has ended");
  const config = await resolveCallConfig(services, db, callId);
  return { ...config, capability: mintCapability(services, callId) };
}
