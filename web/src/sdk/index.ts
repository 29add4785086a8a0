// The vap web SDK: start a web call to an agent from a browser page. See docs/guides/calls.md, "Web calls from your
// site".
export { startCall, type StartCallOptions, type TranscriptEvent, type VapCall } from './call.ts';
export { VapError, type VapErrorCode } from './errors.ts';
export { METRICS_TOPIC, type CallState, type TurnMetricsEvent } from './protocol.ts';
