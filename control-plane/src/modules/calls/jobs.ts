// Background work on calls (pg-boss):
//  - calls.analyze: after a call ends, an LLM writes `ai_summary` and `analysis {outcome, summary}`, then
//    `call.analyzed` fires. Retried with backoff; a final failure is recorded on the call, never thrown away.
//  - calls.reap: finishes a call whose worker is gone (room closed or no agent in it) with `worker_lost`,
//    and fails a call no worker picked up in time (`dispatch_timeout`). Run by a sweep every minute and by
//    LiveKit webhooks (room finished, agent left).
import type { Job, QueueDef } from '../../jobs/boss.ts';
import type { Services } from '../../services.ts';
import { emitEvent } from '../events/emit.ts';
import { analyseCall, AnalysisError, type AnalysisResult } from './analysis.ts';
import { getCallById, markAnalysisFailed, markAnalysisRunning, markAnalysisSkipped, reapCandidates, saveAnalysis, touchWorker, type CallRow } from './queries.ts';
import { ANALYZE_QUEUE, failCall, finishCall } from './lifecycle.ts';

export const REAP_QUEUE = 'calls.reap';
export const REAP_SWEEP_QUEUE = 'calls.reap-sweep';

<<<<<<< HEAD
const OUTCOME_RE = /^[a-z]+(_[a-z]+)*$/;

/** Turns whatever the model said into a lowercase_underscore label. */
export function normaliseOutcome(raw: unknown): string {
  const label = String(raw ?? '')
    .toLowerCase()
    .replace(/[^a-z]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 60)
    .replace(/_+$/, '');
  return OUTCOME_RE.test(label) ? label : 'unknown';
}

interface Analysis {
  summary: string;
  outcome: string;
}

const ANALYSIS_PROMPT =
  'You analyse phone and web calls between a voice agent and a person. Answer with a JSON object ' +
  '{"summary": "<two or three sentences on what happened>", "outcome": "<a short lowercase_underscore label of the result, ' +
  'such as appointment_booked, question_answered, not_interested, callback_requested, voicemail, no_conversation>"}.';

/** One chat completion on an OpenAI-compatible endpoint (the agent's model, or the platform's analysis model). */
async function analyse(services: Services, call: CallRow): Promise<Analysis> {
  const messages = (call.messages ?? []).filter((m) => m.content?.trim());
  if (!messages.length) return { summary: 'The call ended before any conversation took place.', outcome: 'no_conversation' };
  const [model] = await services.sql<{ provider: string; model: string; base_url: string | null }[]>`
    select m.provider, m.model, m.base_url from agents a join llm_models m on m.id = a.llm_id where a.id = ${call.agent_id}`;
  const [cred] = await services.sql<{ id: string; ciphertext: Buffer; key_version: number }[]>`
    select id, ciphertext, key_version from credentials where org_id = ${call.org_id} and provider = 'openai' order by created_at desc limit 1`;
  const useAgentModel = model?.provider === 'openai';
  const baseUrl = (useAgentModel && model.base_url) || services.config.ANALYSIS_BASE_URL || 'https://api.openai.com/v1';
  const modelId = useAgentModel ? model.model : services.config.ANALYSIS_MODEL;
  let apiKey = services.config.OPENAI_API_KEY ?? '';
  if (cred) {
    const { openKey } = await import('../credentials/service.ts');
    apiKey = openKey(services.secrets, cred.id, { ciphertext: cred.ciphertext, keyVersion: cred.key_version });
  }
  const transcript = messages.map((m) => `${m.role === 'agent' ? 'Agent' : 'Caller'}: ${m.content}`).join('\n');
  const ssrf = ssrfOptions(services.config);
  const agent = createGuardedAgent(ssrf);
  try {
    const res = await guardedRequest(agent, `${baseUrl.replace(/\/$/, '')}/chat/completions`, ssrf, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
      body: JSON.stringify({
        model: modelId,
        temperature: 0,
        response_format: { type: 'json_object' },
        messages: [
          { role: 'system', content: ANALYSIS_PROMPT },
          { role: 'user', content: transcript },
        ],
      }),
      timeoutMs: 60_000,
      maxResponseBytes: 256 * 1024,
    });
    if (res.status < 200 || res.status >= 300) throw new Error(`analysis model answered ${res.status}: ${res.body.slice(0, 200)}`);
    const content = (JSON.parse(res.body) as { choices?: { message?: { content?: unknown } }[] } | null)?.choices?.[0]?.message?.content;
    let parsed: { summary?: unknown; outcome?: unknown };
    try {
      parsed = JSON.parse(String(content)) as { summary?: unknown; outcome?: unknown };
    } catch {
      parsed = { summary: String(content ?? ''), outcome: 'unknown' };
    }
    return { summary: String(parsed.summary ?? '').trim() || 'No summary.', outcome: normaliseOutcome(parsed.outcome) };
  } catch (err) {
    const { message } = describeRequestError(err);
    throw new Error(`analysis failed: ${message}`, { cause: err });
  } finally {
    await agent.close().catch(() => {});
  }
}
=======
export { normaliseOutcome } from './analysis.ts';
>>>>>>> main

export async function runAnalysis(services: Services, job: Job<{ call_id: string }>): Promise<void> {
  const call = await getCallById(services.sql, job.data.call_id);
  if (!call || call.status !== 'completed' || call.analysis_status === 'completed' || call.analysis_status === 'skipped') return;
  if (services.config.ANALYSIS_MODE === 'off') {
    // Not silently missing: the call says the analysis was not made, and why.
    await markAnalysisSkipped(services.sql, call.id, 'post-call analysis is turned off (ANALYSIS_MODE=off)');
    return;
  }
  await markAnalysisRunning(services.sql, call.id);
  let result: AnalysisResult;
  try {
    result = await analyseCall(services, call);
  } catch (err) {
    const final = job.retryCount >= services.config.ANALYSIS_RETRY_LIMIT;
    services.log.warn({ err, call_id: call.id, attempt: job.retryCount + 1, final }, 'call analysis failed');
    await markAnalysisFailed(services.sql, call.id, final, (err as Error).message, err instanceof AnalysisError ? { method: err.method, model: err.model } : null);
    if (final) return; // recorded on the call; nothing more to try
    throw err; // pg-boss retries with backoff
  }
  await services.sql.begin(async (tx) => {
    const row = await saveAnalysis(tx, call.id, result);
    if (!row) return;
    await emitEvent(tx, {
      orgId: row.org_id,
      type: 'call.analyzed',
      callId: row.id,
      agentId: row.agent_id,
      webhookUrl: row.webhook_url,
      payload: { call_id: row.id, agent_id: row.agent_id, outcome: row.outcome, ai_summary: row.ai_summary },
    });
  });
}

/** Whether a worker is still holding the call's room. */
async function workerPresent(services: Services, room: string): Promise<'present' | 'absent' | 'room_gone'> {
  if (!(await services.livekit.roomExists(room))) return 'room_gone';
  const participants = await services.livekit.rooms.listParticipants(room);
  return participants.some((p) => p.kind === 4 /* ParticipantInfo_Kind.AGENT */) ? 'present' : 'absent';
}

export async function reapCall(services: Services, callId: string): Promise<'alive' | 'reaped' | 'skipped'> {
  const call = await getCallById(services.sql, callId);
  if (!call || call.status === 'completed' || call.status === 'failed') return 'skipped';
  const state = call.room_name ? await workerPresent(services, call.room_name).catch(() => 'unknown' as const) : 'room_gone';
  if (state === 'unknown') return 'skipped'; // LiveKit unreachable: decide on a later sweep
  if (state === 'present') {
    await touchWorker(services.sql, call.id);
    return 'alive';
  }
  const now = new Date().toISOString();
  const done = await services.sql.begin(async (tx) => {
    const locked = await getCallById(tx, callId, { lock: true });
    if (!locked || locked.status === 'completed' || locked.status === 'failed') return null;
    if (locked.status === 'in_progress') {
      return finishCall(tx, services.boss, locked, { endReason: 'worker_lost', endedAt: now });
    }
    // Never started: no worker took the dispatch in time, or the room closed before it did.
    const age = (Date.now() - locked.created_at.getTime()) / 1000;
    if (state === 'absent' && age < services.config.DISPATCH_TIMEOUT_SECONDS) return null;
    return failCall(tx, locked, 'agent_unavailable', 'dispatch_timeout');
  });
  if (done && call.room_name) await services.livekit.rooms.deleteRoom(call.room_name).catch(() => {});
  return done ? 'reaped' : 'skipped';
}

/** Candidates: in-progress calls whose worker has been quiet, and calls never started after the dispatch timeout. */
export async function sweep(services: Services): Promise<number> {
  const quiet = Math.max(15, Math.floor(services.config.WORKER_SILENCE_SECONDS / 3));
  const ids = await reapCandidates(services.sql, quiet, services.config.DISPATCH_TIMEOUT_SECONDS);
  let reaped = 0;
  for (const id of ids) if ((await reapCall(services, id)) === 'reaped') reaped++;
  return reaped;
}

export function callQueues(services: Services): QueueDef<never>[] {
  return [
    {
      name: ANALYZE_QUEUE,
      options: { retryLimit: services.config.ANALYSIS_RETRY_LIMIT, retryDelay: services.config.ANALYSIS_RETRY_DELAY_SECONDS, retryBackoff: true },
      work: { batchSize: 1 },
      handler: async (jobs: Job<{ call_id: string }>[]) => {
        for (const job of jobs) await runAnalysis(services, job);
      },
    },
    {
      name: REAP_QUEUE,
      handler: async (jobs: Job<{ call_id: string }>[]) => {
        for (const job of jobs) await reapCall(services, job.data.call_id);
      },
    },
    {
      name: REAP_SWEEP_QUEUE,
      schedule: '* * * * *',
      handler: async () => {
        await sweep(services);
      },
    },
  ];
}
