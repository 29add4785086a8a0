// Metric names a PromQL expression reads, and the names a /metrics page exports. Small on purpose: enough for
// the queries of deploy/grafana and deploy/prometheus (tested against both in test/deploy/).
const FUNCTIONS = new Set([
  'abs', 'absent', 'absent_over_time', 'avg', 'avg_over_time', 'bottomk', 'ceil', 'changes', 'clamp', 'clamp_max', 'clamp_min',
  'count', 'count_over_time', 'count_values', 'delta', 'deriv', 'exp', 'floor', 'group', 'histogram_quantile', 'idelta',
  'increase', 'irate', 'label_join', 'label_replace', 'last_over_time', 'ln', 'log2', 'log10', 'max', 'max_over_time', 'min',
  'min_over_time', 'predict_linear', 'quantile', 'quantile_over_time', 'rate', 'resets', 'round', 'scalar', 'sgn', 'sort',
  'sort_desc', 'sqrt', 'stddev', 'stdvar', 'sum', 'sum_over_time', 'time', 'timestamp', 'topk', 'vector',
  'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan',
]);

export function metricNames(expr: string): Set<string> {
  const names = new Set<string>();
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // label values and strings
    .replace(/\{[^}]*\}/g, '') // label matchers
    .replace(/\[[^\]]*\]/g, '') // range selectors
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // grouping labels
    .replace(/\$\w+/g, ' '); // Grafana variables
  for (const m of stripped.matchAll(/(?<![\w.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w.])/g)) {
    const id = m[1]!;
    if (FUNCTIONS.has(id.toLowerCase())) continue;
    if (/^\d/.test(id)) continue;
    names.add(id);
  }
  return names;
}

/** Every series name a Prometheus text page can contain, from its # TYPE lines (histogram parts included). */
export function exportedNames(page: string): Set<string> {
  const out = new Set<string>();
  for (const m of page.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    out.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) out.add(name + s);
  }
  return out;
}
