// Agent tests (docs/benchmarks.md, "Agent tests"): the wall time of a suite of 10 scripted scenarios, run in text
// mode and in voice mode, against the scenarios' own conversation time measured in the same run (each result's
// `duration_seconds`: text mode, the models' and tools' time; voice mode, the simulated caller's time in the
// room, from joining to leaving). The overhead is what a run adds around its conversations: the queue, the
// claims, the call's creation, room and dispatch, the wait for the worker's report, the evaluation.
// The real supervisor starts LiveKit, the control plane and one media worker; the agent speaks with festival
// and hears with pocketsphinx; its LLM is the OpenAI-compatible stand-in (answers after 20 ms), so the text-mode
// figures are a floor: a real model's time would add to the conversation, not to the overhead.
// Usage: node bench/agent-tests.ts [scenarios=10] [concurrency=1]   (npm run bench:agent-tests)
import os from 'node:os';
import type { RunningStack } from '../scripts/stack/supervisor.ts';
import { createBenchAgent, createBenchModel, startBenchStack } from './support/bench-stack.ts';
import { startFakeOpenAI } from '../test/support/fake-openai.ts';
import { writeResults } from './support/results.ts';
import { api, devKey } from './support/room-call.ts';

const SCENARIOS = Number(process.argv[2] ?? 10);
const CONCURRENCY = Number(process.argv[3] ?? 1);
// One line per scenario: each voice scenario is a call of its own (join, greeting, the line, the answer, hang-up).
const LINES = ['Hello, I would like to book an appointment.'];

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;
const load = () => os.loadavg().map((l) => round(l, 2));
const log = (m: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${m}\n`);

interface ModeResult {
  mode: 'text' | 'voice';
  scenarios: number;
  concurrency: number;
  wall_seconds: number;
  conversation_seconds: number;
  /** (wall - conversation) / conversation, with the run's scenarios one at a time (concurrency 1). */
  overhead_percent: number | null;
  per_scenario: { conversation_seconds: number; wall_seconds: number; status: string }[];
  load_average: { start: number[]; end: number[] };
}

async function runSuite(stack: RunningStack, key: string, agentId: string, suiteId: string, mode: 'text' | 'voice'): Promise<ModeResult> {
  const start = load();
  const t0 = performance.now();
  const created = await api(stack, key, 'POST', `/v1/agents/${agentId}/test-runs`, { suite_id: suiteId, mode });
  if (created.status !== 201) throw new Error(`run answered ${created.status}: ${JSON.stringify(created.body)}`);
  let run: any;
  for (;;) {
    run = (await api(stack, key, 'GET', `/v1/test-runs/${created.body.id}`)).body;
    if (run.status === 'completed' || run.status === 'canceled') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const wall = (performance.now() - t0) / 1000;
  const per = (run.results as any[]).map((r) => ({
    conversation_seconds: round(r.duration_seconds ?? 0, 3),
    wall_seconds: round((Date.parse(r.ended_at) - Date.parse(r.started_at)) / 1000, 3),
    status: r.status as string,
  }));
  const conversation = per.reduce((a, r) => a + r.conversation_seconds, 0);
  log(`${mode}: ${per.filter((r) => r.status === 'passed').length}/${per.length} passed, wall ${round(wall)} s, conversation ${round(conversation)} s`);
  return {
    mode,
    scenarios: per.length,
    concurrency: CONCURRENCY,
    wall_seconds: round(wall, 2),
    conversation_seconds: round(conversation, 2),
    overhead_percent: CONCURRENCY === 1 && conversation > 0 ? round(((wall - conversation) / conversation) * 100) : null,
    per_scenario: per,
    load_average: { start, end: load() },
  };
}

async function main() {
  const llm = await startFakeOpenAI({ ttftMs: 20 });
  llm.setResponder((req) => {
    const last = req.messages.at(-1)!;
    return { text: last.role === 'user' ? 'Certainly, that is noted.' : 'How can I help?' };
  });
  let stack: RunningStack | null = null;
  try {
    stack = await startBenchStack({
      // A busy machine needs longer for the embedded PostgreSQL and the migrations.
      readyTimeoutMs: 300_000,
      env: {
        ANALYSIS_MODE: 'extractive',
        AGENT_TEST_CONCURRENCY: String(CONCURRENCY),
        MAX_CONCURRENT_CALLS: String(CONCURRENCY + 2),
        JOB_INIT_TIMEOUT_MS: '60000',
      },
    });
    const key = await devKey(stack);
    const agentId = await createBenchAgent(stack, key, {
      name: 'Bench',
      llm_id: await createBenchModel(stack, key, llm.url),
      transcriber: { provider: 'local' },
      tts: { provider: 'local', model: 'festival', voice_id: 'us-slt-hts' },
      first_message: 'Hello, Acme Dental.',
      silence_timeout_seconds: 120,
    });
    const ids: string[] = [];
    for (let i = 0; i < SCENARIOS; i++) {
      const s = await api(stack, key, 'POST', '/v1/test-scenarios', {
        name: `scenario ${i + 1}`,
        script: LINES.map((say) => ({ say })),
        max_turns: LINES.length,
        max_duration_seconds: 120,
        expectations: [{ type: 'transcript_contains', text: 'noted', role: 'agent' }],
      });
      ids.push(s.body.id);
    }
    const suite = await api(stack, key, 'POST', '/v1/test-suites', { name: 'bench', agent_id: agentId, scenario_ids: ids });
    if (suite.status !== 201) throw new Error(`suite answered ${suite.status}: ${JSON.stringify(suite.body)}`);

    // Warm-up, not counted: one voice scenario (the worker's first job, festival's first voice load).
    const warm = await api(stack, key, 'POST', '/v1/test-suites', { name: 'warm', agent_id: agentId, scenario_ids: [ids[0]] });
    await runSuite(stack, key, agentId, warm.body.id, 'voice');

    const text = await runSuite(stack, key, agentId, suite.body.id, 'text');
    const voice = await runSuite(stack, key, agentId, suite.body.id, 'voice');
    const results = { llm: 'OpenAI-compatible stand-in, 20 ms to first token (a floor for text mode)', script_lines: LINES.length, text, voice };
    console.log(JSON.stringify(results, null, 2));
    writeResults('agent-tests', { results });
  } finally {
    await stack?.stop();
    await llm.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
