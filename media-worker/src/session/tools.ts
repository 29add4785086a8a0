// The agent's tools as agents-js function tools: customer `function` tools (a signed HTTP request with a
// timeout) and the built-ins end_call, transfer_call, send_dtmf and do_not_call, which act on the call through
// CallActions. A failing function tool never crashes the call: the model gets a short error it can say
// gracefully (ToolError), and the call's messages record the call and its output.
import { llm } from '@livekit/agents';
import type { CallConfig, FunctionToolConfig } from '../../../schemas/internal.ts';
import { callFunctionTool as sendFunctionTool } from '../../../shared/function-tool.ts';
import type { DestinationPolicy } from '../../../shared/destination-policy.ts';
import { createGuardedAgent, parseAllowHosts, type SsrfOptions } from '../../../shared/ssrf.ts';

export interface CallActions {
  /** Hang up after the current speech has played: end_reason agent_hangup. */
  hangUp(reason: 'agent_hangup'): void;
  /** SIP transfer of the caller; resolves when the bridge accepted it. */
  transfer(destination: string): Promise<void>;
  /** Warm transfer (session/warm-transfer.ts): resolves once the legs are joined, or with why not. */
  warmTransfer?(destination: string): Promise<{ ok: true } | { ok: false; message: string }>;
  /** Send DTMF digits on the call. */
  sendDtmf(digits: string): Promise<void>;
  /** Put the other party of the call on the organisation's do-not-call list. */
  addToDoNotCall(reason: string | undefined): Promise<void>;
}

export { MAX_RESPONSE_BYTES } from '../../../shared/function-tool.ts';

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

/** The tool's request (shared/function-tool.ts, as agent tests make it); a failure is a ToolError the model can say. */
export async function callFunctionTool(
  tool: FunctionToolConfig,
  args: Record<string, unknown>,
  ctx: { callId: string; toolCallId?: string },
): Promise<string> {
  const ssrf = toolSsrfOptions();
  const res = await sendFunctionTool(tool, args, {
    caller: { callId: ctx.callId },
    toolCallId: ctx.toolCallId ?? null,
    userAgent: 'vap-worker',
    ssrf,
    agent: agentFor(ssrf),
  });
  if (!res.ok) throw new llm.ToolError(res.message);
  return res.output;
}

/**
 * The warm transfer's result as the tool's output: joined (the agent leaves the call), or a ToolError with why
 * not, which the agent tells the caller; the call goes on.
 */
async function warmTransferOutput(actions: CallActions, destination: string): Promise<string> {
  if (!actions.warmTransfer) throw new llm.ToolError('The transfer did not go through: warm transfer is not available on this call.');
  const r = await actions.warmTransfer(destination).catch(() => ({ ok: false as const, message: 'The transfer did not go through.' }));
  if (r.ok) return 'The caller is now talking with the colleague.';
  throw new llm.ToolError(`The colleague could not be reached: ${r.message} Tell the caller, and go on helping them.`);
}

/** A transfer the control plane refused or could not place: the message is a sentence the agent can say. */
export class TransferNotPlaced extends Error {}

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
            if (t.mode === 'warm') return warmTransferOutput(actions, t.destination);
            try {
              await actions.transfer(t.destination);
              return 'The call was transferred.';
            } catch (err) {
              if (err instanceof TransferNotPlaced) throw new llm.ToolError(`The transfer did not go through: ${err.message} Tell the caller, and go on helping them.`);
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
