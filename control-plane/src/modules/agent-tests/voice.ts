// A voice-mode test conversation: a real web call through the real worker, with a simulated caller
// (shared/sim-caller.ts) in the room, speaking and listening with the org's speech providers or the offline
// profile's voices (caller-speech.ts). The call is created as POST /v1/calls/web creates one (room, dispatch,
// token), marked with its run so it is no billable call, takes no daily slot and no concurrency slot of the
// organisation's, and sends no call event (calls/lifecycle.ts, emitCallEvent). The caller speaks a script's
// lines (after their waits, slept for real) or a persona's, written by the judge model from what the caller's
// STT heard, and waits for the agent's answer after each. The transcript and the tool calls are the worker's
// own record of the call; the per-turn latency is what the caller heard: from the end of its line to the
// agent's first sound. docs/decisions/020-agent-tests.md, "Voice mode".
import { randomUUID } from 'node:crypto';
import type { Services } from '../../services.ts';
import type { ScenarioSnapshot, TestMessage, ToolCallRecord } from '../../../../schemas/agent-tests.ts';
import type { CallerSpeech, SimulatedCaller } from '../../../../shared/sim-caller.ts';
import { getCallById, insertCall, type CallRow } from '../calls/queries.ts';
import { pinCall } from '../agent-versions/queries.ts';
import { markInitiated, failCall } from '../calls/lifecycle.ts';
import { openWebCallRoom, roomNameFor } from '../calls/service.ts';
import { CALLER_RULES, ConversationError, HANGUP_TOKEN, type Ending } from './conversation.ts';
import type { JudgeLlm } from './models.ts';
import { setResultCall } from './queries.ts';
import type { CallerSpeechPlan, OrgKeys } from './caller-speech.ts';
import { importRtcQuietly } from '../../../../shared/rtc-import.ts';

/** Silence after the agent's speech that ends its turn, as the caller hears it (ms). */
const AGENT_TURN_SILENCE_MS = 2000;
/** Longest wait for the agent to answer a line (ms): dispatch and a cold worker included for the first. */
const ANSWER_TIMEOUT_MS = 60_000;
const GREETING_TIMEOUT_MS = 45_000;
/** Longest wait for the agent to join the room and publish its track (dispatch, a job process's start). */
const JOIN_TIMEOUT_MS = 120_000;
/** Longest wait for the worker's report of the call once the caller has left (ms). */
const REPORT_TIMEOUT_MS = 60_000;

export interface VoiceAgent {
  agentId: string;
  /** The version under test: the call is pinned to it. */
  agentVersion: number | null;
  firstMessage: string | null;
  maxDurationSeconds: number;
  /** The simulated caller's speech (caller-speech.ts), and the org's keys it is built with. */
  speech: CallerSpeechPlan;
  keys: OrgKeys;
}

/** The simulated caller and rtc-node under it, loaded once, quiet (shared/rtc-import.ts). */
let loaded: Promise<typeof import('../../../../shared/sim-caller.ts')> | undefined;
function loadCaller() {
  loaded ??= importRtcQuietly(() => import('../../../../shared/sim-caller.ts'));
  return loaded;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (ms <= 0 || signal.aborted) return resolve();
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

/** The worker's end reasons, as a test's `ended_by`. */
function endingOf(reason: string | null): Ending {
  if (reason === 'max_duration') return { by: 'limit', reason };
  if (reason === 'user_hangup' || reason === 'api_stop' || !reason) return { by: 'caller', reason: 'user_hangup' };
  return { by: 'agent', reason };
}

/** The framework records a tool's answer JSON-encoded (a string answer as a JSON string): the answer itself. */
function toolOutput(output: unknown): string {
  if (typeof output !== 'string') return JSON.stringify(output ?? '');
  try {
    const parsed: unknown = JSON.parse(output);
    return typeof parsed === 'string' ? parsed : output;
  } catch {
    return output;
  }
}

/** The call's messages as a test's transcript and tool calls. */
export function fromCallMessages(messages: unknown[] | null): { messages: TestMessage[]; toolCalls: ToolCallRecord[] } {
  const out: TestMessage[] = [];
  const toolCalls: ToolCallRecord[] = [];
  for (const m of (messages ?? []) as {
    role: 'agent' | 'user';
    content: string;
    tool_call?: { name: string; arguments: string; output: string; is_error?: boolean };
  }[]) {
    if (m.tool_call) {
      let args: unknown = m.tool_call.arguments;
      try {
        args = typeof args === 'string' && args.trim() ? JSON.parse(args) : args || {};
      } catch {
        // Kept as the model's raw text, as text mode does.
      }
      toolCalls.push({ tool: m.tool_call.name, arguments: args, output: toolOutput(m.tool_call.output), error: !!m.tool_call.is_error, mocked: false });
    } else if (m.content?.trim()) out.push({ role: m.role, content: m.content });
  }
  return { messages: out, toolCalls };
}

export class VoiceConversation {
  messages: TestMessage[] = [];
  toolCalls: ToolCallRecord[] = [];
  /** What the caller heard of each agent turn: end of its line to the agent's first sound (ms). */
  readonly latencies: number[] = [];
  turns = 0;
  clockMs = 0;
  callId: string | null = null;
  readonly #services: Services;
  readonly #runId: string;
  readonly #resultId: string;
  readonly #scenario: ScenarioSnapshot;
  readonly #agent: VoiceAgent;
  readonly #caller: JudgeLlm | null;
  readonly #signal: AbortSignal;
  /** The caller's own view of the conversation (what it said, what its STT heard), for a persona's model. */
  readonly #heard: TestMessage[] = [];

  constructor(
    services: Services,
    ids: { runId: string; resultId: string; orgId: string },
    scenario: ScenarioSnapshot,
    agent: VoiceAgent,
    caller: JudgeLlm | null,
    signal: AbortSignal,
  ) {
    this.#services = services;
    this.#runId = ids.runId;
    this.#resultId = ids.resultId;
    this.#orgId = ids.orgId;
    this.#scenario = scenario;
    this.#agent = agent;
    this.#caller = caller;
    this.#signal = signal;
  }

  readonly #orgId: string;

  /** Holds the call; once it has ended, the transcript and tool calls are the worker's record. */
  async run(): Promise<Ending> {
    const s = this.#scenario;
    if (s.persona !== null && !this.#caller) throw new ConversationError('a persona needs a model to play the caller, and none is configured');
    // The org's speech providers, else the offline profile's voices (caller-speech.ts); built before the call
    // exists, so a provider that cannot be set up leaves no call behind.
    let speech: CallerSpeech;
    try {
      const { buildCallerSpeech } = await import('./caller-engines.ts');
      speech = buildCallerSpeech(this.#agent.speech, this.#agent.keys, this.#services.config);
    } catch (err) {
      throw new ConversationError(`the simulated caller's speech could not be set up: ${(err as Error).message}`);
    }
    try {
      return await this.#call(speech);
    } finally {
      await speech.tts.close().catch(() => {});
      await speech.stt?.close().catch(() => {});
    }
  }

  async #call(speech: CallerSpeech): Promise<Ending> {
    const s = this.#scenario;
    const { sql, log } = this.#services;
    const id = randomUUID();
    const room = roomNameFor(id);
    const call = await sql.begin(async (tx) => {
      const row = await insertCall(tx, {
        id,
        org_id: this.#orgId,
        agent_id: this.#agent.agentId,
        type: 'web',
        direction: null,
        to_number: null,
        from_number: null,
        room_name: room,
        variables: s.variables ?? {},
        metadata: { test_run_id: this.#runId, scenario_id: s.id },
        overrides: {},
        webhook_url: null,
        test_run_id: this.#runId,
      });
      if (this.#agent.agentVersion !== null) await pinCall(tx, id, this.#agent.agentVersion);
      await setResultCall(tx, this.#resultId, id);
      return row;
    });
    this.callId = id;
    let token: string;
    try {
      token = await openWebCallRoom(this.#services, id, room);
    } catch (err) {
      log.error({ err, call_id: id, run_id: this.#runId }, 'agent test: room or dispatch failed');
      await sql.begin((tx) => failCall(tx, call, 'media_unavailable', 'dispatch_failed'));
      throw new ConversationError('the media service is unavailable: the test call could not be started');
    }
    await markInitiated(sql, id);
    const { stt: heard, tts: spoken } = this.#agent.speech;
    log.info(
      { call_id: id, run_id: this.#runId, caller_tts: `${spoken.provider}/${spoken.voice_id}`, caller_stt: heard && `${heard.provider}/${heard.model}` },
      'agent test: caller speech',
    );
    const { SimulatedCaller } = await loadCaller();
    const t0 = performance.now();
    const limitMs = Math.min(s.max_duration_seconds, this.#agent.maxDurationSeconds) * 1000;
    const inner = new AbortController();
    const stop = () => inner.abort();
    this.#signal.addEventListener('abort', stop, { once: true });
    const limitTimer = setTimeout(stop, limitMs);
    let caller: SimulatedCaller | null = null;
    let ending: Ending | null = null;
    try {
      caller = await SimulatedCaller.join(this.#services.livekit.serverUrl, token, speech);
      ending = await this.#converse(caller, inner.signal);
      if (!ending && performance.now() - t0 >= limitMs) ending = { by: 'limit', reason: 'max_duration' };
    } catch (err) {
      if (this.#signal.aborted) throw this.#signal.reason instanceof Error ? this.#signal.reason : new Error('canceled');
      throw err instanceof ConversationError ? err : new ConversationError(`the simulated caller failed: ${(err as Error).message}`);
    } finally {
      clearTimeout(limitTimer);
      this.#signal.removeEventListener('abort', stop);
      this.clockMs = performance.now() - t0;
      await caller?.leave().catch(() => {});
      if (this.#signal.aborted) await this.#services.livekit.rooms.deleteRoom(room).catch(() => {});
    }
    if (this.#signal.aborted) throw this.#signal.reason instanceof Error ? this.#signal.reason : new Error('canceled');
    const record = await this.#report(id, room);
    const fromCall = fromCallMessages(record?.messages ?? null);
    this.messages = fromCall.messages;
    this.toolCalls = fromCall.toolCalls;
    if (!record) throw new ConversationError('the worker did not report the test call in time');
    return ending ?? endingOf(record.end_reason);
  }

  /** The conversation from the caller's side; the ending when the caller or a limit ended it, null when the agent did. */
  async #converse(caller: SimulatedCaller, signal: AbortSignal): Promise<Ending | null> {
    const s = this.#scenario;
    if (!(await caller.agentJoined(JOIN_TIMEOUT_MS, signal))) {
      if (signal.aborted) return null;
      throw new ConversationError(`the agent did not join the room within ${JOIN_TIMEOUT_MS / 1000} s (is a media worker running?)`);
    }
    if (this.#agent.firstMessage) {
      const greeting = await caller.utterance({ silenceMs: AGENT_TURN_SILENCE_MS, timeoutMs: GREETING_TIMEOUT_MS, signal });
      if (greeting && s.persona !== null) this.#heard.push({ role: 'agent', content: await caller.transcribe(greeting) });
    }
    for (;;) {
      if (signal.aborted) return null;
      if (caller.ended) return null;
      if (this.turns >= s.max_turns) return { by: 'limit', reason: 'max_turns' };
      const line = await this.#nextLine(s, signal);
      if (signal.aborted) return null;
      if (line === null) return { by: 'caller', reason: 'user_hangup' };
      if (line.wait) await sleep(line.wait, signal);
      if (signal.aborted || caller.ended) return null;
      caller.clear();
      this.turns++;
      const trailing = 600;
      if (line.text) {
        const said = await caller.say(line.text, signal, trailing);
        // The answer is what the agent says after the line: what it said over the line is not (a late greeting).
        caller.clear();
        this.#heard.push({ role: 'user', content: line.text });
        if (line.hangUp) return { by: 'caller', reason: 'user_hangup' };
        const answer = await caller.utterance({ silenceMs: AGENT_TURN_SILENCE_MS, timeoutMs: ANSWER_TIMEOUT_MS, signal });
        if (answer) {
          this.latencies.push(Math.max(0, answer.startedAt - (said.endedAt - trailing)));
          if (s.persona !== null) this.#heard.push({ role: 'agent', content: await caller.transcribe(answer) });
        }
      } else if (line.hangUp) return { by: 'caller', reason: 'user_hangup' };
    }
  }

  /** A script's next line, or a persona's from the caller model; null when the caller has nothing more to say. */
  async #nextLine(s: ScenarioSnapshot, signal: AbortSignal): Promise<{ text: string; wait: number; hangUp: boolean } | null> {
    if (s.script) {
      const line = s.script[this.turns];
      return line ? { text: line.say, wait: line.wait_ms ?? 0, hangUp: false } : null;
    }
    const transcript = this.#heard.map((m) => `${m.role === 'agent' ? 'Agent' : 'You'}: ${m.content || '(inaudible)'}`).join('\n');
    const ask = transcript
      ? `The conversation so far (the agent's words as you heard them on the line):\n${transcript}\n\nWhat do you say next?`
      : 'The call has just connected and the agent has not spoken yet. What do you say first?';
    let text: string;
    try {
      text = await this.#caller!(`${CALLER_RULES}\n\n# Your role\n${s.persona}`, ask, signal);
    } catch (err) {
      if (signal.aborted) return null;
      throw new ConversationError(`the caller model failed: ${(err as Error).message}`);
    }
    const hangUp = text.includes(HANGUP_TOKEN);
    const said = text.replaceAll(HANGUP_TOKEN, '').trim();
    if (!said && hangUp) return null;
    return { text: said || '...', wait: 0, hangUp };
  }

  /** The call once the worker has reported it (ended, conversation stored); null if it did not in time. */
  async #report(id: string, room: string): Promise<CallRow | null> {
    const deadline = performance.now() + REPORT_TIMEOUT_MS;
    let deleted = false;
    for (;;) {
      const row = await getCallById(this.#services.sql, id);
      if (row && ((row.status === 'completed' && !row.awaiting_report && row.messages !== null) || row.status === 'failed')) return row;
      // The room outlives the caller by its departure timeout; closing it ends the worker's session now.
      if (!deleted) {
        deleted = true;
        await this.#services.livekit.rooms.deleteRoom(room).catch(() => {});
      }
      if (performance.now() > deadline) return row ?? null;
      await new Promise((r) => setTimeout(r, 300));
    }
  }
}
