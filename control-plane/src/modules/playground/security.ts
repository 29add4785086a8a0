// The playground's response headers. The page holds an API key in memory, so it allows nothing it does not need:
// scripts and styles only from this origin (no inline code), network only to this origin and the LiveKit server
// the browser joins, recordings only from where this control plane signs them, and no framing.
import type { Config } from '../../config.ts';

/** The origin of a URL, or null when it does not parse. */
function originOf(url: string | undefined): string | null {
  if (!url) return null;
  try {
    const o = new URL(url).origin;
    return o === 'null' ? null : o;
  } catch {
    return null;
  }
}

/** ws(s) and http(s) origins of the LiveKit URL browsers use (livekit-client validates a failed join over http). */
export function livekitOrigins(publicUrl: string): string[] {
  const o = originOf(publicUrl);
  if (!o) return [];
  const u = new URL(o);
  const secure = u.protocol === 'wss:' || u.protocol === 'https:';
  const host = u.host;
  return secure ? [`wss://${host}`, `https://${host}`] : [`ws://${host}`, `http://${host}`];
}

export interface PolicyInputs {
  livekitPublicUrl: string;
  /** Where signed recording links point (PUBLIC_BASE_URL); 'self' when it is this origin. */
  publicBaseUrl: string;
  /** S3-compatible endpoint serving presigned recording links, when recordings live there. */
  s3Endpoint?: string | undefined;
  s3Bucket?: string | undefined;
  s3Region?: string | undefined;
}

export function policyInputs(config: Config, livekitPublicUrl: string, publicBaseUrl: string): PolicyInputs {
  return { livekitPublicUrl, publicBaseUrl, s3Endpoint: config.S3_ENDPOINT, s3Bucket: config.S3_BUCKET, s3Region: config.S3_REGION };
}

/** Sources a recording link may come from besides 'self'. */
function recordingSources(p: PolicyInputs): string[] {
  const out: string[] = [];
  const base = originOf(p.publicBaseUrl);
  if (base) out.push(base);
  if (p.s3Bucket) {
    const endpoint = originOf(p.s3Endpoint);
    // Without an endpoint the AWS SDK signs virtual-hosted URLs on the bucket's regional host.
    out.push(endpoint ?? `https://${p.s3Bucket}.s3.${p.s3Region ?? 'us-east-1'}.amazonaws.com`);
  }
  return [...new Set(out)];
}

export function contentSecurityPolicy(p: PolicyInputs): string {
  const directives: [string, string[]][] = [
    ['default-src', ["'none'"]],
    ['script-src', ["'self'"]],
    ['style-src', ["'self'"]],
    ['connect-src', ["'self'", ...livekitOrigins(p.livekitPublicUrl)]],
    ['media-src', ["'self'", 'blob:', ...recordingSources(p)]],
    ['img-src', ["'self'", 'data:']],
    ['frame-ancestors', ["'none'"]],
    ['base-uri', ["'none'"]],
    ['form-action', ["'none'"]],
  ];
  return directives.map(([name, values]) => `${name} ${values.join(' ')}`).join('; ');
}

/** Headers of every playground response (the page and its assets). */
export function securityHeaders(p: PolicyInputs): Record<string, string> {
  return {
    'content-security-policy': contentSecurityPolicy(p),
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
    'cross-origin-opener-policy': 'same-origin',
    'cross-origin-resource-policy': 'same-origin',
    // The microphone for this origin only; nothing else the page does not use.
    'permissions-policy': 'microphone=(self), camera=(), geolocation=(), payment=(), usb=()',
    'cache-control': 'no-store',
  };
}
