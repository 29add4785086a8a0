// rtc-node loaded outside a media worker's job (the control plane's announcer of unanswered calls, voice agent
// tests' simulated caller): quiet, and with the media SDK's own logs kept out of the process's loop (ffi-logs.ts).
// rtc-node logs at debug level unless NODE_ENV is production when its logger module loads, and does not export the
// logger: NODE_ENV is production while the import runs, and restored after.
import { keepFfiLogsNative } from './ffi-logs.ts';

/** Runs `load` (an import that loads rtc-node) so; the caller keeps the promise, to load once. */
export function importRtcQuietly<T>(load: () => Promise<T>): Promise<T> {
  keepFfiLogsNative();
  const previous = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  return load().finally(() => {
    if (previous === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = previous;
  });
}
