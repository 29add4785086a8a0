// Runs a test run (the pg-boss job of agent-tests/jobs.ts): its scenarios, a few at a time, each a conversation
// (text mode: conversation.ts; voice mode: voice.ts) checked against its expectations, then the run's counts and `test_run.completed`.
//
// Concurrency: an organisation has at most min(AGENT_TEST_CONCURRENCY, max_concurrent_calls) conversations
// running across all its runs (claimNext counts them under an advisory lock); the rest wait their turn.
// Text-mode conversations use no room, worker or call slot, so they never take capacity from real calls. A
// voice-mode conversation (voice.ts) is a real call on a worker: it starts only while the organisation's real
// calls leave room under max_concurrent_calls, and is never counted against them.
//
// Cancel: the cancel route marks the run canceled; this process learns it from its own registry at once, or
// from a poll of the run's status (another process), and aborts the conversations in flight, which keep what
// was said so far.
import type { Services } from '../../services.ts';
import { createGuardedAgent } from '../../../../shared/ssrf.ts';
import { effectiveSystemPrompt } from '../../../../shared/prompt.ts';
import { interpolate, mergeVariables } from '../../../../shared/template.ts';
import type { ToolConfig } from '../../../../schemas/internal.ts';
import type { ResultStatus, ScenarioSnapshot } from '../../../../schemas/agent-tests.ts';
import { resolveProviderKeys } from '../credentials/service.ts';
import { knowledgeConfigFor } from '../knowledge-bases/search.ts';
import { partsOfSnapshot, toolConfigs, type AgentParts } from '../calls/service.ts';
import { snapshotOf } from '../agent-versions/queries.ts';
import { ANALYSIS_PROMPT, normaliseOutcome } from '../calls/analysis.ts';
import { emitEvent } from '../events/emit.ts';
import {
  agentAndModel,
  cancelResults,
  claimNext,
  claimNotification,
  completeRun,
  errorPending,
  getRunById,
  hasPending,
  markRunStarted,
  orgConcurrencyLimit,
  requeueRunning,
  resultCounts,
  runStatus,
  saveResult,
  setRunCounts,
  type ResultRow,
  type RunRow,
} from './queries.ts';
import { ConversationError, latencyStats, TextConversation, type AgentSide } from './conversation.ts';
import { evaluate, transcriptText, type JudgeAccess } from './expectations.ts';
import { agentLlm, judgeFor, type AgentLlm, type ChatTool } from './models.ts';
import { chatTools, runTool, toolSsrfOptions } from './tools.ts';
import { VoiceConversation } from './voice.ts';
import { planCallerSpeech, type OrgKeys } from './caller-speech.ts';
import { countLiveCalls } from '../calls/queries-admission.ts';
import { stripCodeFence } from '../../../../shared/text-caps.ts';
import type { Db } from '../../db/types.ts';
import { capReachedError, chargeConversation, spendsPlatform } from './platform-spend.ts';
import { enqueueRun } from './queue.ts';

/** How often a run in progress checks whether another process canceled it, and waits for a free slot (ms). */
const POLL_MS = 300;
/** As the worker's: the stuffed knowledge base goes at the end of the system prompt (media-worker/src/session/agent.ts). */
const KNOWLEDGE_HEADER = 'Relevant knowledge base excerpts (use them to answer; say so if they do not cover the question):';

/** Runs in progress in this process, so a cancel here aborts them at once. */
const inProcess = new Map<string, AbortController>();

export function abortRun(runId: string): void {
  inProcess.get(runId)?.abort(new Error('the run was canceled'));
}

interface Prepared {
  agent: AgentParts['agent'];
  /** The version under test; a voice scenario's call is pinned to it. */
  agentVersion: number | null;
  basePrompt: string;
  tools: ToolConfig[];
  chatTools: ChatTool[];
  llm: AgentLlm;
  judge: JudgeAccess;
  /** The org's provider keys: a voice test's simulated caller speaks with its speech providers' (caller-speech.ts). */
  keys: OrgKeys;
  /** Its conversations may spend the platform's keys: each counts against the daily cap (platform-spend.ts). */
  platform: boolean;
}

/** Everything a conversation of this run needs from the agent, or the reason the run cannot hold any. */
async function prepare(services: Services, run: RunRow): Promise<Prepared | { error: string }> {
  // The version under test, as a call pinned to it would run it (agent-versions); a run older than versions
  // tests the agent as it is.
  const found = run.agent_version !== null ? await versionParts(services, run) : await liveParts(services, run);
  if (!found) return { error: 'the agent or its LLM model no longer exists' };
  const { agent, model, tools, knowledgeBaseIds } = found;
  const keys = await resolveProviderKeys(services.sql, services.secrets, run.org_id);
  let llm: AgentLlm;
  try {
    llm = agentLlm(services, model, keys);
  } catch (err) {
    return { error: `the agent's LLM cannot be used: ${(err as Error).message}` };
  }
  const knowledge = await knowledgeConfigFor(services.sql, run.org_id, knowledgeBaseIds, services.config.KB_STUFF_MAX_TOKENS);
  let basePrompt = effectiveSystemPrompt(agent.job_description, model.system_prompt) ?? '';
  if (knowledge.mode === 'stuff' && knowledge.stuffed_context?.trim())
    basePrompt += `\n\n# Knowledge\n${KNOWLEDGE_HEADER}\n${knowledge.stuffed_context.trim()}`;
  const j = await judgeFor(services, run.org_id, run.agent_id);
  const judge: JudgeAccess = 'unavailable' in j ? { llm: null, unavailable: j.unavailable } : { llm: j.llm, unavailable: null };
  const platform = await spendsPlatform(services, run, model, keys);
  return { agent, basePrompt, tools, chatTools: chatTools(tools), llm, judge, keys, agentVersion: run.agent_version, platform };
}

/** The run's agent version: its fields, model, tools and knowledge bases as that version holds them. */
async function versionParts(services: Services, run: RunRow): Promise<AgentParts | null> {
  const agent = await agentAndModel(services.sql, run.org_id, run.agent_id);
  const snapshot = agent ? await snapshotOf(services.sql, run.agent_id, run.agent_version!) : null;
  return snapshot ? partsOfSnapshot(services, services.sql, run.org_id, run.agent_id, snapshot) : null;
}

async function liveParts(services: Services, run: RunRow): Promise<AgentParts | null> {
  const found = await agentAndModel(services.sql, run.org_id, run.agent_id);
  if (!found) return null;
  const { agent, model } = found;
  return {
    agent,
    model: { id: agent.llm_id, name: '', ...model, temperature: model.temperature ?? 1 },
    tools: await toolConfigs(services, services.sql, run.org_id, model.tool_ids),
    knowledgeBaseIds: model.knowledge_base_ids,
  };
}

async function runScenario(services: Services, run: RunRow, row: ResultRow, p: Prepared | { error: string }, signal: AbortSignal): Promise<void> {
  const s: ScenarioSnapshot = row.scenario;
  const empty = { expectations: [], messages: [], tool_calls: [], ended_by: null, end_reason: null, outcome: null, turns: 0, duration_ms: null, latency: null };
  if ('error' in p) {
    await saveResult(services.sql, row.id, { ...empty, status: 'error', error: p.error });
    return;
  }
  const variables = mergeVariables(p.agent.dynamic_variables ?? {}, s.variables ?? {});
  const ssrf = toolSsrfOptions(services.config);
  const http = createGuardedAgent({ ...ssrf, connectionsPerOrigin: 4 });
  const side: AgentSide = {
    prompt: interpolate(p.basePrompt, variables),
    firstMessage: p.agent.first_message ? interpolate(p.agent.first_message, variables) || null : null,
    endCallPhrases: p.agent.end_call_phrases,
    silenceTimeoutSeconds: p.agent.silence_timeout_seconds,
    maxDurationSeconds: p.agent.max_duration_seconds,
    tools: p.tools,
    chatTools: p.chatTools,
    llm: p.llm,
    runTool: (name, args, id) => runTool(name, args, id, p.tools, s.tool_mocks, { runId: run.id, scenarioId: s.id, ssrf, agent: http }),
  };
  const convo =
    run.mode === 'voice'
      ? new VoiceConversation(
          services,
          { runId: run.id, resultId: row.id, orgId: run.org_id },
          s,
          {
            agentId: p.agent.id,
            agentVersion: p.agentVersion,
            firstMessage: side.firstMessage,
            maxDurationSeconds: p.agent.max_duration_seconds,
            speech: planCallerSpeech(p.agent, p.keys, s.persona !== null),
            keys: p.keys,
          },
          p.judge.llm,
          signal,
        )
      : new TextConversation(s, side, p.judge.llm, signal);
  const partial = () => ({ messages: convo.messages, tool_calls: convo.toolCalls, turns: convo.turns, duration_ms: Math.round(convo.clockMs) });
  try {
    let ending;
    try {
      ending = await convo.run();
    } catch (err) {
      if (signal.aborted) throw err;
      if (!(err instanceof ConversationError)) services.log.warn({ err, run_id: run.id, scenario_id: s.id }, 'agent test conversation failed');
      await saveResult(services.sql, row.id, {
        ...empty,
        ...partial(),
        latency: { e2e: latencyStats(convo.latencies) },
        status: 'error',
        error: err instanceof ConversationError ? err.message : `the conversation failed: ${(err as Error).message}`,
      });
      return;
    }
    const stats = latencyStats(convo.latencies);
    const outcome = s.expectations.some((e) => e.type === 'outcome_equals') && p.judge.llm ? await labelOutcome(p.judge.llm, convo, signal) : null;
    const results = await evaluate(
      s.expectations,
      { messages: convo.messages, toolCalls: convo.toolCalls, ending, latencyP50Ms: stats.p50_ms, latencySamples: stats.samples, outcome },
      p.judge,
      signal,
    );
    const status: ResultStatus = results.every((r) => r.passed) ? 'passed' : 'failed';
    await saveResult(services.sql, row.id, {
      ...partial(),
      status,
      expectations: results,
      ended_by: ending.by,
      end_reason: ending.reason,
      outcome,
      latency: { e2e: stats },
      error: null,
    });
  } catch (err) {
    if (!signal.aborted) throw err;
    await cancelResults(services.sql, run.id, { id: row.id, ...partial() });
  } finally {
    await http.close().catch(() => {});
  }
}

/** The analysis model's outcome label for the conversation (post-call analysis's prompt); null if it fails. */
async function labelOutcome(
  llm: NonNullable<JudgeAccess['llm']>,
  convo: Pick<TextConversation, 'messages' | 'toolCalls'>,
  signal: AbortSignal,
): Promise<string | null> {
  try {
    const text = await llm(ANALYSIS_PROMPT, transcriptText({ messages: convo.messages, toolCalls: convo.toolCalls }), signal);
    const parsed = JSON.parse(stripCodeFence(text)) as { outcome?: unknown };
    return normaliseOutcome(parsed.outcome);
  } catch (err) {
    if (signal.aborted) throw err;
    return null;
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });

/** The pg-boss job: runs every pending scenario of the run, then finishes it. Safe to run again after a crash. */
export async function executeRun(services: Services, runId: string): Promise<void> {
  const run = await getRunById(services.sql, runId);
  if (!run) return;
  if (run.status === 'queued' || run.status === 'running') {
    await markRunStarted(services.sql, run.id);
    await requeueRunning(services.sql, run.id);
    const controller = new AbortController();
    inProcess.set(run.id, controller);
    const watch = setInterval(() => {
      void runStatus(services.sql, run.id)
        .then((s) => {
          if (s === 'canceled') abortRun(run.id);
        })
        .catch(() => {});
    }, POLL_MS * 3);
    let yielded = false;
    try {
      const callLimit = await orgConcurrencyLimit(services.sql, run.org_id);
      const limit = Math.max(1, Math.min(services.config.AGENT_TEST_CONCURRENCY, callLimit));
      const prepared = await prepare(services, run);
      const cap = services.config.AGENT_TEST_PLATFORM_DAILY_CONVERSATIONS;
      const charge = !('error' in prepared) && prepared.platform ? (tx: Db) => chargeConversation(tx, run.org_id, cap) : null;
      // Conversations of this run in flight in this job. A run that can start none (its organisation is at its
      // limit elsewhere) gives its job slot back rather than polling in it (below).
      let active = 0;
      const lane = async () => {
        while (!controller.signal.aborted) {
          const next = await services.sql.begin(async (tx) => {
            // A voice scenario is a call on a worker: it starts only while the organisation's real calls leave
            // room under max_concurrent_calls, and never counts against them (calls/queries.ts, countLiveCalls),
            // so tests wait for real calls and real calls never wait for tests.
            const free = run.mode === 'voice' ? Math.max(0, callLimit - (await countLiveCalls(tx, run.org_id, null, 'others'))) : limit;
            return claimNext(tx, run, Math.min(limit, free), charge);
          });
          if (next === null) return;
          if (next === 'capped') {
            await errorPending(services.sql, run.id, capReachedError(cap));
            return;
          }
          if (next === 'busy') {
            if (active === 0) {
              yielded = true;
              return;
            }
            await sleep(POLL_MS, controller.signal);
            continue;
          }
          active++;
          try {
            await runScenario(services, run, next, prepared, controller.signal);
          } finally {
            active--;
          }
        }
      };
      await Promise.all(Array.from({ length: limit }, lane));
    } finally {
      clearInterval(watch);
      inProcess.delete(run.id);
    }
    // Waiting for a slot: the job ends and the run is asked again later, in its organisation's group, so a run
    // at its organisation's limit holds none of the queue's slots meanwhile (one organisation cannot starve others).
    if (yielded && !controller.signal.aborted && (await runStatus(services.sql, run.id)) !== 'canceled' && (await hasPending(services.sql, run.id))) {
      await enqueueRun(services, null, run, { startAfter: services.config.AGENT_TEST_WAIT_SECONDS });
      return;
    }
  }
  await finishRun(services, run.id);
}

/** Writes the counts and, once per run, emits test_run.completed (for a canceled run too). */
export async function finishRun(services: Services, runId: string): Promise<void> {
  await services.sql.begin(async (tx) => {
    const counts = await resultCounts(tx, runId);
    const status = await runStatus(tx, runId);
    let row: RunRow | null = null;
    if (status === 'canceled') {
      await cancelResults(tx, runId);
      row = await setRunCounts(tx, runId, { passed: counts.passed, failed: counts.failed, errored: counts.errored });
    } else if (counts.open === 0) {
      row = await completeRun(tx, runId, counts);
    }
    if (!row || !(await claimNotification(tx, runId))) return;
    await emitEvent(tx, {
      orgId: row.org_id,
      type: 'test_run.completed',
      agentId: row.agent_id,
      payload: {
        test_run_id: row.id,
        agent_id: row.agent_id,
        suite_id: row.suite_id,
        mode: row.mode,
        status: row.status as 'completed' | 'canceled',
        total: row.total,
        passed: row.passed,
        failed: row.failed,
        errored: row.errored,
      },
    });
  });
}
