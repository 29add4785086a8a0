// Whether a call may store a recording (issue 50, low): the upload route used to refuse only a `declined`
// consent, so a capability (held by the worker, or leaked from it) could store audio for a call whose agent
// never records, before any consent was given, or over a finished call's recording. The rules, in the order
// the upload route applies them: the call's agent records (enable_recording, with the call's overrides and its
// version); the data retention keeps content; the consent the worker reported fits the agent's consent mode;
// and the call has no recording yet (one per call: a second PUT never replaces the first).
import type { Services } from '../../services.ts';
import type { Db } from '../../db/types.ts';
import type { AgentRow } from '../agents/queries.ts';
import { versionForCall } from '../agent-versions/call-version.ts';
import { agentOfSnapshot } from '../agent-versions/snapshot.ts';
import { agentAndModelForCall, retentionOfCall, type CallRow } from './queries.ts';
import { withOverrides } from './service.ts';

export type RecordingRefusal = { status: 403 | 409; message: string };

/** Consents that let a recording be stored, by the agent's recording_consent mode. */
const CONSENTS: Record<string, readonly string[]> = {
  none: ['none', 'announced', 'accepted'],
  announce: ['announced', 'accepted'],
  ask: ['accepted'],
};

/** Null when the call may store its recording now; else why not (403: never for this call, 409: not again). */
export async function recordingRefusal(_services: Services, db: Db, call: CallRow): Promise<RecordingRefusal | null> {
  const version = await versionForCall(db, call);
  const base = version ? ({ id: call.agent_id, ...agentOfSnapshot(version.snapshot) } as unknown as AgentRow) : (await agentAndModelForCall(db, call.agent_id)).agent;
  if (!base) return { status: 403, message: 'Recording is off for this call: it has no agent' };
  const agent = withOverrides(base, call.overrides ?? {});
  if (!agent.enable_recording) return { status: 403, message: "Recording is off for this call: its agent's enable_recording is false" };
  if ((await retentionOfCall(db, call.id)) === 'no_content') return { status: 403, message: 'Recording is off for this call: its data retention is no_content' };
  const mode = agent.recording_consent ?? 'none';
  const consent = call.recording_consent;
  if (consent === 'declined') return { status: 403, message: 'Recording is off for this call: the caller did not consent' };
  // The worker reports the consent with the end of the call, before it uploads: none reported is no consent.
  if (!consent || !(CONSENTS[mode] ?? CONSENTS.ask!).includes(consent)) {
    return { status: 403, message: `Recording is off for this call: its consent (${consent ?? 'not reported'}) does not allow it (recording_consent ${mode})` };
  }
  if (call.recording_key) return { status: 409, message: 'The call already has its recording; it is never replaced' };
  return null;
}
