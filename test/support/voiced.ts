// Where a chunk of linear16 audio holds speech, as the STT stand-ins hear it: by energy, in 10 ms windows.

/**
 * The first and the end sample (exclusive) of the chunk's 10 ms windows whose RMS is above `rms`; -1 for both when
 * none is. `frames` samples of the first channel, `bytesPerFrame` apart.
 */
export function voicedSpan(data: Buffer, frames: number, bytesPerFrame: number, rate: number, rms: number): { first: number; last: number } {
  const win = Math.max(1, Math.round(rate / 100));
  let first = -1;
  let last = -1;
  for (let at = 0; at < frames; at += win) {
    const end = Math.min(frames, at + win);
    let sum = 0;
    for (let i = at; i < end; i++) {
      const s = data.readInt16LE(i * bytesPerFrame);
      sum += s * s;
    }
    if (Math.sqrt(sum / (end - at)) > rms) {
      if (first < 0) first = at;
      last = end;
    }
  }
  return { first, last };
}
