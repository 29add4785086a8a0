// GET /health/ready needs no credential and costs a database round trip (and a LiveKit call) per request. The
// chart's Ingress must not route it (only /health, exactly), the values schema must refuse a path that would,
// and requests that reach it anyway share one round of checks. Also here: the chart's `jobs` component, which
// takes knowledge ingestion (and every other job) off the API pods.
import { describe, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { toolPath } from '../support/tools.ts';
import { usePlatform } from '../support/platform.ts';
import { K8S_VERSION } from '../../scripts/k8s-schemas.ts';

const run = promisify(execFile);
const chart = path.resolve(import.meta.dirname, '../../deploy/helm/vap');

type Obj = { kind: string; metadata: { name: string }; spec: any };

async function render(args: string[]): Promise<Obj[]> {
  const { stdout } = await run(toolPath('helm'), ['template', 'rel', chart, '--kube-version', K8S_VERSION.replace(/^v/, ''), ...args], { maxBuffer: 64 << 20 });
  return parseAllDocuments(stdout).map((d) => d.toJS() as Obj).filter(Boolean);
}

async function renderError(args: string[]): Promise<string> {
  try {
    await render(args);
  } catch (err) {
    return String((err as { stderr?: string }).stderr ?? err);
  }
  return '';
}

/** Whether an Ingress path sends `url` to the backend (Kubernetes: Prefix matches whole path elements). */
function routes(ing: Obj, url: string): boolean {
  return ing.spec.rules.some((r: any) =>
    r.http.paths.some((p: { path: string; pathType: string }) => {
      if (p.pathType === 'Exact') return p.path === url;
      const prefix = p.path.replace(/\/+$/, '');
      return prefix === '' || url === prefix || url.startsWith(`${prefix}/`);
    }),
  );
}

const envOf = (d: Obj) => Object.fromEntries((d.spec.template.spec.containers[0].env ?? []).map((e: { name: string; value?: string }) => [e.name, e.value]));

describe('the chart', () => {
  it('routes /health, the API and the docs through the Ingress, but not /health/ready', { timeout: 60_000 }, async () => {
    const [ing] = (await render(['--set', 'ingress.enabled=true'])).filter((o) => o.kind === 'Ingress');
    expect(routes(ing!, '/health')).toBe(true);
    expect(routes(ing!, '/v1/agents')).toBe(true);
    expect(routes(ing!, '/docs')).toBe(true);
    expect(routes(ing!, '/health/ready')).toBe(false);
    expect(routes(ing!, '/internal/v1/workers/x/heartbeat')).toBe(false);
  });

  it('refuses ingress paths that would route /health/ready', { timeout: 60_000 }, async () => {
    for (const paths of ['["/v1","/health"]', '["/v1","/"]', '["/health/ready"]']) {
      expect(await renderError(['--set-json', `ingress.paths=${paths}`]), paths).toMatch(/paths/);
    }
    expect(await renderError(['--set-json', 'ingress.exactPaths=["/health/ready"]'])).toMatch(/exactPaths/);
  });

  it('runs the jobs in their own pods, with JOBS_ENABLED off on the API pods, when jobs.enabled', { timeout: 60_000 }, async () => {
    const off = await render([]);
    expect(off.filter((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-jobs'))).toEqual([]);
    expect(envOf(off.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-control-plane'))!).JOBS_ENABLED).toBeUndefined();

    const on = await render(['--set', 'jobs.enabled=true', '--set', 'jobs.env.KB_PARSE_MAX_MEMORY_MB=768']);
    const api = on.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-control-plane'))!;
    const jobs = on.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('-jobs'))!;
    expect(envOf(api).JOBS_ENABLED).toBe('false');
    expect(envOf(jobs).JOBS_ENABLED).toBe('true');
    expect(envOf(jobs).KB_PARSE_MAX_MEMORY_MB).toBe('768');
    // Nothing routes HTTP to the jobs pods: their Service has the metrics port only.
    const svc = on.find((o) => o.kind === 'Service' && o.metadata.name.endsWith('-jobs'))!;
    expect(svc.spec.ports.map((p: { name: string }) => p.name)).toEqual(['metrics']);
    // They reach the bundled database.
    const pg = on.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name.endsWith('-postgresql'))!;
    const components = pg.spec.ingress[0].from.map((f: any) => f.podSelector?.matchLabels?.['app.kubernetes.io/component']);
    expect(components).toContain('jobs');
  });
});

describe('GET /health/ready under a flood', () => {
  it('answers concurrent requests from one round of checks', { timeout: 60_000 }, async () => {
    const tp = await usePlatform({});
    const N = 30;
    const answers = await Promise.all(Array.from({ length: N }, () => tp.request('get', '/health/ready')));
    for (const a of answers) expect(a.body.checks.database.status).toBe('ok');
    // Each round measures its own latencies: identical check reports come from a shared round.
    const rounds = new Set(answers.map((a) => JSON.stringify(a.body.checks)));
    expect(rounds.size).toBeLessThanOrEqual(5);
  });
});
