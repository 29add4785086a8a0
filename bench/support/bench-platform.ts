// A control plane in the bench's own process, on its throwaway database (bench-database.ts), as the dialling
// benches (campaigns.ts, outbound.ts) run it: test mode, free ports, silent logs, no rate limits (a bench drives one
// organisation far past them), and an agent no worker runs (its model and voice settings are never used).
import { loadConfig, type Config } from '../../control-plane/src/config.ts';
import type { Sql } from '../../control-plane/src/db/connect.ts';
import type { BenchDatabase } from './bench-database.ts';

/** The config on `db`, with `extra` on top. */
export function benchPlatformConfig(db: BenchDatabase, extra: Record<string, unknown>): Config {
  return loadConfig({}, {
    NODE_ENV: 'test',
    DATABASE_URL: db.url,
    PORT: 0,
    METRICS_PORT: 0,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_SECOND: 0,
    RATE_LIMIT_ORG_PER_SECOND: 0,
    ...extra,
  } as never);
}

/** An agent of `orgId` on a bare model; its id. */
export async function insertBareAgent(sql: Sql, orgId: string): Promise<string> {
  const [model] = await sql`insert into llm_models (org_id, name, provider, model, temperature) values (${orgId}, 'm', 'openai', 'gpt-4o-mini', 0.7) returning id`;
  const [agent] = await sql`insert into agents (org_id, name, llm_id, transcriber, tts) values (${orgId}, 'a', ${model!.id}, '{}', '{}') returning id`;
  return agent!.id as string;
}
