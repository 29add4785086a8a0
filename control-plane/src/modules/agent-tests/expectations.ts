// Each expectation of a scenario checked against the finished conversation: pass or fail, always with a reason
// a person can act on (what the judge said, which calls the tool did get, the latency measured).
import type { Expectation, ExpectationResult, TestMessage, ToolCallRecord } from '../../../../schemas/agent-tests.ts';
import { containsPhrase } from '../../../../shared/phrases.ts';
import type { Ending } from './conversation.ts';
import type { JudgeLlm } from './models.ts';
import { stripCodeFence } from '../../../../shared/text-caps.ts';
import { compilePattern, patternMatches } from './patterns.ts';

export interface Finished {
  messages: TestMessage[];
  toolCalls: ToolCallRecord[];
  ending: Ending;
  latencyP50Ms: number;
  latencySamples: number;
  /** The outcome label, when one was asked for and a model gave it. */
  outcome: string | null;
}

export const JUDGE_PROMPT =
  'You judge a test conversation between a voice agent and a simulated caller. You get a rubric question, the transcript and the ' +
  'tool calls the agent made. Answer only with a JSON object {"pass": true or false, "reason": "<one or two sentences citing the transcript>"}.';

const show = (v: unknown) => (typeof v === 'string' ? JSON.stringify(v) : (JSON.stringify(v) ?? 'undefined'));
const clip = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

export function transcriptText(f: Pick<Finished, 'messages' | 'toolCalls'>): string {
  const lines = f.messages.map((m) => `${m.role === 'agent' ? 'Agent' : 'Caller'}: ${m.content}`);
  const tools = f.toolCalls.map((t) => `- ${t.tool}(${JSON.stringify(t.arguments)}) → ${clip(t.output, 200)}`);
  return `Transcript:\n${lines.join('\n') || '(nothing was said)'}\n\nTool calls:\n${tools.join('\n') || '(none)'}`;
}

export function defaultName(e: Expectation): string {
  switch (e.type) {
    case 'llm_judge':
      return clip(e.question!, 120);
    case 'tool_called':
      return `calls ${e.tool}${e.arguments ? ` with ${Object.keys(e.arguments).join(', ')}` : ''}`;
    case 'transcript_contains':
      return `${e.role && e.role !== 'any' ? `${e.role} says` : 'transcript contains'} "${e.text}"`;
    case 'transcript_not_contains':
      return `${e.role && e.role !== 'any' ? `${e.role} never says` : 'transcript does not contain'} "${e.text}"`;
    case 'ended_by':
      return `ended by ${e.by}${e.end_reason ? ` (${e.end_reason})` : ''}`;
    case 'max_latency_ms':
      return `p50 latency ≤ ${e.max_ms} ms`;
    case 'outcome_equals':
      return `outcome is ${e.outcome}`;
  }
}

type Matcher = NonNullable<Expectation['arguments']>[string];

/** Why one argument does not satisfy its matcher, or null when it does. */
function argumentMismatch(name: string, value: unknown, m: Matcher): string | null {
  const present = value !== undefined;
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  if (m.exists !== undefined) return present === m.exists ? null : m.exists ? `${name} is missing` : `${name} is present (${show(value)})`;
  if (!present) return `${name} is missing`;
  if ('equals' in m) return JSON.stringify(value) === JSON.stringify(m.equals) ? null : `${name} is ${show(value)}, not ${show(m.equals)}`;
  if (m.contains !== undefined)
    return text.toLowerCase().includes(m.contains.toLowerCase()) ? null : `${name} is ${show(value)}, which does not contain ${show(m.contains)}`;
  if (m.matches !== undefined) {
    // RE2, on text cut to its cap (patterns.ts): a tenant's pattern cannot stall the control plane.
    const compiled = compilePattern(m.matches);
    if ('problem' in compiled) return `${name} cannot be checked: ${compiled.problem}`;
    return patternMatches(compiled.re, text) ? null : `${name} is ${clip(show(value))}, which does not match /${m.matches}/`;
  }
  return null;
}

function checkToolCalled(e: Expectation, calls: ToolCallRecord[]): [boolean, string] {
  const own = calls.filter((c) => c.tool === e.tool);
  if (!own.length) {
    const others = [...new Set(calls.map((c) => c.tool))];
    return [false, `${e.tool} was never called${others.length ? ` (the agent called ${others.join(', ')})` : ' (the agent called no tool)'}`];
  }
  const matchers = Object.entries(e.arguments ?? {});
  const reasons: string[] = [];
  for (const c of own) {
    const args = (c.arguments !== null && typeof c.arguments === 'object' ? c.arguments : {}) as Record<string, unknown>;
    const misses = matchers.map(([name, m]) => argumentMismatch(name, args[name], m)).filter((r): r is string => r !== null);
    if (!misses.length) return [true, `${e.tool} was called with ${JSON.stringify(c.arguments)}`];
    reasons.push(misses.join('; '));
  }
  return [false, `${e.tool} was called ${own.length} time${own.length === 1 ? '' : 's'}, never with matching arguments: ${reasons.join(' | ')}`];
}

function searched(e: Expectation, messages: TestMessage[]): TestMessage[] {
  return !e.role || e.role === 'any' ? messages : messages.filter((m) => m.role === e.role);
}

async function judge(question: string, f: Finished, llm: JudgeLlm, signal: AbortSignal): Promise<[boolean, string]> {
  const text = await llm(JUDGE_PROMPT, `Rubric question: ${question}\n\n${transcriptText(f)}`, signal);
  let parsed: { pass?: unknown; reason?: unknown };
  try {
    parsed = JSON.parse(stripCodeFence(text)) as { pass?: unknown; reason?: unknown };
  } catch {
    return [false, `the judge's answer was not the JSON asked for: ${clip(text, 200)}`];
  }
  if (typeof parsed.pass !== 'boolean') return [false, `the judge's answer had no pass verdict: ${clip(text, 200)}`];
  return [parsed.pass, String(parsed.reason ?? '').trim() || (parsed.pass ? 'The judge passed it.' : 'The judge failed it.')];
}

export interface JudgeAccess {
  llm: JudgeLlm | null;
  /** Why no judge model can be used. */
  unavailable: string | null;
}

export async function evaluate(expectations: Expectation[], f: Finished, judgeAccess: JudgeAccess, signal: AbortSignal): Promise<ExpectationResult[]> {
  const out: ExpectationResult[] = [];
  for (const e of expectations) {
    let verdict: [boolean, string];
    switch (e.type) {
      case 'llm_judge':
        if (!judgeAccess.llm) verdict = [false, `Not judged: ${judgeAccess.unavailable}`];
        else {
          try {
            verdict = await judge(e.question!, f, judgeAccess.llm, signal);
          } catch (err) {
            if (signal.aborted) throw err;
            verdict = [false, `Not judged: the judge model failed (${clip((err as Error).message, 200)})`];
          }
        }
        break;
      case 'tool_called':
        verdict = checkToolCalled(e, f.toolCalls);
        break;
      case 'transcript_contains': {
        const hit = searched(e, f.messages).find((m) => containsPhrase(m.content, e.text!));
        verdict = hit
          ? [true, `${hit.role} said: "${clip(hit.content, 200)}"`]
          : [false, `"${e.text}" was never said${e.role && e.role !== 'any' ? ` by the ${e.role}` : ''}`];
        break;
      }
      case 'transcript_not_contains': {
        const hit = searched(e, f.messages).find((m) => containsPhrase(m.content, e.text!));
        verdict = hit ? [false, `${hit.role} said: "${clip(hit.content, 200)}"`] : [true, `"${e.text}" was never said`];
        break;
      }
      case 'ended_by': {
        const { by, reason } = f.ending;
        const ok = by === e.by && (!e.end_reason || e.end_reason === reason);
        verdict = [ok, `the conversation was ended by ${by === 'limit' ? 'a test limit' : `the ${by}`} (${reason})`];
        break;
      }
      case 'max_latency_ms':
        verdict = f.latencySamples
          ? [
              f.latencyP50Ms <= e.max_ms!,
              `p50 ${f.latencyP50Ms} ms over ${f.latencySamples} agent turn${f.latencySamples === 1 ? '' : 's'} (bound ${e.max_ms} ms)`,
            ]
          : [false, 'the agent never answered a turn, so there is no latency to check'];
        break;
      case 'outcome_equals':
        verdict =
          f.outcome === null
            ? [false, `no outcome: ${judgeAccess.unavailable ?? 'the analysis model gave none'}`]
            : [f.outcome === e.outcome, `the outcome is ${f.outcome}`];
        break;
    }
    out.push({ type: e.type, name: e.name ?? defaultName(e), passed: verdict[0], reason: verdict[1] });
  }
  return out;
}
