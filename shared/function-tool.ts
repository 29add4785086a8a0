// A customer `function` tool's HTTP request, one definition for the two places that make it: the worker during a
// call (media-worker/src/session/tools.ts) and the control plane during a text-mode agent test
// (control-plane/src/modules/agent-tests/tools.ts). The payload, the signed headers, the query string of a GET,
// the timeout, the response bounds and the sentences a failure becomes are the same on both sides, so a tool
// server sees one protocol.
import { randomUUID } from 'node:crypto';
import { signatureHeaders } from './signing.ts';
import { describeRequestError, guardedRequest, type createGuardedAgent, type SsrfOptions } from './ssrf.ts';

/** Largest tool answer passed back to the model (characters). */
export const MAX_RESULT_CHARS = 4000;
/** Largest tool answer read from the network (bytes); the rest is never downloaded. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/** The fields of a function tool (schemas/internal.ts, FunctionToolConfig) the request is made from. */
export interface FunctionTool {
  name: string;
  url: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  headers?: Record<string, string> | undefined;
  signing_secret?: string | null | undefined;
  timeout_ms: number;
}

/** Who is calling: a call's id, or (no call exists) the test run and scenario, so a tool server can tell test traffic apart. */
export type ToolCaller = { callId: string } | { testRunId: string; scenarioId: string };

export interface FunctionToolRequest {
  url: string;
  method: FunctionTool['method'];
  headers: Record<string, string>;
  body?: string;
}

/** The request for one call of the tool: the JSON payload, signed when the tool has a secret. */
export function functionToolRequest(
  tool: FunctionTool,
  args: Record<string, unknown>,
  caller: ToolCaller,
  toolCallId: string | null,
  userAgent: string,
): FunctionToolRequest {
  const who = 'callId' in caller ? { call_id: caller.callId } : { call_id: null, test_run_id: caller.testRunId, scenario_id: caller.scenarioId };
  const payload = JSON.stringify({ type: 'tool.call', ...who, tool_call_id: toolCallId, name: tool.name, arguments: args });
  const msgId = `msg_${randomUUID()}`;
  const headers: Record<string, string> = {
    ...tool.headers,
    'user-agent': userAgent,
    ...(tool.signing_secret ? signatureHeaders(tool.signing_secret, msgId, payload) : { 'webhook-id': msgId }),
  };
  if (tool.method === 'GET' || tool.method === 'DELETE') {
    // No body: arguments travel in the query string; the signature covers the JSON payload all the same.
    const u = new URL(tool.url);
    for (const [k, v] of Object.entries(args)) u.searchParams.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    return { url: u.toString(), method: tool.method, headers };
  }
  headers['content-type'] = 'application/json';
  return { url: tool.url, method: tool.method, headers, body: payload };
}

/** The tool's answer for the model, or a failure as a sentence the model can say (the reason stays out of it). */
export type FunctionToolResult = { ok: true; output: string } | { ok: false; message: string };

/** Sends the request through the SSRF guard (public addresses only, no redirects) within the tool's timeout. */
export async function callFunctionTool(
  tool: FunctionTool,
  args: Record<string, unknown>,
  opts: { caller: ToolCaller; toolCallId: string | null; userAgent: string; ssrf: SsrfOptions; agent: ReturnType<typeof createGuardedAgent> },
): Promise<FunctionToolResult> {
  const req = functionToolRequest(tool, args, opts.caller, opts.toolCallId, opts.userAgent);
  let res: Awaited<ReturnType<typeof guardedRequest>>;
  try {
    res = await guardedRequest(opts.agent, req.url, opts.ssrf, {
      method: req.method,
      headers: req.headers,
      ...(req.body !== undefined ? { body: req.body } : {}),
      timeoutMs: tool.timeout_ms,
      maxResponseBytes: MAX_RESPONSE_BYTES,
    });
  } catch (err) {
    const { kind } = describeRequestError(err);
    if (kind === 'timeout') return { ok: false, message: `The ${tool.name} service did not answer in time.` };
    if (kind === 'blocked') return { ok: false, message: `The ${tool.name} service is at an address the platform may not call (private or local network).` };
    return { ok: false, message: `The ${tool.name} service could not be reached.` };
  }
  if (res.status >= 300 && res.status < 400)
    return { ok: false, message: `The ${tool.name} service answered with a redirect (HTTP ${res.status}), which is not followed.` };
  if (res.status < 200 || res.status >= 300) return { ok: false, message: `The ${tool.name} service returned an error (HTTP ${res.status}).` };
  return { ok: true, output: res.body.length > MAX_RESULT_CHARS ? res.body.slice(0, MAX_RESULT_CHARS) : res.body };
}
