// The SSRF guard (shared/ssrf.ts) bound to the platform's configuration. Use it for every request to a
// customer-supplied URL: webhooks, function tools, knowledge crawling.
import type { Config } from '../config.ts';
import { parseAllowHosts, type SsrfOptions } from '../../../shared/ssrf.ts';

export * from '../../../shared/ssrf.ts';

/** `SSRF_ALLOWLIST` hosts may be private (tests, local development); production requires https. */
export function ssrfOptions(config: Pick<Config, 'SSRF_ALLOWLIST' | 'NODE_ENV'>): SsrfOptions {
  return { allowHosts: parseAllowHosts(config.SSRF_ALLOWLIST), requireHttps: config.NODE_ENV === 'production' };
}
