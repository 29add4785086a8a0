// The longest texts the platform takes in from a model, a tenant or a worker, in one place. Every text is cut
// to its cap before personal-data redaction (shared/pii.ts) and before storage, so the cost of both is bounded
// by the cap, whatever a tenant's server or model sends (docs/security.md, "Bounded text"). The worker cuts its
// reports to the same caps before it sends them; the control plane's schemas refuse longer ones (422).
//
// Caps are in UTF-16 code units (String.length), the unit ajv's maxLength counts too.

/** One message of a conversation: one turn of speech, or one model answer. */
export const MESSAGE_CONTENT_MAX = 16_000;
/** A tool call's arguments, as the model wrote them (JSON text). */
export const TOOL_ARGUMENTS_MAX = 16_000;
/** A tool call's output, as the tool answered (JSON text or words). */
export const TOOL_OUTPUT_MAX = 32_000;
/** Messages in one report of a conversation (a long call's turns and tool calls). */
export const MESSAGES_MAX = 4_000;
/** A call's analysis summary (the prompt asks for two or three sentences). */
export const SUMMARY_MAX = 4_000;
/** The text an agent test's `matches` pattern is tested against. */
export const MATCHED_TEXT_MAX = 16_000;
/** An agent test's `matches` pattern. */
export const PATTERN_MAX = 500;

/** The most bytes a model's answer may have once decoded (gzip included): as the post-call analysis reads it. */
export const MODEL_ANSWER_MAX_BYTES = 256 * 1024;
/** The same for a streamed answer (server-sent events repeat their envelope for each token). */
export const MODEL_STREAM_MAX_BYTES = 2 * 1024 * 1024;
/** Tool calls taken from one model answer. */
export const TOOL_CALLS_PER_ANSWER_MAX = 16;

/** Marks where a text was cut. */
export const CUT_MARK = '…';

/** `text` cut to `max` code units, the cut marked; never splits a surrogate pair. */
export function capText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - CUT_MARK.length;
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--; // a high surrogate whose pair would be cut off
  return text.slice(0, end) + CUT_MARK;
}

interface CappableMessage {
  content: string;
  tool_call?: { name: string; arguments: string; output: string; is_error: boolean } | undefined;
}

/** A conversation's messages cut to the caps (the newest kept when there are too many). */
export function capMessages<M extends CappableMessage>(messages: M[]): M[] {
  const kept = messages.length > MESSAGES_MAX ? messages.slice(messages.length - MESSAGES_MAX) : messages;
  return kept.map((m) => {
    const over =
      m.content.length > MESSAGE_CONTENT_MAX ||
      (m.tool_call && (m.tool_call.arguments.length > TOOL_ARGUMENTS_MAX || m.tool_call.output.length > TOOL_OUTPUT_MAX));
    if (!over) return m;
    const out = { ...m, content: capText(m.content, MESSAGE_CONTENT_MAX) };
    if (m.tool_call)
      out.tool_call = { ...m.tool_call, arguments: capText(m.tool_call.arguments, TOOL_ARGUMENTS_MAX), output: capText(m.tool_call.output, TOOL_OUTPUT_MAX) };
    return out;
  });
}

/**
 * A model's JSON answer without the code fence some models wrap it in. Linear time: the pattern it replaces,
 * /^\s*```(?:json)?\s*|\s*```\s*$/g, reads to the end of every run of spaces from each of its characters
 * (quadratic on an answer of spaces, which a tenant's model server can send).
 */
export function stripCodeFence(text: string): string {
  let t = text.trim();
  if (t.startsWith('```')) {
    t = t.slice(3);
    if (t.startsWith('json')) t = t.slice(4);
    t = t.trimStart();
  }
  if (t.endsWith('```')) t = t.slice(0, -3).trimEnd();
  return t;
}
