// What a squad's call keeps of its hand-offs (calls.handoffs, the call.handoff event) and of each agent's latency.
import type { Db } from '../../db/types.ts';
import { conflict, ValidationFailure } from '../../http/errors.ts';
import type { CallLatency, HandoffReport } from '../../../../schemas/internal.ts';
import { emitEvent } from '../events/emit.ts';
import { isFinal } from '../calls/lifecycle.ts';
import { retentionOfCall, type CallRow } from '../calls/queries.ts';
import { retainFreeText } from '../../../../shared/privacy.ts';
import { appendCallHandoff, setCallAgentLatency, squadBounds } from './queries.ts';

/**
 * Records a hand-off the worker reports, and emits `call.handoff`. The worker bounds hand-offs by the squad's
 * max_handoffs; this checks it again, and that both agents are members, so a worker cannot write anything else
 * on the call's record.
 */
export async function recordHandoff(db: Db, call: CallRow, h: Omit<HandoffReport, 'seq'>): Promise<void> {
  if (isFinal(call.status)) throw conflict('The call has already ended');
  if (!call.squad_id) throw conflict('The call did not start on a squad');
  const squad = await squadBounds(db, call.squad_id);
  const members = new Set(squad?.agent_ids ?? []);
  const problems = (['from_agent_id', 'to_agent_id'] as const)
    .filter((k) => !members.has(h[k]))
    .map((k) => ({ loc: ['body', k], msg: "Not an agent of the call's squad", type: 'value_error', input: h[k] }));
  if (problems.length) throw new ValidationFailure(problems);
  const done = call.handoffs ?? [];
  if (done.length >= (squad?.max_handoffs ?? 0)) throw conflict("The call has made its squad's max_handoffs hand-offs");
  // The reason is the model's free text: the call's data retention applies to it, in the record and the event.
  const entry = { from_agent_id: h.from_agent_id, to_agent_id: h.to_agent_id, reason: retainFreeText(await retentionOfCall(db, call.id), h.reason), context: h.context, at: h.at };
  await appendCallHandoff(db, call.id, entry);
  await emitEvent(db, {
    orgId: call.org_id,
    type: 'call.handoff',
    callId: call.id,
    agentId: call.agent_id,
    webhookUrl: call.webhook_url,
    payload: { call_id: call.id, agent_id: call.agent_id, squad_id: call.squad_id, ...entry, index: done.length + 1 },
  });
}

/** Each agent's latency over its own turns (a squad's call only). */
export async function setAgentLatency(db: Db, call: CallRow, latency: Record<string, CallLatency>): Promise<void> {
  if (!call.squad_id) return;
  await setCallAgentLatency(db, call.id, latency);
}
