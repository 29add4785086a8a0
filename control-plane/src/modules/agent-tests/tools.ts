// The agent's tools during a text-mode test, with the semantics of the worker's (media-worker/src/session/
// tools.ts): a function tool is a signed HTTP request to its URL through the SSRF guard, and a failure is a
// short sentence for the model, never a crash; end_call ends the conversation after the reply. A tool named
// in the scenario's tool_mocks is not called: the mock answers. transfer_call and send_dtmf act on no line
// here: the test records the call and the conversation ends (transfer) or goes on (keys).
import { randomUUID } from 'node:crypto';
import type { FunctionToolConfig, ToolConfig } from '../../../../schemas/internal.ts';
import type { ToolMock } from '../../../../schemas/agent-tests.ts';
import { signatureHeaders } from '../../../../shared/signing.ts';
import { createGuardedAgent, describeRequestError, guardedRequest, parseAllowHosts, type SsrfOptions } from '../../../../shared/ssrf.ts';
import type { ChatTool } from './models.ts';

/** As the worker: the largest answer passed to the model, and the most read from the network. */
const MAX_RESULT_CHARS = 4000;
const MAX_RESPONSE_BYTES = 64 * 1024;

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
        return fn(t.name ?? 'do_not_call', t.description ?? 'Add the person to the do-not-call list when they ask not to be called again. Then confirm it to them and end the call politely.', {
          type: 'object',
          properties: { reason: { type: 'string', maxLength: 500, description: 'What the person said, briefly' } },
        });
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

/** The worker's request (tools.ts, callFunctionTool): the same payload, signature and error sentences. */
async function callFunctionTool(tool: FunctionToolConfig, args: Record<string, unknown>, toolCallId: string, ctx: ToolContext): Promise<ToolOutcome> {
  // No call exists: the payload names the test run instead, so a tool server can tell test traffic apart.
  const payload = JSON.stringify({
    type: 'tool.call',
    call_id: null,
    test_run_id: ctx.runId,
    scenario_id: ctx.scenarioId,
    tool_call_id: toolCallId,
    name: tool.name,
    arguments: args,
  });
  const msgId = `msg_${randomUUID()}`;
  const headers: Record<string, string> = {
    ...tool.headers,
    'user-agent': 'vap-agent-test',
    ...(tool.signing_secret ? signatureHeaders(tool.signing_secret, msgId, payload) : { 'webhook-id': msgId }),
  };
  let url = tool.url;
  let body: string | undefined = payload;
  if (tool.method === 'GET' || tool.method === 'DELETE') {
    const u = new URL(tool.url);
    for (const [k, v] of Object.entries(args)) u.searchParams.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    url = u.toString();
    body = undefined;
  } else {
    headers['content-type'] = 'application/json';
  }
  const fail = (output: string): ToolOutcome => ({ output, error: true, mocked: false });
  let res: Awaited<ReturnType<typeof guardedRequest>>;
  try {
    res = await guardedRequest(ctx.agent, url, ctx.ssrf, {
      method: tool.method,
      headers,
      ...(body !== undefined ? { body } : {}),
      timeoutMs: tool.timeout_ms,
      maxResponseBytes: MAX_RESPONSE_BYTES,
    });
  } catch (err) {
    const { kind } = describeRequestError(err);
    if (kind === 'timeout') return fail(`The ${tool.name} service did not answer in time.`);
    if (kind === 'blocked') return fail(`The ${tool.name} service is at an address the platform may not call (private or local network).`);
    return fail(`The ${tool.name} service could not be reached.`);
  }
  if (res.status >= 300 && res.status < 400) return fail(`The ${tool.name} service answered with a redirect (HTTP ${res.status}), which is not followed.`);
  if (res.status < 200 || res.status >= 300) return fail(`The ${tool.name} service returned an error (HTTP ${res.status}).`);
  return { output: res.body.length > MAX_RESULT_CHARS ? res.body.slice(0, MAX_RESULT_CHARS) : res.body, error: false, mocked: false };
}
