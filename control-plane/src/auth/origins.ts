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
