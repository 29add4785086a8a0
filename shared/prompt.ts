// Prompt assembly shared by the control plane (an agent's `effective_system_prompt`) and the media worker
// (the prompt of a live call, after per-call variables are interpolated).

const present = (s: string | null | undefined): s is string => typeof s === 'string' && s.trim() !== '';

/**
 * The agent's job description as a `# Role` block, followed by the model's system prompt:
 *   - both present:      "# Role\n" + job_description + "\n\n" + system_prompt
 *   - job only:          "# Role\n" + job_description
 *   - system prompt only: system_prompt
 *   - neither:           null
 * Both strings are used verbatim; an empty or whitespace-only string counts as absent.
 */
export function effectiveSystemPrompt(jobDescription: string | null | undefined, systemPrompt: string | null | undefined): string | null {
  if (present(jobDescription)) {
    const role = `# Role\n${jobDescription}`;
    return present(systemPrompt) ? `${role}\n\n${systemPrompt}` : role;
  }
  return present(systemPrompt) ? systemPrompt : null;
}

/** `{{name}}` or `{{ name }}`; names are letters, digits and `_`, not starting with a digit. */
const PLACEHOLDER = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g;

export interface Interpolated {
  text: string;
  /** Placeholders that had no value, once each, in order of first appearance. */
  missing: string[];
}

/**
 * Replaces `{{name}}` placeholders with `vars[name]`. Strings are inserted as they are, numbers and booleans
 * as text, other values as JSON. A placeholder without a value (absent, null or undefined) becomes the empty
 * string and its name is reported in `missing`, so the caller can log it: the model never sees a raw
 * `{{name}}`, which it would otherwise read aloud or imitate. Text that is not a well-formed placeholder is
 * left alone, and values are not re-scanned for placeholders.
 */
export function interpolate(template: string, vars: Record<string, unknown>): Interpolated {
  const missing: string[] = [];
  const text = template.replace(PLACEHOLDER, (_m, name: string) => {
    const v = Object.hasOwn(vars, name) ? vars[name] : undefined;
    if (v === undefined || v === null) {
      if (!missing.includes(name)) missing.push(name);
      return '';
    }
    if (typeof v === 'string') return v;
    if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
    return JSON.stringify(v);
  });
  return { text, missing };
}

/** Placeholder names used in a template, once each, in order. */
export function placeholders(template: string): string[] {
  const names: string[] = [];
  for (const m of template.matchAll(PLACEHOLDER)) if (!names.includes(m[1]!)) names.push(m[1]!);
  return names;
}
