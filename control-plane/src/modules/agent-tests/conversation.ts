// A text-mode test conversation: the simulated caller (a persona played by the judge model, or a script's fixed
// lines) and the agent's LLM with its prompt and tools, turn by turn, until someone ends it or a limit does.
// The clock is the conversation's own: the time the models and tools took, plus a script's waits (which are
// not slept: a text test is as fast as its models). docs/decisions/020-agent-tests.md.
import type { ScenarioSnapshot, TestMessage, ToolCallRecord } from '../../../../schemas/agent-tests.ts';
import type { ToolConfig } from '../../../../schemas/internal.ts';
import { matchesEndPhrase } from '../../../../shared/phrases.ts';
import type { AgentLlm, ChatMessage, ChatTool, JudgeLlm } from './models.ts';
import type { ToolOutcome } from './tools.ts';
import { capText, MESSAGE_CONTENT_MAX, TOOL_OUTPUT_MAX } from '../../../../shared/text-caps.ts';

/** Most model rounds of one agent turn (tool calls and their answers) before the turn is cut short. */
const MAX_TOOL_ROUNDS = 5;
/** What the caller model writes to hang up. */
export const HANGUP_TOKEN = '[HANGUP]';

export const CALLER_RULES =
  'You are playing a caller on a phone call with a voice agent, to test the agent. Stay in your role and never say you are a test or an AI. ' +
  'Reply with only the words you say aloud: one short turn, no stage directions, no quotes. ' +
  `When your goal is met or the conversation is over, say goodbye and end your reply with ${HANGUP_TOKEN}.`;

export interface AgentSide {
  prompt: string;
  firstMessage: string | null;
  endCallPhrases: string[];
  silenceTimeoutSeconds: number;
  maxDurationSeconds: number;
  tools: ToolConfig[];
  chatTools: ChatTool[];
  llm: AgentLlm;
  runTool: (name: string, args: Record<string, unknown>, toolCallId: string) => Promise<ToolOutcome>;
}

export interface Ending {
  by: 'agent' | 'caller' | 'limit';
  reason: string;
}

export class ConversationError extends Error {
  override name = 'ConversationError';
}

const elapsed = (t0: number) => performance.now() - t0;

export class TextConversation {
  readonly messages: TestMessage[] = [];
  readonly toolCalls: ToolCallRecord[] = [];
  /** The agent's response time of each turn (ms): its LLM rounds and tool calls. */
  readonly latencies: number[] = [];
  turns = 0;
  clockMs = 0;
  ending: Ending | null = null;
  readonly #history: ChatMessage[];
  readonly #scenario: ScenarioSnapshot;
  readonly #agent: AgentSide;
  readonly #caller: JudgeLlm | null;
  readonly #signal: AbortSignal;

  constructor(scenario: ScenarioSnapshot, agent: AgentSide, caller: JudgeLlm | null, signal: AbortSignal) {
    this.#scenario = scenario;
    this.#agent = agent;
    this.#caller = caller;
    this.#signal = signal;
    this.#history = [{ role: 'system', content: agent.prompt }];
  }

  async run(): Promise<Ending> {
    if (this.#scenario.persona !== null && !this.#caller) throw new ConversationError('a persona needs a model to play the caller, and none is configured');
    if (this.#agent.firstMessage) this.#say('agent', this.#agent.firstMessage);
    const limitMs = Math.min(this.#scenario.max_duration_seconds, this.#agent.maxDurationSeconds) * 1000;
    while (!this.ending) {
      if (this.turns >= this.#scenario.max_turns) return this.#end('limit', 'max_turns');
      const line = await this.#callerTurn();
      if (this.ending) break;
      if (this.clockMs >= limitMs) return this.#end('limit', 'max_duration');
      if (line === null) return this.#end('caller', 'user_hangup');
      this.turns++;
      this.#say('user', line.text);
      this.#history.push({ role: 'user', content: line.text });
      if (line.hangUp) return this.#end('caller', 'user_hangup');
      await this.#agentTurn();
      if (!this.ending && this.clockMs >= limitMs) return this.#end('limit', 'max_duration');
    }
    return this.ending;
  }

  #say(role: 'agent' | 'user', content: string) {
    this.messages.push({ role, content });
  }

  #end(by: Ending['by'], reason: string): Ending {
    this.ending = { by, reason };
    return this.ending;
  }

  #checkCanceled() {
    if (this.#signal.aborted) throw this.#signal.reason instanceof Error ? this.#signal.reason : new Error('canceled');
  }

  /** The caller's next line; null when it has nothing more to say (the script is over). */
  async #callerTurn(): Promise<{ text: string; hangUp: boolean } | null> {
    this.#checkCanceled();
    const script = this.#scenario.script;
    if (script) {
      const line = script[this.turns];
      if (!line) return null;
      const wait = line.wait_ms ?? 0;
      this.clockMs += wait;
      // The agent's silence timeout runs out during the wait, as it would on a call.
      if (wait >= this.#agent.silenceTimeoutSeconds * 1000) {
        this.#end('agent', 'silence_timeout');
        return null;
      }
      return { text: line.say, hangUp: false };
    }
    const transcript = this.messages.map((m) => `${m.role === 'agent' ? 'Agent' : 'You'}: ${m.content}`).join('\n');
    const ask = transcript
      ? `The conversation so far:\n${transcript}\n\nWhat do you say next?`
      : 'The call has just connected and the agent has not spoken yet. What do you say first?';
    const t0 = performance.now();
    let text: string;
    try {
      text = await this.#caller!(`${CALLER_RULES}\n\n# Your role\n${this.#scenario.persona}`, ask, this.#signal);
    } catch (err) {
      this.#checkCanceled();
      throw new ConversationError(`the caller model failed: ${(err as Error).message}`);
    }
    this.clockMs += elapsed(t0);
    text = capText(text, MESSAGE_CONTENT_MAX);
    const hangUp = text.includes(HANGUP_TOKEN);
    const said = text.replaceAll(HANGUP_TOKEN, '').trim();
    if (!said) return hangUp ? null : { text: '...', hangUp: false };
    return { text: said, hangUp };
  }

  async #agentTurn(): Promise<void> {
    const t0 = performance.now();
    let ends: ToolOutcome['ends'];
    let reply = '';
    for (let round = 0; round < MAX_TOOL_ROUNDS; round++) {
      this.#checkCanceled();
      let res: Awaited<ReturnType<AgentLlm>>;
      try {
        res = await this.#agent.llm(this.#history, this.#agent.chatTools, this.#signal);
      } catch (err) {
        this.#checkCanceled();
        throw new ConversationError(`the agent's LLM failed: ${(err as Error).message}`);
      }
      reply = res.text.trim();
      if (!res.toolCalls.length) break;
      this.#history.push({
        role: 'assistant',
        content: res.text || null,
        tool_calls: res.toolCalls.map((c) => ({ id: c.id, type: 'function' as const, function: { name: c.name, arguments: c.arguments } })),
      });
      for (const call of res.toolCalls) {
        let args: unknown;
        try {
          args = call.arguments.trim() ? JSON.parse(call.arguments) : {};
        } catch {
          args = call.arguments;
        }
        const out =
          args !== null && typeof args === 'object' && !Array.isArray(args)
            ? await this.#agent.runTool(call.name, args as Record<string, unknown>, call.id)
            : { output: 'The arguments were not a JSON object.', error: true, mocked: false };
        // Stored with the run and read back by the expectations: bounded like a call's tool calls.
        const output = capText(out.output, TOOL_OUTPUT_MAX);
        this.toolCalls.push({ tool: call.name, arguments: args, output, error: out.error, mocked: out.mocked });
        this.#history.push({ role: 'tool', tool_call_id: call.id, content: output });
        ends ??= out.ends;
      }
      // The words said with the tool call are part of the reply (the worker speaks them too).
      if (reply) this.#say('agent', reply);
      reply = '';
    }
    const took = elapsed(t0);
    this.latencies.push(took);
    this.clockMs += took;
    if (reply) {
      this.#say('agent', reply);
      this.#history.push({ role: 'assistant', content: reply });
    }
    if (ends) this.#end('agent', ends);
    else if (reply && matchesEndPhrase(reply, this.#agent.endCallPhrases)) this.#end('agent', 'agent_hangup');
  }
}

/** p50, mean, min and max of the per-turn response times (ms, rounded). */
export function latencyStats(samples: number[]) {
  if (!samples.length) return { p50_ms: 0, avg_ms: 0, min_ms: 0, max_ms: 0, samples: 0 };
  const sorted = [...samples].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  const p50 = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  const r = (n: number) => Math.round(n);
  return {
    p50_ms: r(p50),
    avg_ms: r(sorted.reduce((a, b) => a + b, 0) / sorted.length),
    min_ms: r(sorted[0]!),
    max_ms: r(sorted.at(-1)!),
    samples: sorted.length,
  };
}
