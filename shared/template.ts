// `{{name}}` templates for prompts and first messages, shared by the control plane (effective prompt) and
// the worker (first message, voicemail message). Per-call variables override the agent's dynamic_variables.
// A missing variable renders as an empty string (never the raw `{{name}}`, which a TTS would read aloud);
// the names that were missing are returned so callers can log them.

const PATTERN = /\{\{\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*\}\}/g;

export interface Rendered {
  text: string;
  missing: string[];
}

function stringify(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value);
}

/** Look a name up, with dotted paths into objects (`{{customer.name}}`). */
function lookup(vars: Record<string, unknown>, name: string): { found: boolean; value: unknown } {
  if (Object.hasOwn(vars, name)) return { found: true, value: vars[name] };
  let cur: unknown = vars;
  for (const part of name.split('.')) {
    if (cur === null || typeof cur !== 'object' || !Object.hasOwn(cur, part)) return { found: false, value: undefined };
    cur = (cur as Record<string, unknown>)[part];
  }
  return { found: true, value: cur };
}

export function renderTemplate(template: string, vars: Record<string, unknown>): Rendered {
  const missing: string[] = [];
  const text = template.replace(PATTERN, (_m, name: string) => {
    const { found, value } = lookup(vars, name);
    if (!found) {
      missing.push(name);
      return '';
    }
    return stringify(value);
  });
  return { text, missing: [...new Set(missing)] };
}

export const interpolate = (template: string, vars: Record<string, unknown>): string => renderTemplate(template, vars).text;

/** The variables of a call: the agent's dynamic_variables, overridden by the call's own. */
export const mergeVariables = (agentDefaults: Record<string, unknown>, callVariables: Record<string, unknown>) => ({
  ...agentDefaults,
  ...callVariables,
});
