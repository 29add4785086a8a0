// Crawls one site for a `url` source: breadth first from the submitted URL (plus the site's sitemaps), same
// site only, within a depth and a page limit, respecting robots.txt (and meta robots), with a timeout and a
// size limit per request, a checked content type, canonical-URL dedup and a small number of parallel
// requests (the whole crawl is one host, so that is the per-host politeness bound). Every URL goes
// through the SSRF guard: the submitted one, each redirect hop (followed by hand, never by the client) and
// each discovered link.
import { createHash } from 'node:crypto';
import robotsParserModule from 'robots-parser';
import { parseHTML } from 'linkedom';
import { checkUrl, createGuardedAgent, describeRequestError, guardedRequest, SsrfBlockedError, type SsrfOptions } from '../../net/ssrf.ts';
import { htmlDocument, normaliseText, type Section } from './parse.ts';

export interface CrawlOptions {
  maxPages: number;
  maxDepth: number;
  timeoutMs: number;
  maxPageBytes: number;
  concurrency: number;
  userAgent: string;
  ssrf: SsrfOptions;
  /** The whole crawl stops queueing new pages after this (sitemap discovery included). */
  deadlineMs: number;
  /** URLs discovered (sitemaps and links together); discovery stops at this many. */
  maxUrls: number;
  signal?: AbortSignal;
}

export interface CrawlProgress {
  pages_found: number;
  pages_fetched: number;
  pages_skipped: number;
  pages_failed: number;
}

export interface CrawledPage {
  url: string;
  title: string;
  sections: Section[];
}

export interface CrawlResult {
  pages: CrawledPage[];
  /** Why pages failed or were skipped, first few (for the error message when nothing could be read). */
  problems: { url: string; reason: string }[];
}

interface Robots {
  isAllowed(url: string, ua?: string): boolean | undefined;
  getSitemaps(): string[];
}
// robots-parser is CommonJS (module.exports = function); its typings describe it as a namespace.
const robotsParser = robotsParserModule as unknown as (url: string, body: string) => Robots;

const MAX_REDIRECTS = 5;
const HTML_TYPES = ['text/html', 'application/xhtml+xml'];

/** Same site: same scheme-independent host and port, ignoring a leading "www.". */
export const siteOf = (u: URL) => u.host.replace(/^www\./, '');

/** The URL a page is known by: no fragment, no tracking parameters, sorted query. */
export function canonicalUrl(raw: string | URL, base?: string | URL): string | null {
  let u: URL;
  try {
    u = new URL(raw, base);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  u.hash = '';
  for (const k of [...u.searchParams.keys()]) if (/^(utm_|fbclid$|gclid$)/.test(k)) u.searchParams.delete(k);
  u.searchParams.sort();
  return u.toString();
}

export async function crawl(start: string, o: CrawlOptions, onProgress: (p: CrawlProgress) => void): Promise<CrawlResult> {
  const startUrl = checkUrl(canonicalUrl(start) ?? start, o.ssrf);
  const site = siteOf(startUrl);
  const agent = createGuardedAgent({ ...o.ssrf, connectionsPerOrigin: o.concurrency, connectTimeoutMs: o.timeoutMs });
  const progress: CrawlProgress = { pages_found: 0, pages_fetched: 0, pages_skipped: 0, pages_failed: 0 };
  const problems: CrawlResult['problems'] = [];
  const pages: CrawledPage[] = [];
  const seen = new Set<string>();
  const contentSeen = new Set<string>();
  const queue: { url: string; depth: number }[] = [];
  const deadline = Date.now() + o.deadlineMs;
  const report = () => onProgress({ ...progress });
  const note = (kind: 'skipped' | 'failed', url: string, reason: string) => {
    if (kind === 'skipped') progress.pages_skipped++;
    else progress.pages_failed++;
    if (problems.length < 20) problems.push({ url, reason });
    report();
  };
  // Discovery is bounded by count and time: a sitemap index can list millions of URLs.
  const discovering = () => seen.size < o.maxUrls && Date.now() <= deadline && !o.signal?.aborted;
  const enqueue = (url: string, depth: number) => {
    if (seen.has(url) || !discovering()) return;
    seen.add(url);
    progress.pages_found++;
    queue.push({ url, depth });
  };

  /** GET with redirects followed by hand: each hop is checked (SSRF, same site, loops). */
  const get = async (url: string, accept: string) => {
    const chain = new Set<string>([url]);
    let current = url;
    for (let hop = 0; ; hop++) {
      const res = await guardedRequest(agent, current, o.ssrf, {
        headers: { 'user-agent': o.userAgent, accept },
        timeoutMs: o.timeoutMs,
        maxResponseBytes: o.maxPageBytes,
        ...(o.signal ? { signal: o.signal } : {}),
      });
      if (res.status < 300 || res.status >= 400 || res.status === 304) return { res, url: current };
      const location = res.headers.location;
      const next = canonicalUrl(String(Array.isArray(location) ? location[0] : (location ?? '')), current);
      if (!next) throw new PageError('failed', `redirect without a usable Location (HTTP ${res.status})`);
      if (chain.has(next)) throw new PageError('failed', 'redirect loop');
      if (hop + 1 >= MAX_REDIRECTS) throw new PageError('failed', `more than ${MAX_REDIRECTS} redirects`);
      const nu = checkUrl(next, o.ssrf);
      if (siteOf(nu) !== site) throw new PageError('skipped', `redirects to another site (${nu.host})`);
      chain.add(next);
      current = next;
    }
  };

  try {
    // robots.txt: a missing or unreadable file allows everything, as crawlers conventionally treat it.
    let robots: Robots | null = null;
    const robotsUrl = new URL('/robots.txt', startUrl).toString();
    try {
      const { res } = await get(robotsUrl, 'text/plain');
      if (res.status === 200) robots = robotsParser(robotsUrl, res.body);
    } catch {
      robots = null;
    }
    const allowed = (url: string) => robots?.isAllowed(url, o.userAgent) !== false;

    enqueue(startUrl.toString(), 0);
    // Sitemaps (declared in robots.txt, else /sitemap.xml): their same-site URLs join at depth 1.
    const sitemaps = robots?.getSitemaps().length ? robots.getSitemaps() : [new URL('/sitemap.xml', startUrl).toString()];
    if (o.maxDepth >= 1) {
      for (const sm of sitemaps.slice(0, 5)) await sitemapUrls(sm, { get, site, ssrf: o.ssrf, more: discovering, add: (loc) => enqueue(loc, 1) });
    }
    report();

    let fetchedOrInFlight = 0;
    const worker = async () => {
      for (;;) {
        const item = queue.shift();
        if (!item) return;
        if (!allowed(item.url)) {
          note('skipped', item.url, 'disallowed by robots.txt');
          continue;
        }
        if (fetchedOrInFlight >= o.maxPages || Date.now() > deadline || o.signal?.aborted) {
          note('skipped', item.url, fetchedOrInFlight >= o.maxPages ? `over the limit of ${o.maxPages} pages` : 'crawl time limit reached');
          continue;
        }
        fetchedOrInFlight++;
        try {
          const { res, url } = await get(item.url, 'text/html,application/xhtml+xml;q=0.9,text/plain;q=0.5');
          if (url !== item.url && !seen.has(url)) seen.add(url);
          if (res.status !== 200) throw new PageError('failed', `HTTP ${res.status}`);
          if (res.truncated) throw new PageError('failed', `page larger than ${o.maxPageBytes} bytes`);
          const type = String(res.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
          let page: CrawledPage;
          if (HTML_TYPES.includes(type)) {
            const { document } = parseHTML(res.body);
            const metaRobots = (document.querySelector('meta[name="robots" i]')?.getAttribute('content') ?? '').toLowerCase();
            const canonical = canonicalUrl(document.querySelector('link[rel="canonical" i]')?.getAttribute('href') ?? '', url);
            if (canonical && canonical !== url && canonical !== item.url && seen.has(canonical) && siteOf(new URL(canonical)) === site) {
              throw new PageError('skipped', `duplicate of ${canonical}`);
            }
            if (!metaRobots.includes('nofollow') && item.depth < o.maxDepth) {
              const baseHref = document.querySelector('base[href]')?.getAttribute('href');
              const base = baseHref ? (canonicalUrl(baseHref, url) ?? url) : url;
              for (const a of document.querySelectorAll('a[href]')) {
                if (!discovering()) break;
                const next = canonicalUrl(a.getAttribute('href') ?? '', base);
                if (!next || seen.has(next)) continue;
                let nu: URL;
                try {
                  nu = checkUrl(next, o.ssrf);
                } catch (err) {
                  seen.add(next);
                  progress.pages_found++;
                  note('skipped', next, `blocked: ${(err as Error).message}`);
                  continue;
                }
                if (siteOf(nu) !== site) continue; // other sites are not part of this source (not counted)
                enqueue(next, item.depth + 1);
              }
            }
            if (metaRobots.includes('noindex')) throw new PageError('skipped', 'meta robots noindex');
            const doc = htmlDocument(res.body, url);
            page = { url, title: doc.title, sections: doc.sections };
          } else if (type === 'text/plain') {
            const text = normaliseText(res.body);
            page = { url, title: url, sections: text ? [{ heading: '', text }] : [] };
          } else {
            throw new PageError('skipped', `not an HTML page (${type || 'no content type'})`);
          }
          const hash = createHash('sha1').update(page.sections.map((s) => `${s.heading}\n${s.text}`).join('\n')).digest('hex');
          if (contentSeen.has(hash)) throw new PageError('skipped', 'same content as another page');
          contentSeen.add(hash);
          if (!page.sections.length) throw new PageError('skipped', 'no readable text');
          pages.push(page);
          progress.pages_fetched++;
          report();
        } catch (err) {
          if (err instanceof PageError) {
            if (err.kind === 'skipped') fetchedOrInFlight--;
            note(err.kind, item.url, err.message);
          } else {
            note('failed', item.url, err instanceof SsrfBlockedError ? `blocked: ${err.message}` : describeRequestError(err).message);
          }
        }
      }
    };
    // Workers pick up links found by others; loop until the queue stays empty with nobody fetching.
    let active = 0;
    await new Promise<void>((resolve, reject) => {
      const spawn = () => {
        while (active < o.concurrency && queue.length) {
          active++;
          worker()
            .then(() => {
              active--;
              if (queue.length) spawn();
              else if (active === 0) resolve();
            })
            .catch(reject);
        }
        if (active === 0) resolve();
      };
      spawn();
    });
    return { pages, problems };
  } finally {
    await agent.close().catch(() => {});
  }
}

class PageError extends Error {
  readonly kind: 'skipped' | 'failed';
  constructor(kind: 'skipped' | 'failed', message: string) {
    super(message);
    this.kind = kind;
  }
}

type Getter = (url: string, accept: string) => Promise<{ res: { status: number; body: string; truncated: boolean }; url: string }>;

interface SitemapWalk {
  get: Getter;
  site: string;
  ssrf: SsrfOptions;
  /** False once the crawl's URL limit or deadline is reached: checked before every fetch and every URL. */
  more(): boolean;
  add(url: string): void;
}

/** Adds the <loc> entries of a sitemap (one level of sitemap index followed), same site only. */
async function sitemapUrls(url: string, w: SitemapWalk, depth = 0): Promise<void> {
  if (!w.more()) return;
  let body: string;
  try {
    const u = checkUrl(url, w.ssrf);
    if (siteOf(u) !== w.site) return;
    const { res } = await w.get(u.toString(), 'application/xml,text/xml');
    if (res.status !== 200 || res.truncated) return;
    body = res.body;
  } catch {
    return;
  }
  const { document } = parseHTML(`<root>${body.replace(/<\?xml[^>]*>/, '')}</root>`);
  const locs = [...document.querySelectorAll('loc')].map((l) => (l.textContent ?? '').trim()).filter(Boolean);
  const isIndex = !!document.querySelector('sitemapindex');
  for (const loc of locs.slice(0, 1000)) {
    if (!w.more()) return;
    const c = canonicalUrl(loc);
    if (!c) continue;
    if (isIndex) {
      if (depth === 0) await sitemapUrls(c, w, 1);
    } else if (siteOf(new URL(c)) === w.site) w.add(c);
  }
}
