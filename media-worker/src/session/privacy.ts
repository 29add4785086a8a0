// The call's data retention on the worker's side (shared/privacy.ts): what its reports and logs may carry of
// the conversation. The worker applies it before anything leaves it; the control plane applies it again.
//
// The agents framework logs what callers say under `lk.pii.*` fields ("starting preemptive generation" carries
// the transcript at info level), and puts it on its spans. A job process serves one call, so once the call's
// mode is known the framework's process-wide logger is swapped for a child that rewrites those fields, and the
// span exporter drops them.
import type { Logger } from 'pino';
import type { EndedMessage, TranscriptReport } from '../../../schemas/internal.ts';
import { DEFAULT_DATA_RETENTION, retainMessages, retainText, type DataRetention } from '../../../shared/privacy.ts';
import { withholdConversation } from '../../../shared/tracing.ts';
import { capMessages } from '../../../shared/text-caps.ts';

/** The framework's logger, kept process-wide under this symbol (@livekit/agents, log_core). */
const FRAMEWORK_LOGGER = Symbol.for('@livekit/agents:logger');
/** The framework's marker of fields that carry user data (its telemetry strips the same ones). */
const PII_FIELD = 'lk.pii.';
const WITHHELD = '[withheld]';

export class CallPrivacy {
  readonly mode: DataRetention;

  constructor(mode: DataRetention | undefined) {
    this.mode = mode ?? DEFAULT_DATA_RETENTION;
  }

  /**
   * The conversation as the `ended` report may carry it: cut to the caps the control plane's schema sets
   * (shared/text-caps.ts; a longer report would be refused whole), then as the mode allows.
   */
  ended(messages: EndedMessage[]): EndedMessage[] {
    return retainMessages(this.mode, capMessages(messages));
  }

  /** A transcript partial, or null when the mode lets none be sent (`no_content`: nothing to say). */
  partial(messages: TranscriptReport['messages']): TranscriptReport['messages'] | null {
    return this.mode === 'no_content' ? null : retainMessages(this.mode, capMessages(messages));
  }

  /** Text for a log field. */
  log(text: string): string {
    return this.mode === 'everything' ? text : retainText(this.mode, text) || WITHHELD;
  }

  /** A log record with its `lk.pii.*` fields rewritten for the mode. */
  logRecord(obj: Record<string, unknown>): Record<string, unknown> {
    if (this.mode === 'everything' || !Object.keys(obj).some((k) => k.startsWith(PII_FIELD))) return obj;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(obj)) out[k] = k.startsWith(PII_FIELD) ? (typeof v === 'string' ? this.log(v) : WITHHELD) : v;
    return out;
  }

  /**
   * Swaps the framework's logger for one that applies the mode to `lk.pii.*` fields, and drops conversation
   * content from exported spans (shared/tracing.ts). A no-op for `everything`.
   */
  guardFrameworkOutput(): void {
    if (this.mode === 'everything') return;
    withholdConversation(true);
    const g = globalThis as unknown as Record<symbol, Logger | undefined>;
    const current = g[FRAMEWORK_LOGGER];
    if (!current) return;
    // Children made from it later (each session's and activity's logger) inherit the formatter.
    g[FRAMEWORK_LOGGER] = current.child({}, { formatters: { log: (obj: object) => this.logRecord(obj as Record<string, unknown>) } });
  }
}
