// What a development platform says about its organisation when it starts (`npm start`, `npm run start:api`). The
// very first start makes the development organisation, its API key (printed this once: it is stored hashed) and a
// first agent (dev-seed.ts); every later start names the organisation without claiming to have made it. The stack
// (scripts/stack.ts) shows this block from the control plane's log, up to its `Docs:` line.
import type { Sql } from 'postgres';
import type { Config } from '../../config.ts';
import { ensureDevOrg } from './orgs.ts';
import { devOrg } from './queries.ts';
import { seedDevAgent } from './dev-seed.ts';
import { agentWarnings } from '../agents/warnings.ts';

export async function announceDevOrg(sql: Sql, config: Config, url: string): Promise<string> {
  const created = await ensureDevOrg(sql);
  if (!created) {
    const org = await devOrg(sql);
    if (!org) return '';
    return `\n  Development organisation: ${org.id} (made on the first start, which printed its API key)\n  Docs: ${url}/docs\n\n`;
  }
  const lines = ['', '  Development organisation created.', `  org_id:  ${created.org_id}`, `  API key: ${created.api_key}`];
  try {
    const agent = await seedDevAgent(sql, config, created.org_id);
    lines.push(`  Agent:   ${agent.agent_name} (${agent.agent_id}), model ${agent.model_id}: ${agent.uses}`);
    const [warning] = await agentWarnings(sql, config, created.org_id, { llm_id: agent.model_id, ...agent });
    lines.push('', warning ? `  It cannot talk yet: ${warning.message}` : `  Talk to it: ${url}/playground (sign in with the API key)`);
  } catch (err) {
    // The organisation stands without it: agents can be made through the API (docs/guides/getting-started.md, "Your first agent").
    lines.push(`  (No first agent: ${(err as Error).message})`);
  }
  lines.push(`  Try: curl -H "Authorization: Bearer ${created.api_key}" ${url}/v1/agents`, `  Docs: ${url}/docs`, '', '');
  return lines.join('\n');
}
