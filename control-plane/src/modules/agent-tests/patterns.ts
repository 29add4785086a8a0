// The `matches` matcher of a `tool_called` expectation: a tenant's regular expression, run in the control plane
// against what a model wrote. Run by RE2 (re2js): time linear in the text, whatever the pattern, where the
// JavaScript engine backtracks (`^(a+)+$` doubles its time with each character). RE2 has no lookaround and no
// backreferences; such a pattern is refused when the scenario is saved (422), and one stored before is a
// failed expectation with the reason. The tested text is cut to MATCHED_TEXT_MAX first.
import { RE2JS } from 're2js';
import { capText, MATCHED_TEXT_MAX, PATTERN_MAX } from '../../../../shared/text-caps.ts';

export { PATTERN_MAX };

/** The compiled pattern, or why it cannot be used (a message for the 422 or the result). */
export function compilePattern(source: string): { re: RE2JS } | { problem: string } {
  if (source.length > PATTERN_MAX) return { problem: `Patterns are at most ${PATTERN_MAX} characters` };
  try {
    // JavaScript's own syntax is the contract: a pattern it refuses is refused whatever RE2 would make of it.
    new RegExp(source, 'i');
  } catch (err) {
    return { problem: `Invalid regular expression: ${(err as Error).message}` };
  }
  try {
    return { re: RE2JS.compile(source, RE2JS.CASE_INSENSITIVE) };
  } catch (err) {
    return {
      problem: `Unsupported regular expression: patterns run in linear time (RE2 syntax: no lookaround, no backreferences, repeats up to {1000}): ${(err as Error).message}`,
    };
  }
}

/** Whether `text` (cut to its cap) contains a match of the compiled pattern. */
export function patternMatches(re: RE2JS, text: string): boolean {
  return re.test(capText(text, MATCHED_TEXT_MAX));
}
