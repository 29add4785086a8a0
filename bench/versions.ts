// bench:versions — what resolving an agent version costs a call's start: the worker's config fetch
// (GET /internal/v1/calls/{id}/config) for a new call of an agent with versions (its version is chosen, recorded on
// the call and its snapshot read), against today's resolution of the same agent without versions (its row and its
// model's, read as they are), in one run on one embedded PostgreSQL and one in-process control plane.
//   fetch_versioned / fetch_unversioned: the whole config fetch over HTTP (auth, the call, its agent, tools with
//     their secrets, knowledge, provider keys, destination policy). The unversioned agent's fetch also asks for its
//     published version (one indexed read) before it falls back: a ceiling on today's cost, not today's exactly.
//   resolve_versioned / resolve_today: the agent part alone, in process: versionForCall + partsOfSnapshot, against
//     the code it replaced (agentAndModelForCall + toolConfigs), each on a fresh call.
// Arms alternate sample by sample, so drift in the machine's load falls on both. >= 100 samples each (default 300).
//   npm run bench:versions [-- SAMPLES]
import { randomBytes, randomUUID } from 'node:crypto';
import os from 'node:os';
import { loadConfig } from '../control-plane/src/config.ts';
import { startPlatform } from '../control-plane/src/platform.ts';
import { createLogger } from '../shared/logger.ts';
import { createOrgWithKey } from '../control-plane/src/modules/workspace/orgs.ts';
import { mintCapability } from '../control-plane/src/modules/calls/capability.ts';
import { agentAndModelForCall, getCallById, insertCall } from '../control-plane/src/modules/calls/queries.ts';
import { partsOfSnapshot, toolConfigs } from '../control-plane/src/modules/calls/service.ts';
import { versionForCall } from '../control-plane/src/modules/agent-versions/call-version.ts';
import { percentile } from '../shared/latency.ts';
import { startBenchDatabase } from './support/bench-database.ts';
import { writeResults } from './support/results.ts';

const SAMPLES = Number(process.argv[2] ?? 300);
const WORKER_TOKEN = 'bench-worker-token-0123456789abcdef0123';
const round = (x: number) => +x.toFixed(3);
const stats = (v: number[]) => ({
  n: v.length,
  p50_ms: round(percentile(v, 50)),
  p95_ms: v.length >= 100 ? round(percentile(v, 95)) : null,
  mean_ms: round(v.reduce((a, b) => a + b, 0) / v.length),
});

const db = await startBenchDatabase('versions');
const config = loadConfig(
  {},
  {
    DATABASE_URL: db.url,
    PORT: 0,
    METRICS_PORT: 0,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_SECOND: 0,
    RATE_LIMIT_ORG_PER_SECOND: 0,
    WORKER_RATE_LIMIT_PER_SECOND: 0,
    AUTH_FAILURES_PER_MINUTE_PER_IP: 0,
    STANDBY_AGENTS: 0,
    JOBS_ENABLED: false,
    NODE_ENV: 'production',
    MASTER_KEY: randomBytes(32).toString('base64'),
    WORKER_TOKEN,
    PUBLIC_BASE_URL: 'http://127.0.0.1',
    DATA_DIR: '.data/bench',
    LIVEKIT_API_KEY: 'APIbench',
    LIVEKIT_API_SECRET: randomBytes(24).toString('hex'),
  },
);
const platform = await startPlatform(config, { log: createLogger('control-plane', 'silent') });
const { sql } = platform.services;
try {
  const org = await createOrgWithKey(sql, 'bench');
  const api = async (method: string, p: string, body?: unknown) => {
    const res = await fetch(platform.url + p, { method, headers: { authorization: `Bearer ${org.api_key}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const json = (await res.json()) as any;
    if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
  // An agent as production ones are: a prompt, two function tools (with sealed headers and secrets to open).
  const tools = [];
  for (const name of ['book_slot', 'lookup_patient']) {
    tools.push(
      (
        await api('POST', '/v1/tools', {
          type: 'function',
          name,
          description: `The ${name} tool`,
          url: `https://tools.example.com/${name}`,
          method: 'POST',
          parameters: { type: 'object', properties: { day: { type: 'string' } } },
          headers: { authorization: 'Bearer secret-value' },
        })
      ).id as string,
    );
  }
  const model = await api('POST', '/v1/models', { name: 'm', model: 'gpt-4o-mini', system_prompt: 'You are the receptionist of {{company}}.', tool_ids: tools });
  const versioned = (await api('POST', '/v1/agents', { name: 'Front desk', llm_id: model.id, first_message: 'Hello', job_description: 'Receptionist', dynamic_variables: { company: 'Acme' } })).id as string;
  await api('PATCH', `/v1/agents/${versioned}`, { first_message: 'Hello there' });
  // The same agent without versions: today's resolution path (a row written as before versions existed).
  const [copy] = await sql<{ id: string }[]>`
    insert into agents (org_id, name, llm_id, transcriber, tts, first_message, job_description, dynamic_variables, turn_taking)
    select org_id, name, llm_id, transcriber, tts, first_message, job_description, dynamic_variables, turn_taking from agents where id = ${versioned}
    returning id`;
  const unversioned = copy!.id;

  const newCall = async (agentId: string) => {
    const id = randomUUID();
    await insertCall(sql, {
      id,
      org_id: org.org_id,
      agent_id: agentId,
      type: 'inbound',
      direction: 'inbound',
      to_number: '+14155550100',
      from_number: `+1415${String(Math.floor(Math.random() * 1e7)).padStart(7, '0')}`,
      room_name: `call-${id}`,
      variables: {},
      metadata: {},
      overrides: {},
      webhook_url: null,
    });
    return id;
  };
  const fetchConfig = async (agentId: string) => {
    const id = await newCall(agentId);
    const headers = { authorization: `Bearer ${WORKER_TOKEN}`, 'x-call-capability': mintCapability(platform.services, id) };
    const t0 = performance.now();
    const res = await fetch(`${platform.url}/internal/v1/calls/${id}/config`, { headers });
    const body = (await res.json()) as { prompt?: string };
    const ms = performance.now() - t0;
    if (res.status !== 200 || !body.prompt?.includes('Acme')) throw new Error(`config fetch answered ${res.status}`);
    return ms;
  };
  const resolveVersioned = async () => {
    const call = (await getCallById(sql, await newCall(versioned)))!;
    const t0 = performance.now();
    const v = await versionForCall(sql, call);
    await partsOfSnapshot(platform.services, sql, call.org_id, call.agent_id, v!.snapshot);
    return performance.now() - t0;
  };
  const resolveToday = async () => {
    const call = (await getCallById(sql, await newCall(unversioned)))!;
    const t0 = performance.now();
    const { model: m } = await agentAndModelForCall(sql, call.agent_id);
    await toolConfigs(platform.services, sql, call.org_id, m!.tool_ids);
    return performance.now() - t0;
  };

  // Warm-up: JIT, the pool's connections, the rows in shared buffers.
  for (let i = 0; i < 30; i++) {
    await fetchConfig(versioned);
    await fetchConfig(unversioned);
    await resolveVersioned();
    await resolveToday();
  }
  const loadBefore = os.loadavg();
  const arms: Record<string, number[]> = { fetch_versioned: [], fetch_unversioned: [], resolve_versioned: [], resolve_today: [] };
  for (let i = 0; i < SAMPLES; i++) {
    // Alternate which arm of each pair goes first.
    if (i % 2) {
      arms.fetch_versioned!.push(await fetchConfig(versioned));
      arms.fetch_unversioned!.push(await fetchConfig(unversioned));
      arms.resolve_versioned!.push(await resolveVersioned());
      arms.resolve_today!.push(await resolveToday());
    } else {
      arms.fetch_unversioned!.push(await fetchConfig(unversioned));
      arms.fetch_versioned!.push(await fetchConfig(versioned));
      arms.resolve_today!.push(await resolveToday());
      arms.resolve_versioned!.push(await resolveVersioned());
    }
  }
  const summary = Object.fromEntries(Object.entries(arms).map(([k, v]) => [k, stats(v)])) as Record<string, ReturnType<typeof stats>>;
  const delta = (a: string, b: string) => ({ p50_ms: round(summary[a]!.p50_ms - summary[b]!.p50_ms), p95_ms: round(summary[a]!.p95_ms! - summary[b]!.p95_ms!) });
  const result = {
    samples_per_arm: SAMPLES,
    setup: 'in-process control plane (production config, jobs off) and embedded PostgreSQL on the same machine; agent with a prompt, job description, variables and two function tools with sealed headers',
    load_average_during: { before: loadBefore.map((l) => +l.toFixed(2)), after: os.loadavg().map((l) => +l.toFixed(2)) },
    arms: summary,
    config_fetch_difference: delta('fetch_versioned', 'fetch_unversioned'),
    resolution_difference: delta('resolve_versioned', 'resolve_today'),
  };
  console.log(JSON.stringify(result, null, 2));
  writeResults('versions', result);
} finally {
  await platform.close();
  await db.stop();
}
