// Detects the first audible sound of the agent's track (the `agent-audio` event): a Web Audio analyser on the
// remote track, polled until the level crosses a threshold once. Where Web Audio cannot run (no
// AudioContext, or one the browser keeps suspended), the caller falls back to the agent's `speaking` state.

/** RMS of a 20 ms window in full scale (-46 dBFS): above comfort noise and codec residue, below any speech. */
const THRESHOLD = 0.005;
const POLL_MS = 10;

export interface FirstAudioWatch {
  stop(): void;
}

export function watchFirstAudio(ctx: AudioContext, track: MediaStreamTrack, onAudible: () => void): FirstAudioWatch {
  const source = ctx.createMediaStreamSource(new MediaStream([track]));
  const analyser = ctx.createAnalyser();
  analyser.fftSize = 1024;
  source.connect(analyser);
  const buf = new Float32Array(analyser.fftSize);
  let done = false;
  const stop = () => {
    if (done) return;
    done = true;
    clearInterval(timer);
    source.disconnect();
  };
  const timer = setInterval(() => {
    analyser.getFloatTimeDomainData(buf);
    let sum = 0;
    for (const v of buf) sum += v * v;
    if (Math.sqrt(sum / buf.length) >= THRESHOLD) {
      stop();
      onAudible();
    }
  }, POLL_MS);
  return { stop };
}

/** An AudioContext made during the click that starts the call (browsers let it run then), or null. */
export function newAudioContext(): AudioContext | null {
  try {
    const ctx = new AudioContext();
    void ctx.resume().catch(() => undefined);
    return ctx;
  } catch {
    return null;
  }
}
