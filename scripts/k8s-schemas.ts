// Regenerates deploy/kubernetes-schemas/<version>.json: JSON schemas for the Kubernetes kinds the Helm chart
// renders, cut from the API server's own OpenAPI document (api/openapi-spec/swagger.json of the pinned
// k8s.io/kubernetes module, fetched with `go mod download`). Vendored so the chart tests need no network.
//   node scripts/k8s-schemas.ts            (uses K8S_VERSION below)
// Strict like kubeconform's "-strict": an unknown field is an error. int-or-string and quantities accept
// both JSON types, as the API server does.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const K8S_VERSION = 'v1.33.4';
const KINDS = [
  'v1/ConfigMap', 'v1/Secret', 'v1/Service', 'v1/ServiceAccount', 'v1/PersistentVolumeClaim',
  'apps/v1/Deployment', 'apps/v1/StatefulSet', 'batch/v1/Job', 'policy/v1/PodDisruptionBudget',
  'autoscaling/v2/HorizontalPodAutoscaler', 'networking.k8s.io/v1/Ingress', 'networking.k8s.io/v1/NetworkPolicy',
];

type Schema = Record<string, any>;

function convert(s: Schema): Schema {
  if (Array.isArray(s)) return s.map(convert);
  if (!s || typeof s !== 'object') return s;
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'description' || k.startsWith('x-kubernetes-')) continue;
    out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v as Schema).map(([p, ps]) => [p, convert(ps)])) : convert(v as Schema);
  }
  if (out.$ref) return { $ref: out.$ref };
  if (out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

function main() {
  const info = JSON.parse(execFileSync('go', ['mod', 'download', '-json', `k8s.io/kubernetes@${K8S_VERSION}`], { encoding: 'utf8', cwd: '/tmp' }));
  const swagger = JSON.parse(readFileSync(path.join(info.Dir, 'api/openapi-spec/swagger.json'), 'utf8'));
  const defs: Schema = swagger.definitions;
  const kinds: Record<string, string> = {};
  for (const [name, d] of Object.entries(defs)) {
    for (const gvk of (d as Schema)['x-kubernetes-group-version-kind'] ?? []) {
      const key = `${gvk.group ? `${gvk.group}/` : ''}${gvk.version}/${gvk.kind}`;
      if (KINDS.includes(key) && name.startsWith('io.k8s.api.')) kinds[key] = name;
    }
  }
  const missing = KINDS.filter((k) => !kinds[k]);
  if (missing.length) throw new Error(`kinds not found: ${missing.join(', ')}`);
  // The closure of every definition the kinds reach.
  const keep = new Set<string>();
  const visit = (name: string) => {
    if (keep.has(name)) return;
    keep.add(name);
    JSON.stringify(defs[name]).replace(/"#\/definitions\/([^"]+)"/g, (_, ref) => (visit(ref), ''));
  };
  Object.values(kinds).forEach(visit);
  const out: Schema = {};
  for (const name of [...keep].sort()) out[name] = convert(defs[name]);
  out['io.k8s.apimachinery.pkg.util.intstr.IntOrString'] = { oneOf: [{ type: 'string' }, { type: 'integer' }] };
  out['io.k8s.apimachinery.pkg.api.resource.Quantity'] = { oneOf: [{ type: 'string', pattern: '^[+-]?[0-9.]+([eE][+-]?[0-9]+|[a-zA-Z]{0,2})?$' }, { type: 'number' }] };
  const file = path.join(import.meta.dirname, '..', 'deploy', 'kubernetes-schemas', `${K8S_VERSION}.json`);
  writeFileSync(file, `${JSON.stringify({ kubernetesVersion: K8S_VERSION, source: `k8s.io/kubernetes@${K8S_VERSION} api/openapi-spec/swagger.json`, kinds, definitions: out })}\n`);
  process.stdout.write(`${file}: ${Object.keys(kinds).length} kinds, ${keep.size} definitions\n`);
}

if (import.meta.main ?? process.argv[1] === import.meta.filename) main();
