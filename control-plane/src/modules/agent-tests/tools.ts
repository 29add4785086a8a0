// The agent's tools during a text-mode test, with the semantics of the worker's (media-worker/src/session/
// tools.ts): a function tool is the same signed HTTP request (shared/function-tool.ts) through the SSRF guard,
// and a failure is a short sentence for the model, never a crash; end_call ends the conversation after the
// reply. A tool named in the scenario's tool_mocks is not called: the mock answers. transfer_call and send_dtmf
// act on no line here: the test records the call and the conversation ends (transfer) or goes on (keys).
import type { FunctionToolConfig, ToolConfig } from '../../../../schemas/internal.ts';
import type { ToolMock } from '../../../../schemas/agent-tests.ts';
import { callFunctionTool as sendFunctionTool } from '../../../../shared/function-tool.ts';
import { createGuardedAgent, parseAllowHosts, type SsrfOptions } from '../../../../shared/ssrf.ts';
import type { ChatTool } from './models.ts';

export interface ToolOutcome {
  output: string;
  error: boolean;
  mocked: boolean;
  /** The tool ends the conversation after the agent's reply. */
  ends?: 'agent_hangup' | 'transferred';
}

/** The tools as the model sees them (the worker's built-in descriptions). */
export function chatTools(tools: ToolConfig[]): ChatTool[] {
  const fn = (name: string, description: string, parameters: Record<string, unknown> = { type: 'object', properties: {} }): ChatTool => ({
    type: 'function',
    function: { name, description, parameters },
  });
  return tools.map((t) => {
    switch (t.type) {
      case 'function':
        return fn(t.name, t.description, t.parameters && Object.keys(t.parameters).length ? t.parameters : undefined);
      case 'end_call':
        return fn(t.name ?? 'end_call', t.description ?? 'End the call. Use when the conversation is over and you have said goodbye.');
      case 'transfer_call':
        return fn(t.name ?? 'transfer_call', t.description ?? 'Transfer the caller to a human colleague when they ask for one or you cannot help.');
      case 'send_dtmf':
        return fn(t.name ?? 'send_dtmf', t.description ?? 'Press keys on the phone keypad (DTMF), e.g. to navigate a phone menu.', {
          type: 'object',
          properties: { digits: { type: 'string', pattern: '^[0-9*#A-D]{1,32}$', description: 'Keys to press, in order' } },
          required: ['digits'],
        });
      case 'do_not_call':
        return fn(
          t.name ?? 'do_not_call',
          t.description ?? 'Add the person to the do-not-call list when they ask not to be called again. Then confirm it to them and end the call politely.',
          {
            type: 'object',
            properties: { reason: { type: 'string', maxLength: 500, description: 'What the person said, briefly' } },
          },
        );
    }
  });
}

export interface ToolContext {
  runId: string;
  scenarioId: string;
  ssrf: SsrfOptions;
  agent: ReturnType<typeof createGuardedAgent>;
}

export function toolSsrfOptions(config: { SSRF_ALLOWLIST?: string | undefined; NODE_ENV: string }): SsrfOptions {
  return { allowHosts: parseAllowHosts(config.SSRF_ALLOWLIST), requireHttps: config.NODE_ENV === 'production' };
}

const mockOutput = (m: ToolMock): string => (m.result === undefined ? 'ok' : typeof m.result === 'string' ? m.result : JSON.stringify(m.result));

export async function runTool(
  name: string,
  args: Record<string, unknown>,
  toolCallId: string,
  tools: ToolConfig[],
  mocks: ToolMock[],
  ctx: ToolContext,
): Promise<ToolOutcome> {
  const tool = tools.find((t) => (t.name ?? t.type) === name);
  const mock = mocks.find((m) => m.tool === name);
  const ends = tool?.type === 'end_call' ? ('agent_hangup' as const) : tool?.type === 'transfer_call' ? ('transferred' as const) : undefined;
  if (mock) {
    if (mock.error) return { output: mock.error, error: true, mocked: true };
    return { output: mockOutput(mock), error: false, mocked: true, ...(ends ? { ends } : {}) };
  }
  if (!tool) return { output: `There is no tool named ${name}.`, error: true, mocked: false };
  switch (tool.type) {
    case 'end_call':
      return { output: 'The call is ending.', error: false, mocked: false, ends: 'agent_hangup' };
    case 'transfer_call':
      return { output: 'The call was transferred.', error: false, mocked: false, ends: 'transferred' };
    case 'send_dtmf':
      return { output: `Sent ${String(args.digits ?? '')}.`, error: false, mocked: false };
    case 'do_not_call':
      // A test has no callee: nothing is added to the organisation's list.
      return { output: 'The number is on the do-not-call list: it will not be called again.', error: false, mocked: false };
    case 'function':
      return callFunctionTool(tool, args, toolCallId, ctx);
  }
}

/** The worker's request (shared/function-tool.ts), naming the test run and scenario instead of a call. */
async function callFunctionTool(tool: FunctionToolConfig, args: Record<string, unknown>, toolCallId: string, ctx: ToolContext): Promise<ToolOutcome> {
  const res = await sendFunctionTool(tool, args, {
    caller: { testRunId: ctx.runId, scenarioId: ctx.scenarioId },
    toolCallId,
    userAgent: 'vap-agent-test',
    ssrf: ctx.ssrf,
    agent: ctx.agent,
  });
  return res.ok ? { output: res.output, error: false, mocked: false } : { output: res.message, error: true, mocked: false };
}
