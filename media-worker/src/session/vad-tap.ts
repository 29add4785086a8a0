// The VAD's events as the session reads them, for a call that must measure the caller's silence in their
// audio rather than in wall time. Every event comes with the audio it describes (`silenceDuration` counts
// the caller's audio, not the clock), so a decision taken on them does not depend on how far the VAD runs
// behind the line on a loaded machine.
import { VADEventType, type VAD, type VADEvent, type VADStream } from '@livekit/agents';

/**
 * A VAD whose streams report each event to `onEvent` just before agents-js handles it. The VAD itself is
 * shared by the worker's calls (it is loaded once), so it is wrapped, not changed: everything but `stream()`
 * goes to it, its metrics included.
 */
export function tapVad(vad: VAD, onEvent: (ev: VADEvent) => void): VAD {
  return new Proxy(vad, {
    get(target, prop) {
      if (prop === 'stream') return () => tapStream(target.stream(), onEvent);
      const value: unknown = Reflect.get(target, prop, target);
      // Bound to the VAD itself: its methods read private fields, which a proxy does not carry.
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

function tapStream(stream: VADStream, onEvent: (ev: VADEvent) => void): VADStream {
  const next = stream.next.bind(stream);
  // agents-js reads the stream with `for await`, which calls next() on the stream itself.
  stream.next = async () => {
    const res = await next();
    if (!res.done) onEvent(res.value);
    return res;
  };
  return stream;
}

/**
 * The caller's silence since the VAD's last end of speech, in milliseconds of their audio; null while they
 * speak (or before they first did). A sound that may be the onset of speech counts as not silent.
 */
export class CallerSilence {
  /** The VAD's silence count at its end of speech (its minimum silence): the measure starts there. */
  #atEndOfSpeech: number | null = null;
  quietMs: number | null = null;

  onEvent(ev: VADEvent): void {
    if (ev.type === VADEventType.START_OF_SPEECH) {
      this.#atEndOfSpeech = null;
      this.quietMs = null;
    } else if (ev.type === VADEventType.END_OF_SPEECH) {
      this.#atEndOfSpeech = ev.silenceDuration;
      this.quietMs = 0;
    } else if (ev.type === VADEventType.INFERENCE_DONE && this.#atEndOfSpeech !== null && !ev.speaking) {
      // Speech that has begun but not yet for the VAD's minimum speech: not silence, and not yet speech.
      this.quietMs = ev.rawAccumulatedSpeech > 0 ? null : ev.silenceDuration - this.#atEndOfSpeech;
    }
  }
}
