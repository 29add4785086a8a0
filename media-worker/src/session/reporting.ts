// What the control plane hears of a call: the transcript partials while it runs, the conversation as the spec's
// messages, and at the end the session's bounded close and the ended report.
import type { llm, voice } from '@livekit/agents';
import type { EndReason, EndedMessage, EndedReport } from '../../../schemas/internal.ts';
import type { Logger } from '../../../shared/logger.ts';
import type { CallContext, CallSessionOptions } from './call-context.ts';
import type { TurnMetrics } from './turn-metrics.ts';
import type { SupervisorMark } from './supervision.ts';

/** The conversation as the spec's messages (tool calls as agent messages carrying `tool_call`). */
export function conversationMessages(
  items: llm.ChatItem[],
  opts: {
    entryAgentId: string;
    /** A squad's call: its members (the session's hand-off items say who speaks). */
    squadMembers: ReadonlyMap<string, unknown> | null;
    turnMetrics: TurnMetrics;
    /** Items a supervisor caused (supervision.ts): a `say` or a takeover's words are the agent's message, marked; a whisper, a mark alone. */
    supervisorMarks?: ReadonlyMap<string, SupervisorMark>;
  },
): EndedMessage[] {
  const out: EndedMessage[] = [];
  const iso = (sec?: number) => (typeof sec === 'number' && Number.isFinite(sec) ? new Date(sec * 1000).toISOString() : undefined);
  const calls = new Map<string, { name: string; args: string }>();
  // A squad's call: who speaks, from the session's hand-off items (the agents carry their vap ids).
  let speaking = opts.entryAgentId;
  const members = opts.squadMembers;
  const by = members ? () => ({ agent_id: speaking }) : () => ({});
  for (const item of items) {
    if (item.type === 'agent_handoff') {
      if (members?.has(item.newAgentId)) speaking = item.newAgentId;
    } else if (item.type === 'message') {
      const mark = opts.supervisorMarks?.get(item.id);
      if (mark?.action === 'whisper') {
        // Only the model got it: an agent entry with nothing said, the whisper in its mark.
        out.push({ role: 'agent', content: '', started_at: new Date(item.createdAt).toISOString(), supervisor: mark });
        continue;
      }
      if (item.role !== 'user' && item.role !== 'assistant') continue;
      const content = item.textContent ?? '';
      if (!content.trim()) continue;
      const m: EndedMessage = { role: item.role === 'user' ? 'user' : 'agent', content };
      const started = iso(item.metrics?.startedSpeakingAt) ?? new Date(item.createdAt).toISOString();
      m.started_at = started;
      const stopped = iso(item.metrics?.stoppedSpeakingAt);
      if (stopped) m.ended_at = stopped;
      if (item.role === 'assistant' && item.interrupted) m.interrupted = true;
      // Said in the agent's place: a supervisor's `say`, or the words of a person who took the call over.
      if (mark?.action === 'say' || mark?.action === 'takeover') m.supervisor = { action: mark.action };
      if (item.role === 'assistant') Object.assign(m, by());
      const metrics = item.role === 'assistant' ? opts.turnMetrics.messageMetrics(item.id) : undefined;
      if (metrics) m.metrics = metrics;
      out.push(m);
    } else if (item.type === 'function_call') {
      calls.set(item.callId, { name: item.name, args: item.args });
    } else if (item.type === 'function_call_output') {
      const call = calls.get(item.callId);
      out.push({
        role: 'agent',
        content: '',
        started_at: new Date(item.createdAt).toISOString(),
        ...by(),
        tool_call: { name: call?.name ?? item.name, arguments: call?.args ?? '{}', output: item.output, is_error: item.isError },
      });
    }
  }
  return out;
}

/** The transcript so far, sent at most once per interval while the call runs (what the privacy mode lets out). */
export class TranscriptPartials {
  #call: CallContext;
  #opts: CallSessionOptions;
  #messages: () => EndedMessage[];
  #timer: NodeJS.Timeout | null = null;
  #lastAt = 0;

  constructor(call: CallContext, opts: CallSessionOptions, messages: () => EndedMessage[]) {
    this.#call = call;
    this.#opts = opts;
    this.#messages = messages;
  }

  /** The conversation changed: a partial goes once the interval since the last one is over. */
  schedule(): void {
    if (!this.#opts.reporter || this.#timer || this.#call.endReason) return;
    const interval = this.#opts.transcriptIntervalMs ?? 1000;
    const wait = Math.max(0, this.#lastAt + interval - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = null;
      if (this.#call.endReason) return;
      this.#lastAt = Date.now();
      const partial = this.#call.privacy.partial(this.#messages().map(({ role, content }) => ({ role, content })).filter((m) => m.content));
      if (partial) this.#opts.reporter?.transcript(partial);
    }, wait);
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
  }
}

/**
 * Closes the session, waiting at most `waitMs`. The close drains speech, STT and audio I/O; a stuck part must not
 * keep the line open (the hang-up that follows is what the callee hears), so the wait for it is bounded.
 */
export async function closeWithin(session: voice.AgentSession, waitMs: number, log: Logger): Promise<void> {
  let waitTimer: NodeJS.Timeout | undefined;
  const closed = await Promise.race([
    session.close().then(
      () => true,
      (err: unknown) => {
        log.warn({ err: (err as Error).message }, 'session close failed');
        return true;
      },
    ),
    new Promise<false>((r) => (waitTimer = setTimeout(() => r(false), waitMs))),
  ]);
  clearTimeout(waitTimer);
  if (!closed) log.warn({ waited_ms: waitMs }, 'session close is slow: reporting and hanging up without waiting for it');
}

/** The ended report (before its sequence number): the conversation as the privacy mode keeps it, usage and latency. */
export function endedReport(
  call: CallContext,
  r: {
    reason: EndReason;
    startedAt: number;
    endedAt: number;
    messages: EndedMessage[];
    turnMetrics: TurnMetrics;
    /** A squad's call: each agent's own latency. */
    agentMetrics: Map<string, TurnMetrics> | null;
    error: string | undefined;
  },
): EndedReport {
  return {
    end_reason: r.reason,
    ended_at: new Date(r.endedAt).toISOString(),
    duration_seconds: r.startedAt ? Math.round((r.endedAt - r.startedAt) / 100) / 10 : 0,
    messages: call.privacy.ended(r.messages),
    usage: r.turnMetrics.usageReport(),
    latency: r.turnMetrics.summary(),
    recording_consent: call.consent.result,
    ...(r.agentMetrics ? { agent_latency: Object.fromEntries([...r.agentMetrics].map(([id, m]) => [id, m.summary()])) } : {}),
    ...(r.reason === 'error' && r.error ? { error: r.error.slice(0, 500) } : {}),
  } as EndedReport;
}
