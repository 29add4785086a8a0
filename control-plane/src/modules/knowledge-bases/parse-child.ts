// The process that parses one uploaded document (started by parse-sandbox.ts, one per document): it receives
// the bytes over IPC, parses and chunks them under the limits, sends the chunks back and exits. It holds no
// platform secret (its environment is empty) and asks the kernel to pick it first when memory runs out.
import { writeFileSync } from 'node:fs';
import { chunkSections } from './chunk.ts';
import { parseFile, parseInlineText, ParseLimitError, type FileKind, type ParseLimits } from './parse.ts';

export interface ParseRequest {
  kind: FileKind | 'text';
  data: Uint8Array;
  fileName: string;
  chunkSize: number;
  limits: ParseLimits;
}

export type ParseReply =
  | { ok: true; title: string; chunks: { heading: string; content: string; token_count: number }[] }
  | { ok: false; limit: boolean; message: string };

try {
  // Linux: the OOM killer takes this process before the API it serves (raising one's own score needs no privilege).
  writeFileSync('/proc/self/oom_score_adj', '1000');
} catch {
  // not Linux, or /proc is not mounted: the memory caps still apply
}

// The parent went away (it crashed or was killed): nobody wants the answer.
process.on('disconnect', () => process.exit(0));

process.once('message', (msg: ParseRequest) => {
  void (async () => {
    let reply: ParseReply;
    try {
      const data = Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength);
      const doc = msg.kind === 'text' ? await parseInlineText(data.toString('utf8'), msg.fileName, msg.limits) : await parseFile(msg.kind, data, msg.fileName, msg.limits);
      reply = { ok: true, title: doc.title, chunks: chunkSections(doc.sections, msg.chunkSize) };
    } catch (err) {
      const message = String((err as Error)?.message ?? err).slice(0, 500);
      // An allocation V8 refuses (a string or buffer past its maximum) is the document's size, not damage.
      if (err instanceof RangeError && /allocation failed|invalid (string|array|typed array) length/i.test(message)) {
        reply = { ok: false, limit: true, message: 'the document needs more memory than parsing allows' };
      } else reply = { ok: false, limit: err instanceof ParseLimitError, message };
    }
    process.send!(reply, () => process.exit(0));
  })();
});
