// Call variables for `{{name}}` templates (first message, voicemail message). Interpolation itself is
// shared/prompt.ts `interpolate`: a missing variable renders as an empty string (never the raw `{{name}}`,
// which a TTS would read aloud) and is reported in `missing`.
import { interpolate as interpolateWithMissing } from './prompt.ts';

export const interpolate = (template: string, vars: Record<string, unknown>): string => interpolateWithMissing(template, vars).text;

/** The variables of a call: the agent's dynamic_variables, overridden by the call's own. */
export const mergeVariables = (agentDefaults: Record<string, unknown>, callVariables: Record<string, unknown>) => ({
  ...agentDefaults,
  ...callVariables,
});
