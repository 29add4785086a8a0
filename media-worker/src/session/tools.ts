// The agent's tools as agents-js function tools: customer `function` tools (a signed HTTP request with a
// timeout) and the built-ins end_call, transfer_call and send_dtmf, which act on the call through
// CallActions. A failing function tool never crashes the call: the model gets a short error it can say
// gracefully (ToolError), and the call's messages record the call and its output.
import { randomUUID } from 'node:crypto';
import { llm } from '@livekit/agents';
import type { CallConfig, FunctionToolConfig, ToolConfig } from '../../../schemas/internal.ts';
import { signatureHeaders } from '../../../shared/signing.ts';

export interface CallActions {
  /** Hang up after the current speech has played: end_reason agent_hangup. */
  hangUp(reason: 'agent_hangup'): void;
  /** SIP transfer of the caller; resolves when the bridge accepted it. */
  transfer(destination: string): Promise<void>;
  /** Send DTMF digits on the call. */
  sendDtmf(digits: string): Promise<void>;
}

/** Largest tool answer passed back to the model (characters). */
const MAX_RESULT_CHARS = 4000;

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
  let res: Response;
  try {
    res = await fetch(url, { method: tool.method, headers, body, signal: AbortSignal.timeout(tool.timeout_ms), redirect: 'error' });
  } catch (err) {
    const e = err as Error;
    if (e.name === 'TimeoutError') throw new llm.ToolError(`The ${tool.name} service did not answer in time.`);
    throw new llm.ToolError(`The ${tool.name} service could not be reached.`);
  }
  const text = await res.text().catch(() => '');
  if (!res.ok) throw new llm.ToolError(`The ${tool.name} service returned an error (HTTP ${res.status}).`);
  return text.length > MAX_RESULT_CHARS ? text.slice(0, MAX_RESULT_CHARS) : text;
}

export function buildTools(config: CallConfig, actions: CallActions): llm.FunctionTool<any, any, any>[] {
  const tools: llm.FunctionTool<any, any, any>[] = [];
  for (const t of config.tools as ToolConfig[]) {
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
