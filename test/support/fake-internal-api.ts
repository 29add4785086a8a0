// A local server speaking the control plane's internal API (docs/internal-api.md) for worker tests:
// serves call configs, records reports (idempotent by seq), answers knowledge searches from a script.
import http from 'node:http';
import { listenOnLoopback } from './loopback-server.ts';
import type { CallConfig, KnowledgeSearchResult } from '../../schemas/internal.ts';

export interface RecordedReport {
  kind: 'started' | 'transcript' | 'handoff' | 'ended' | 'failed';
  callId: string;
  body: any;
}

export interface FakeInternalApi {
  url: string;
  token: string;
  configs: Map<string, CallConfig>;
  reports: RecordedReport[];
  searches: { callId: string; query: string; top_k: number }[];
  /** Status to answer the next N report requests with (to exercise retries). */
  failNextReports: { count: number; status: number };
  search: (callId: string, query: string) => KnowledgeSearchResult;
  unauthorized: number;
  waitFor(pred: (r: RecordedReport[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeInternalApi(token = 'test-worker-token-0123456789abcdef'): Promise<FakeInternalApi> {
  const seen = new Set<string>();
  const api: FakeInternalApi = {
    url: '',
    token,
    configs: new Map(),
    reports: [],
    searches: [],
    failNextReports: { count: 0, status: 503 },
    search: () => ({ chunks: [] }),
    unauthorized: 0,
    async waitFor(pred, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      while (!pred(api.reports)) {
        if (Date.now() > end) throw new Error('timed out waiting for reports');
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    close: async () => {},
  };
  const server = http.createServer((req, res) => {
    const json = (status: number, body?: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body === undefined ? '' : JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${token}`) {
      api.unauthorized++;
      return json(401, { detail: 'unauthorized', type: 'unauthorized' });
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const m = /^\/internal\/v1\/calls\/([^/]+)\/(config|started|transcript|handoff|ended|failed|knowledge\/search)$/.exec(req.url ?? '');
      if (!m) return json(404, { detail: 'not found', type: 'not_found' });
      const callId = decodeURIComponent(m[1]!);
      const route = m[2]!;
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      if (route === 'config' && req.method === 'GET') {
        const cfg = api.configs.get(callId);
        return cfg ? json(200, cfg) : json(404, { detail: 'Call not found', type: 'not_found' });
      }
      if (route === 'knowledge/search' && req.method === 'POST') {
        api.searches.push({ callId, query: body.query, top_k: body.top_k });
        return json(200, api.search(callId, body.query));
      }
      if (req.method === 'POST' && (route === 'started' || route === 'transcript' || route === 'handoff' || route === 'ended' || route === 'failed')) {
        if (api.failNextReports.count > 0) {
          api.failNextReports.count--;
          return json(api.failNextReports.status, { detail: 'try later' });
        }
        const key = `${callId}:${body.seq}`;
        if (seen.has(key)) return json(200, { ok: true, duplicate: true });
        seen.add(key);
        api.reports.push({ kind: route, callId, body });
        return json(200, { ok: true, duplicate: false });
      }
      json(405, { detail: 'method not allowed' });
    });
  });
  ({ origin: api.url, close: api.close } = await listenOnLoopback(server));
  return api;
}
