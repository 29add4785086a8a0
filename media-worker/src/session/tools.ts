// The agent's tools as agents-js function tools: customer `function` tools (a signed HTTP request with a
// timeout) and the built-ins end_call, transfer_call, send_dtmf and do_not_call, which act on the call through
// CallActions. A failing function tool never crashes the call: the model gets a short error it can say
// gracefully (ToolError), and the call's messages record the call and its output.
import { randomUUID } from 'node:crypto';
import { llm } from '@livekit/agents';
import type { CallConfig, FunctionToolConfig } from '../../../schemas/internal.ts';
import { signatureHeaders } from '../../../shared/signing.ts';
import type { DestinationPolicy } from '../../../shared/destination-policy.ts';
import { createGuardedAgent, describeRequestError, guardedRequest, parseAllowHosts, type SsrfOptions } from '../../../shared/ssrf.ts';

export interface CallActions {
  /** Hang up after the current speech has played: end_reason agent_hangup. */
  hangUp(reason: 'agent_hangup'): void;
  /** SIP transfer of the caller; resolves when the bridge accepted it. */
  transfer(destination: string): Promise<void>;
  /** Send DTMF digits on the call. */
  sendDtmf(digits: string): Promise<void>;
  /** Put the other party of the call on the organisation's do-not-call list. */
  addToDoNotCall(reason: string | undefined): Promise<void>;
}

/** Largest tool answer passed back to the model (characters). */
const MAX_RESULT_CHARS = 4000;
/** Largest tool answer read from the network (bytes); the rest is never downloaded. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * The same SSRF guard as webhooks (shared/ssrf.ts): public addresses only, checked at connection time, no
 * redirects followed. SSRF_ALLOWLIST (tests, local development) and NODE_ENV come from the worker's
 * environment, as the control plane reads them from its own. One pooled agent per allowlist.
 */
export function toolSsrfOptions(env: NodeJS.ProcessEnv = process.env): SsrfOptions {
  return { allowHosts: parseAllowHosts(env.SSRF_ALLOWLIST), requireHttps: env.NODE_ENV === 'production' };
}
const agents = new Map<string, ReturnType<typeof createGuardedAgent>>();
function agentFor(opts: SsrfOptions) {
  const key = `${opts.requireHttps}|${(opts.allowHosts ?? []).join(',')}`;
  let agent = agents.get(key);
  if (!agent) agents.set(key, (agent = createGuardedAgent({ ...opts, connectionsPerOrigin: 16 })));
  return agent;
}

export async function callFunctionTool(
  tool: FunctionToolConfig,
  args: Record<string, unknown>,
  ctx: { callId: string; toolCallId?: string },
): Promise<string> {
  const payload = JSON.stringify({ type: 'tool.call', call_id: ctx.callId, tool_call_id: ctx.toolCallId ?? null, name: tool.name, arguments: args });
  const msgId = `msg_${randomUUID()}`;
  const headers: Record<string, string> = {
    ...tool.headers,
    'user-agent': 'vap-worker',
    ...(tool.signing_secret ? signatureHeaders(tool.signing_secret, msgId, payload) : { 'webhook-id': msgId }),
  };
  let url = tool.url;
  let body: string | undefined = payload;
  if (tool.method === 'GET' || tool.method === 'DELETE') {
    // No body: arguments travel in the query string; the signature covers the JSON payload all the same.
    const u = new URL(tool.url);
    for (const [k, v] of Object.entries(args)) u.searchParams.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    url = u.toString();
    body = undefined;
  } else {
    headers['content-type'] = 'application/json';
  }
  const ssrf = toolSsrfOptions();
  let res: Awaited<ReturnType<typeof guardedRequest>>;
  try {
    res = await guardedRequest(agentFor(ssrf), url, ssrf, {
      method: tool.method,
      headers,
      ...(body !== undefined ? { body } : {}),
      timeoutMs: tool.timeout_ms,
      maxResponseBytes: MAX_RESPONSE_BYTES,
    });
  } catch (err) {
    // The model gets a sentence it can say; the reason stays out of what it hears but in the message log.
    const { kind } = describeRequestError(err);
    if (kind === 'timeout') throw new llm.ToolError(`The ${tool.name} service did not answer in time.`);
    if (kind === 'blocked') throw new llm.ToolError(`The ${tool.name} service is at an address the platform may not call (private or local network).`);
    throw new llm.ToolError(`The ${tool.name} service could not be reached.`);
  }
  if (res.status >= 300 && res.status < 400) {
    throw new llm.ToolError(`The ${tool.name} service answered with a redirect (HTTP ${res.status}), which is not followed.`);
  }
  if (res.status < 200 || res.status >= 300) throw new llm.ToolError(`The ${tool.name} service returned an error (HTTP ${res.status}).`);
  const text = res.body;
  return text.length > MAX_RESULT_CHARS ? text.slice(0, MAX_RESULT_CHARS) : text;
}

export function buildTools(config: CallConfig, actions: CallActions): llm.FunctionTool<any, any, any>[] {
  const tools: llm.FunctionTool<any, any, any>[] = [];
  for (const t of config.tools) {
    switch (t.type) {
      case 'function': {
        tools.push(llm.tool({
          name: t.name,
          description: t.description,
          parameters: (t.parameters && Object.keys(t.parameters).length ? t.parameters : { type: 'object', properties: {} }) as any,
          execute: async (args: Record<string, unknown>, opts: { toolCallId?: string }) =>
            callFunctionTool(t, args ?? {}, { callId: config.call.id, toolCallId: opts?.toolCallId }),
        }));
        break;
      }
      case 'end_call': {
        const name = t.name ?? 'end_call';
        tools.push(llm.tool({
          name,
          description: t.description ?? 'End the call. Use when the conversation is over and you have said goodbye.',
          execute: async () => {
            actions.hangUp('agent_hangup');
            return 'The call is ending.';
          },
        }));
        break;
      }
      case 'transfer_call': {
        const name = t.name ?? 'transfer_call';
        tools.push(llm.tool({
          name,
          description: t.description ?? 'Transfer the caller to a human colleague when they ask for one or you cannot help.',
          execute: async () => {
            // The workspace's destination policy (toll fraud): a refusal is a sentence the agent can say.
            // No policy in the config (an older control plane) refuses: the worker fails closed.
            const policy = config.destination_policy as DestinationPolicy | undefined;
            // Loaded on first use: libphonenumber's full metadata costs a job process's start-up a few hundred ms.
            const { checkDestination } = await import('../../../shared/destination-policy.ts');
            const decision = policy ? checkDestination(policy, t.destination) : { ok: false as const, message: 'no destination policy was given for this call' };
            if (!decision.ok) throw new llm.ToolError(`The transfer is not allowed: ${decision.message}.`);
            try {
              await actions.transfer(t.destination);
              return 'The call was transferred.';
            } catch {
              throw new llm.ToolError('The transfer did not go through.');
            }
          },
        }));
        break;
      }
      case 'do_not_call': {
        const name = t.name ?? 'do_not_call';
        tools.push(llm.tool({
          name,
          description:
            t.description ?? 'Add the person to the do-not-call list when they ask not to be called again. Then confirm it to them and end the call politely.',
          parameters: {
            type: 'object',
            properties: { reason: { type: 'string', maxLength: 500, description: 'What the person said, briefly' } },
          } as any,
          execute: async ({ reason }: any) => {
            try {
              await actions.addToDoNotCall(typeof reason === 'string' ? reason.slice(0, 500) : undefined);
              return 'The number is on the do-not-call list: it will not be called again.';
            } catch {
              throw new llm.ToolError('The number could not be added to the do-not-call list.');
            }
          },
        }));
        break;
      }
      case 'send_dtmf': {
        const name = t.name ?? 'send_dtmf';
        tools.push(llm.tool({
          name,
          description: t.description ?? 'Press keys on the phone keypad (DTMF), e.g. to navigate a phone menu.',
          parameters: {
            type: 'object',
            properties: { digits: { type: 'string', pattern: '^[0-9*#A-D]{1,32}$', description: 'Keys to press, in order' } },
            required: ['digits'],
          } as any,
          execute: async ({ digits }: any) => {
            try {
              await actions.sendDtmf(digits);
              return `Sent ${digits}.`;
            } catch {
              throw new llm.ToolError('The keys could not be sent.');
            }
          },
        }));
        break;
      }
    }
  }
  return tools;
}
