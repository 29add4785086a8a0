// Agent tests on the platform's money (docs/decisions/sec2-agent-test-platform-cap.md). A run whose agent model
// or judge would use a platform provider key (or the operator's local model), and every voice-mode run (its call
// runs on the platform's workers, whose speech keys may be the platform's), counts each conversation against
// AGENT_TEST_PLATFORM_DAILY_CONVERSATIONS per organisation and UTC day; past it, the rest of the run ends in
// error saying so. An organisation whose models run on its own keys is not counted.
import type { Services } from '../../services.ts';
import type { ProviderKeys } from '../../../../shared/providers.ts';
import { chooseTarget } from '../calls/analysis.ts';
export { chargeConversation } from './queries.ts';

export interface SpendModel {
  provider: string;
  base_url: string | null;
}

/** True when a conversation of this run may spend the platform's keys or local model. */
export async function spendsPlatform(services: Services, run: { org_id: string; agent_id: string; mode: string }, model: SpendModel, keys: Partial<ProviderKeys>): Promise<boolean> {
  if (run.mode === 'voice') return true;
  const own = (provider: string) => (keys as Record<string, string | undefined>)[provider] ?? null;
  // A tenant's base_url never gets a platform key (shared/providers.ts, llmEndpoint); no base_url and no own key
  // means the platform's key; `local` is the operator's model server.
  if (model.provider === 'local' || (!model.base_url && !own(model.provider))) return true;
  if (services.config.ANALYSIS_MODE === 'extractive') return false;
  const judge = await chooseTarget(services, { org_id: run.org_id, agent_id: run.agent_id }).catch(() => null);
  return judge !== null && !judge.tenant && (judge.apiKey === null || judge.apiKey !== own(judge.provider));
}

/** The error of a scenario the cap stopped. */
export function capReachedError(cap: number): string {
  return cap <= 0
    ? "agent tests run only on the organisation's own provider keys here: add a credential (POST /v1/integrations) for the agent's model provider"
    : `the organisation's daily limit of ${cap} test conversations on the platform's provider keys is reached: add your own provider credential, or run again tomorrow (UTC)`;
}
