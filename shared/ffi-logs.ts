// The media SDK's native logs stay native.
//
// rtc-node 0.13 starts its FFI with `captureLogs: true`. The FFI's logger then forwards every Rust log record, at
// every level down to trace (it sets the `log` crate's maximum to Trace and lets the client filter), each in an FFI
// event of its own (its batching flushes after every record). rtc-node decodes each event on the job's loop and
// drops it: nothing in rtc-node or agents-js reads them. A phone call's join of the caller's room made about 4,000
// such events in one second; in a CPU profile of the job's first 700 ms, protobuf decoding was ~100 ms and garbage
// collection ~110 ms, against ~10 ms each on a web call (docs/benchmarks.md, "The media SDK's logs: kept out of
// the job's loop").
//
// With capture off the FFI's logger is env_logger: RUST_LOG decides (errors only when it is unset), the records
// are filtered before they are formatted, and what passes goes to the process's stderr.
//
// rtc-node's FfiClient is not exported and hard-codes the flag, but calls `livekitInitialize` through the bindings'
// module object when its one instance is first made. The patch wraps that function before then, pinned to the
// rtc-node release it was checked against: in the worker's job processes (their prewarm, before any room), and in
// the control plane before it loads rtc-node (the announcer of unanswered calls, voice agent tests' caller).
import { createRequire } from 'node:module';
import { installedPackageVersion } from './package-version.ts';

/** The @livekit/rtc-node release whose FfiClient this patch was checked against. */
export const FFI_LOGS_RTC_NODE_VERSION = '0.13.35';

type Initialize = (callback: (data: Uint8Array) => void, captureLogs: boolean, sdkVersion: string) => void;
interface Bindings {
  livekitInitialize: Initialize & { vapNativeLogs?: true };
}

const rtcNodeEntry = () => createRequire(import.meta.url).resolve('@livekit/rtc-node');

/** The version of @livekit/rtc-node that this process loads. */
export function installedRtcNodeVersion(): string {
  return installedPackageVersion('@livekit/rtc-node');
}

export class FfiLogsVersionError extends Error {
  constructor(installed: string) {
    super(
      `ffi-logs.ts patches @livekit/rtc-node ${FFI_LOGS_RTC_NODE_VERSION} but ${installed} is installed: check whether FfiClient still ` +
        'starts the FFI with captureLogs true through the bindings module\'s livekitInitialize, and whether anything now reads ' +
        'the log events; then delete the patch or bump FFI_LOGS_RTC_NODE_VERSION',
    );
    this.name = new.target.name;
  }
}

export function assertFfiLogsTarget(version = installedRtcNodeVersion()): void {
  if (version !== FFI_LOGS_RTC_NODE_VERSION) throw new FfiLogsVersionError(version);
}

/**
 * Starts this process's FFI with its logs left native. Returns false when the FFI had already started (its logs
 * stay captured), true when the patch is in place (or already was).
 */
export function keepFfiLogsNative(): boolean {
  assertFfiLogsTarget();
  // The bindings as rtc-node itself loads them: the same module object its FfiClient calls through.
  const bindings = createRequire(rtcNodeEntry())('@livekit/rtc-ffi-bindings') as Bindings;
  if (bindings.livekitInitialize.vapNativeLogs) return true;
  if ((globalThis as { _ffiClientInstance?: unknown })._ffiClientInstance) return false;
  const initialize = bindings.livekitInitialize;
  const wrapped: Initialize & { vapNativeLogs?: true } = (callback, _captureLogs, sdkVersion) => initialize(callback, false, sdkVersion);
  wrapped.vapNativeLogs = true;
  bindings.livekitInitialize = wrapped;
  return true;
}
