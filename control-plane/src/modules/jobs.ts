// Every pg-boss queue of the control plane. Each resource folder exports its queue definitions.
import type { QueueDef } from '../jobs/boss.ts';
import type { Services } from '../services.ts';
import { webhookQueues } from './webhooks/jobs.ts';
import { callQueues } from './calls/jobs.ts';
import { dialQueues } from './calls/dial.ts';
import { phoneNumberQueues } from './phone-numbers/jobs.ts';
import { inboundWatchQueues } from './phone-numbers/unanswered.ts';
import { retentionQueues } from './retention/jobs.ts';
// Knowledge bases
import { knowledgeQueues } from './knowledge-bases/jobs.ts';
import { agentTestQueues } from './agent-tests/jobs.ts';
import { campaignQueues } from './campaigns/scheduler.ts';

export function queueDefinitions(services: Services): QueueDef<never>[] {
  return [...webhookQueues(services), ...callQueues(services), ...knowledgeQueues(services), ...phoneNumberQueues(services), ...inboundWatchQueues(services), ...dialQueues(services), ...agentTestQueues(services), ...retentionQueues(services), ...campaignQueues(services)];
}
