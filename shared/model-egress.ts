// The one egress rule for LLM calls, used by the media workers (the call's LLM) and the control plane (post-call
// analysis) alike:
//  - a tenant's base_url goes through the SSRF guard: public addresses only, https in production;
//  - private hosts only where the operator lists them in LLM_PRIVATE_HOSTS: host names or literal addresses
//    (matched against the URL's host, as SSRF_ALLOWLIST is) and CIDR ranges (matched against the address the
//    connection uses, so "10.20.0.0/16" admits a LAN name that resolves there); plain http is accepted there;
//  - SSRF_ALLOWLIST (tests, local development) applies too, as it does to every other tenant URL;
//  - the operator's own endpoint (the provider's API or a *_BASE_URL the operator set) is trusted: its host is
//    allowed for that call only, never for a tenant's URL.
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { checkUrl, createGuardedAgent, guardedFetch, parseAllowHosts, type SsrfOptions } from './ssrf.ts';
import type { LlmEndpoint } from './providers.ts';
import { MODEL_STREAM_MAX_BYTES } from './text-caps.ts';

type Env = Record<string, string | undefined>;

export const PRIVATE_HOSTS_HINT = 'an operator can allow private model hosts with LLM_PRIVATE_HOSTS';

/** LLM_PRIVATE_HOSTS split into host names (and literal addresses) and CIDR ranges. Throws on a bad range. */
export function parsePrivateHosts(list: string | undefined): { hosts: string[]; cidrs: string[] } {
  const hosts: string[] = [];
  const cidrs: string[] = [];
  for (const entry of parseAllowHosts(list)) {
    if (!entry.includes('/')) {
      hosts.push(entry);
      continue;
    }
    const [addr, bits] = entry.split('/');
    if (!net.isIP(addr ?? '') || !ipaddr.isValidCIDR(entry)) throw new Error(`LLM_PRIVATE_HOSTS: ${entry} is not a CIDR range`);
    cidrs.push(`${addr}/${Number(bits)}`);
  }
  return { hosts, cidrs };
}

/** The guard's options for one LLM endpoint. */
export function modelEgressOptions(endpoint: Pick<LlmEndpoint, 'baseUrl' | 'tenant'>, env: Env): SsrfOptions {
  const { hosts, cidrs } = parsePrivateHosts(env.LLM_PRIVATE_HOSTS);
  const allowHosts = [...parseAllowHosts(env.SSRF_ALLOWLIST), ...hosts];
  if (!endpoint.tenant) allowHosts.push(...parseAllowHosts(new URL(endpoint.baseUrl).hostname));
  return { allowHosts, allowCidrs: cidrs, requireHttps: env.NODE_ENV === 'production', blockedHint: PRIVATE_HOSTS_HINT };
}

/** Refuses an endpoint the guard would refuse, before any call (SsrfBlockedError, with the hint). */
export function checkModelUrl(endpoint: Pick<LlmEndpoint, 'baseUrl' | 'tenant'>, env: Env): void {
  checkUrl(endpoint.baseUrl, modelEgressOptions(endpoint, env));
}

// One pooled agent per set of options in a process (a worker's job process serves one call at a time).
const agents = new Map<string, ReturnType<typeof createGuardedAgent>>();

/** A model's answer grew past its cap once decoded (docs/security.md, "Bounded text"). */
export class ModelAnswerTooLargeError extends Error {
  override name = 'ModelAnswerTooLargeError';
}

/**
 * The response with its body cut off, as an error, past `maxBytes` decoded bytes. The SDKs' fetch decodes gzip
 * and reads whole answers: without this, a tenant's server could send a gzip bomb or a million tool calls and
 * the process would inflate, buffer and parse it all. The analysis reads at most 256 KiB the same way
 * (shared/ssrf.ts, guardedRequest's maxResponseBytes); erroring the stream stops the decoding there.
 */
export function capResponse(res: Response, maxBytes: number): Response {
  if (!res.body) return res;
  let size = 0;
  const capped = res.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, ctl) {
        size += chunk.byteLength;
        if (size > maxBytes) ctl.error(new ModelAnswerTooLargeError(`the model's answer is larger than ${Math.round(maxBytes / 1024)} KiB once decoded`));
        else ctl.enqueue(chunk);
      },
    }),
  );
  return new Response(capped, { status: res.status, statusText: res.statusText, headers: res.headers });
}

/**
 * A guarded `fetch` for an SDK client (OpenAI, Anthropic) talking to this endpoint, whose answers are cut at
 * `maxBytes` decoded bytes (shared/text-caps.ts: a whole answer 256 KiB, a streamed one 2 MiB).
 */
export function modelFetch(endpoint: Pick<LlmEndpoint, 'baseUrl' | 'tenant'>, env: Env, maxBytes: number = MODEL_STREAM_MAX_BYTES): typeof fetch {
  const ssrf = modelEgressOptions(endpoint, env);
  const key = JSON.stringify(ssrf);
  let agent = agents.get(key);
  if (!agent) agents.set(key, (agent = createGuardedAgent(ssrf)));
  const guarded = guardedFetch(agent, ssrf);
  return async (input, init) => capResponse(await guarded(input, init), maxBytes);
}
