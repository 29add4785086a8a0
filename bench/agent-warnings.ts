// Benchmark: what an agent's `warnings` cost its single-agent answers (GET, POST, PATCH /v1/agents/{id}): the one
// round trip and the checks of modules/agents/warnings.ts, against the agent read the route made before them
// (getAgentWithPrompt), the first version's two queries (the org's credentials, then the model) and the whole
// authenticated GET, in one run on one embedded PostgreSQL. Sequential and interleaved (read, warnings, two queries,
// GET, ...), so all see the same cache and machine load.
//   npm run bench:warnings   [BENCH_SAMPLES=400]
import { loadConfig } from '../control-plane/src/config.ts';
import { startPlatform } from '../control-plane/src/platform.ts';
import { createOrgWithKey } from '../control-plane/src/modules/workspace/orgs.ts';
import { credentialProviders, getAgentWithPrompt } from '../control-plane/src/modules/agents/queries.ts';
import { agentWarnings, platformReadinessEnv } from '../control-plane/src/modules/agents/warnings.ts';
import { modelProblems, speechProblems } from '../shared/agent-problems.ts';
import { createLogger } from '../shared/logger.ts';
import { nearestRank, startBenchDatabase } from './support/bench-database.ts';
import { writeResults } from './support/results.ts';

const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 400);
const WARMUP = 20;

const db = await startBenchDatabase('warnings');
try {
  const config = loadConfig({}, { NODE_ENV: 'test', DATABASE_URL: db.url, PORT: 0, METRICS_PORT: 0, LOG_LEVEL: 'silent', RATE_LIMIT_PER_SECOND: 0, RATE_LIMIT_ORG_PER_SECOND: 0, STANDBY_AGENTS: 0, JOBS_ENABLED: false });
  const platform = await startPlatform(config, { log: createLogger('bench', 'silent') });
  try {
    const { sql } = platform.services;
    const org = await createOrgWithKey(sql, 'bench');
    const ask = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(platform.url + path, {
        method,
        headers: { authorization: `Bearer ${org.api_key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return (await res.json()) as { id: string; warnings?: unknown[] };
    };
    // An organisation with credentials of its own and many agents, one of which is read: a model without a key
    // here and cloud speech, so that every check runs and finds something to say.
    for (const provider of ['anthropic', 'deepgram', 'cartesia']) await ask('POST', '/v1/integrations', { name: provider, provider, api_key: `${provider}-bench-key-0123456789` });
    const model = await ask('POST', '/v1/models', { name: 'm', model: 'gpt-4o-mini' });
    for (let i = 0; i < 200; i++) await ask('POST', '/v1/agents', { name: `a${i}`, llm_id: model.id, transcriber: { provider: 'local' }, tts: { provider: 'local' } });
    const agent = await ask('POST', '/v1/agents', { name: 'read', llm_id: model.id, transcriber: { provider: 'deepgram' }, tts: { provider: 'elevenlabs', voice_id: '21m00Tcm4TlvDq8ikWAM' } });
    if (!Array.isArray(agent.warnings) || agent.warnings.length !== 2) throw new Error(`expected two warnings, got ${JSON.stringify(agent.warnings)}`);

    const times = { read: [] as number[], warnings: [] as number[], twoQueries: [] as number[], get: [] as number[] };
    const row = (await getAgentWithPrompt(sql, org.org_id, agent.id))!;
    const env = platformReadinessEnv(config);
    // The first version: the org's credentials, then the model, one after the other.
    const twoQueries = async () => {
      const keys = await credentialProviders(sql, org.org_id);
      const [m] = await sql<{ provider: string; base_url: string | null }[]>`select provider, base_url from llm_models where id = ${row.llm_id} and org_id = ${org.org_id}`;
      return [...(m ? modelProblems(m, keys, env, 'agent') : []), ...speechProblems(row, keys, env)];
    };
    for (let i = 0; i < WARMUP + SAMPLES; i++) {
      let t = performance.now();
      await getAgentWithPrompt(sql, org.org_id, agent.id);
      const read = performance.now() - t;
      t = performance.now();
      await agentWarnings(sql, config, org.org_id, row);
      const warnings = performance.now() - t;
      t = performance.now();
      await twoQueries();
      const two = performance.now() - t;
      t = performance.now();
      await ask('GET', `/v1/agents/${agent.id}`);
      const get = performance.now() - t;
      if (i < WARMUP) continue;
      times.read.push(read);
      times.warnings.push(warnings);
      times.twoQueries.push(two);
      times.get.push(get);
    }
    const summary = (xs: number[]) => ({ p50_ms: nearestRank(xs, 50), p95_ms: nearestRank(xs, 95), samples: xs.length });
    const result = {
      samples: SAMPLES,
      agent_read: summary(times.read),
      warnings: summary(times.warnings),
      warnings_two_queries_before: summary(times.twoQueries),
      get_agent: summary(times.get),
      warnings_share_of_get_p50: Math.round((nearestRank(times.warnings, 50) / nearestRank(times.get, 50)) * 1000) / 1000,
    };
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    writeResults('agent-warnings', result);
  } finally {
    await platform.close();
  }
} finally {
  await db.stop();
}
