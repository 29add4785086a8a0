// The words of a person who took the call over (POST /v1/calls/{id}/control `takeover`), as text: their audio
// through a second stream of the call's STT, beside the caller's. Each final transcript goes to `onFinal`
// (supervision.ts puts it into the model's context and the transcript as said in the agent's place).
import { stt as agentsStt, type VAD } from '@livekit/agents';
import type { AudioFrame } from '@livekit/rtc-node';
import type { ReadableStream } from 'node:stream/web';
import type { Logger } from '../../../shared/logger.ts';

export interface SpeechTranscription {
  /** Ends the audio, then waits (at most `waitMs`) for the transcripts of what was already heard. */
  stop(waitMs?: number): Promise<void>;
}

/** A person's side of the call taken over: who they are (their participant), and their words as text. */
export type HearPerson = (identity: string, onFinal: (text: string) => void) => SpeechTranscription;

/**
 * Transcribes `audio` with `stt` (a non-streaming STT goes through agents-js's StreamAdapter on `vad`, as the
 * session's own STT node does). Never throws: a failure is logged, and the person's words are then missing from
 * the context, not the call.
 */
export function transcribeSpeech(opts: { stt: agentsStt.STT; vad: VAD | null; audio: ReadableStream<AudioFrame>; onFinal: (text: string) => void; log: Logger }): SpeechTranscription {
  const { stt, vad, audio, onFinal, log } = opts;
  const engine = stt.capabilities.streaming ? stt : vad ? new agentsStt.StreamAdapter(stt, vad) : null;
  const reader = audio.getReader();
  if (!engine) {
    log.warn({}, "takeover: the call's STT cannot stream and there is no VAD: the person's words are not transcribed");
    void reader.cancel().catch(() => {});
    return { stop: async () => {} };
  }
  const stream = engine.stream();
  let ended = false;
  const endInput = () => {
    if (ended) return;
    ended = true;
    try {
      stream.endInput();
    } catch {
      // Closed already.
    }
  };
  const pump = (async () => {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || ended) break;
      stream.pushFrame(value);
    }
    endInput();
  })().catch((err: unknown) => {
    log.warn({ err: (err as Error).message }, "takeover: the person's audio stopped");
    endInput();
  });
  const read = (async () => {
    for await (const ev of stream) {
      if (ev.type !== agentsStt.SpeechEventType.FINAL_TRANSCRIPT) continue;
      const text = ev.alternatives?.[0]?.text?.trim();
      // The length only: the words are the call's content, which logs never carry.
      log.info({ chars: text?.length ?? 0 }, "takeover: the person's words transcribed");
      if (text) onFinal(text);
    }
  })().catch((err: unknown) => log.warn({ err: (err as Error).message }, "takeover: the person's transcription failed"));
  return {
    async stop(waitMs = 3000) {
      await reader.cancel().catch(() => {});
      await pump;
      endInput();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([read, new Promise((r) => (timer = setTimeout(r, waitMs)))]);
      clearTimeout(timer);
      stream.close();
    },
  };
}
