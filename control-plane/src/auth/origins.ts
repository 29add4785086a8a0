// Origin checks for publishable keys: exact matches, or a leading "*." wildcard for subdomains.
export function originAllowed(origin: string, allowed: string[]): boolean {
  let o: URL;
  try {
    o = new URL(origin);
  } catch {
    return false;
  }
  const normalized = `${o.protocol}//${o.host}`;
  for (const pattern of allowed) {
    if (pattern === normalized) return true;
    const m = /^(https?:\/\/)\*\.(.+)$/.exec(pattern);
    // "https://*.example.com" matches any subdomain of example.com (not example.com itself).
    if (m && `${o.protocol}//` === m[1] && o.host.endsWith(`.${m[2]}`)) return true;
  }
  return false;
}

/**
 * The canonical form of an allowed-origin entry (`scheme://host[:port]`, lower case, default port dropped,
 * optional leading `*.` on a host of at least two labels), or null when the entry is not an origin:
 * another scheme, a path, query, fragment or user info, or a wildcard anywhere else.
 */
export function normalizeOriginPattern(input: string): string | null {
  const m = /^(https?):\/\/(\*\.)?([^/?#\s]+)\/?$/i.exec(input);
  if (!m) return null;
  const [, scheme, wildcard, authority] = m;
  if (authority!.includes('*') || authority!.includes('@')) return null;
  let u: URL;
  try {
    u = new URL(`${scheme!.toLowerCase()}://${authority}`);
  } catch {
    return null;
  }
  if (!u.hostname || u.pathname !== '/' || u.search || u.hash) return null;
  // "*.com" would allow a whole top-level domain.
  if (wildcard && !u.hostname.includes('.')) return null;
  return `${u.protocol}//${wildcard ? '*.' : ''}${u.host}`;
}
