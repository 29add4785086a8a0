// Retry and error reporting for our ChunkedStream subclasses, done inside `run()`.
// agents' ChunkedStream runs its retry loop in a promise nobody awaits, so an error thrown from `run()`
// surfaces as an unhandled rejection (which ends a Node process). Here an attempt is retried only while
// it is retryable and no audio has gone out (a retry would repeat it); the final error becomes the TTS
// `error` event, as the base class would emit it, and the stream simply ends.
import { type APIConnectOptions, APIError, intervalForRetry, log, toError, type tts } from '@livekit/agents';

export async function runAttempts(
  ttsInstance: tts.TTS,
  connOptions: APIConnectOptions,
  signal: AbortSignal,
  attempt: () => Promise<void>,
  audioSent: () => boolean,
): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await attempt();
      return;
    } catch (error) {
      if (signal.aborted) return;
      const retry = error instanceof APIError && error.retryable && !audioSent() && i < connOptions.maxRetry;
      if (retry) {
        const waitMs = intervalForRetry(connOptions, i);
        log().warn({ tts: ttsInstance.label, attempt: i + 1, error }, 'failed to synthesize speech, retrying');
        await new Promise((resolve) => setTimeout(resolve, waitMs));
        continue;
      }
      const report = { type: 'tts_error' as const, timestamp: Date.now(), label: ttsInstance.label, error: toError(error), recoverable: false };
      if (ttsInstance.listenerCount('error') > 0) ttsInstance.emit('error', report);
      else log().error({ tts: ttsInstance.label, error }, 'failed to synthesize speech');
      return;
    }
  }
}
