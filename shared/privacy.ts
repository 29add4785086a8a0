// What a call's data retention mode (org setting, agent override) lets leave the media worker and reach the
// database, webhooks and logs. One rule for both sides: the worker applies it before it reports or logs, and
// the control plane applies it again where reports come in, so a worker that does not know the mode (an older
// version) still stores nothing it should not (docs/decisions/021-privacy.md).
//   everything   the conversation as said;
//   redact_pii   personal data replaced by typed placeholders (shared/pii.ts);
//   no_content   no text at all: each message keeps its role, times and tool name, with empty content.
import { redactPii } from './pii.ts';

export const DATA_RETENTION_MODES = ['everything', 'redact_pii', 'no_content'] as const;
export type DataRetention = (typeof DATA_RETENTION_MODES)[number];

/** What a worker does when its config names no mode (a control plane older than the setting). */
export const DEFAULT_DATA_RETENTION: DataRetention = 'everything';

/** The mode of a call: the agent's override, else the organisation's. */
export const effectiveRetention = (org: DataRetention, agent: DataRetention | null | undefined): DataRetention => agent ?? org;

/** A text as the mode lets it be kept: unchanged, redacted, or empty. */
export function retainText(mode: DataRetention, text: string): string {
  if (mode === 'everything') return text;
  if (mode === 'no_content') return '';
  return redactPii(text);
}

/** An optional free text (a hand-off's or a do-not-call reason): redacted, or dropped (null) under `no_content`. */
export function retainFreeText(mode: DataRetention, text: string | null | undefined): string | null {
  if (text === null || text === undefined || mode === 'no_content') return null;
  return retainText(mode, text);
}

interface ToolCall {
  name: string;
  arguments: string;
  output: string;
  is_error: boolean;
}

/**
 * A supervisor's mark on a message: `say` (the agent said the supervisor's words), `whisper` (only the model got
 * `text`), `takeover` (a person who took the call over said the message's content).
 */
interface SupervisorMark {
  action: 'say' | 'whisper' | 'takeover';
  text?: string | undefined;
}

type Retained = { content: string; tool_call?: ToolCall | undefined; supervisor?: SupervisorMark | undefined };

/** A message of the conversation (the worker's report, the stored call): content, a tool call's payloads, a whisper. */
export function retainMessage<M extends Retained>(mode: DataRetention, m: M): M {
  if (mode === 'everything') return m;
  const out = { ...m, content: retainText(mode, m.content) };
  if (m.tool_call) out.tool_call = { ...m.tool_call, arguments: retainText(mode, m.tool_call.arguments), output: retainText(mode, m.tool_call.output) };
  if (m.supervisor?.text !== undefined) out.supervisor = { ...m.supervisor, text: retainText(mode, m.supervisor.text) };
  return out;
}

export function retainMessages<M extends Retained>(mode: DataRetention, messages: M[]): M[] {
  return mode === 'everything' ? messages : messages.map((m) => retainMessage(mode, m));
}
