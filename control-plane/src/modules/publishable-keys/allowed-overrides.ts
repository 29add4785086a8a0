// What a web call started with a publishable key may send in `overrides` and `variables`: only what the key's
// `allowed_overrides` lists (schemas/publishable-keys.ts). Anyone can copy a page's key, so by default it can
// start the agent as configured and change nothing about it.
import { HttpError } from '../../http/errors.ts';

/** The fields sent that the key does not allow, as `overrides.<field>` / `variables.<name>`. */
export function refusedFields(
  allowed: readonly string[],
  sent: { overrides?: Record<string, unknown> | undefined; variables?: Record<string, unknown> | undefined },
): string[] {
  const allow = new Set(allowed);
  const refused: string[] = [];
  for (const [field, value] of Object.entries(sent.overrides ?? {})) {
    if (value !== undefined && !allow.has(field)) refused.push(`overrides.${field}`);
  }
  if (!allow.has('variables.*')) {
    for (const name of Object.keys(sent.variables ?? {})) if (!allow.has(`variables.${name}`)) refused.push(`variables.${name}`);
  }
  return refused;
}

/** 403 naming every field the key may not send (`fields` lists them). */
export function overridesRefused(fields: string[]): HttpError {
  return new HttpError(403, 'forbidden', `This publishable key may not set ${fields.join(', ')}; add them to the key's allowed_overrides`, {
    extra: { fields },
  });
}
