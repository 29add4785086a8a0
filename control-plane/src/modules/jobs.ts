// Every pg-boss queue of the control plane. Each resource folder exports its queue definitions.
import type { QueueDef } from '../jobs/boss.ts';
import type { Services } from '../services.ts';

export function queueDefinitions(_services: Services): QueueDef<never>[] {
  return [];
}
