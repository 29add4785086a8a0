// What the agent's 20 ms output frames cost (npm run bench:frames; docs/benchmarks.md, "Output frames"). The TTS
// plugins hand agents-js 100 ms frames; the agent's ttsNode splits them into 20 ms (media-worker/src/session/
// output-frames.ts) so that a pause takes hold within one. Each frame is a call into rtc-node's FFI, so the split
// costs CPU for every second the agent speaks. Same run, interleaved rounds: 1 s of audio pushed into an
// AudioSource as agents-js's room output does (24 kHz, 200 ms queue, each frame once the source takes the one
// before), as 100 ms frames (agents-js as it is) and through smallFrames() (ours); the sample is the process's
// CPU time (user + system, the FFI's threads included) per second of audio.
import { AudioFrame, AudioSource, dispose } from '@livekit/rtc-node';
import { percentile } from '../shared/latency.ts';
import { smallFrames } from '../media-worker/src/session/output-frames.ts';
import { writeResults } from './support/results.ts';

const RATE = 24000;
const TTS_FRAME = RATE / 10;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 120);

function ttsFrames(seconds: number, phase: number): AudioFrame[] {
  return Array.from({ length: seconds * 10 }, (_, f) => {
    const d = new Int16Array(TTS_FRAME);
    for (let i = 0; i < TTS_FRAME; i++) d[i] = Math.round(6000 * Math.sin(((phase + f * TTS_FRAME + i) * 2 * Math.PI * 220) / RATE));
    return new AudioFrame(d, RATE, 1, TTS_FRAME);
  });
}

async function push(source: AudioSource, frames: AudioFrame[], split: boolean): Promise<void> {
  const stream = ReadableStream.from(frames);
  for await (const f of split ? stream.pipeThrough(smallFrames()) : stream) await source.captureFrame(f);
  await source.waitForPlayout();
}

async function sample(source: AudioSource, split: boolean, round: number): Promise<number> {
  const frames = ttsFrames(1, round * RATE);
  const c0 = process.cpuUsage();
  await push(source, frames, split);
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
}

const stats = (xs: number[]) => ({ n: xs.length, p50: +percentile(xs, 50).toFixed(2), p95: xs.length >= 100 ? +percentile(xs, 95).toFixed(2) : null, mean: +(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2) });

const plain = new AudioSource(RATE, 1, 200);
const split = new AudioSource(RATE, 1, 200);
// Warm-up: JIT, the FFI's first calls.
for (let r = 0; r < 3; r++) {
  await sample(plain, false, r);
  await sample(split, true, r);
}
const ms = { plain: [] as number[], split: [] as number[] };
for (let r = 0; r < ROUNDS; r++) {
  // Alternate which goes first, so neither always follows the other.
  if (r % 2) {
    ms.plain.push(await sample(plain, false, r));
    ms.split.push(await sample(split, true, r));
  } else {
    ms.split.push(await sample(split, true, r));
    ms.plain.push(await sample(plain, false, r));
  }
  if ((r + 1) % 20 === 0) process.stderr.write(`  ${r + 1}/${ROUNDS}\n`);
}
await plain.close();
await split.close();
await dispose();
const result = {
  bench: 'output-frames',
  unit: 'CPU milliseconds per second of agent audio (user + system, the whole process)',
  rounds: ROUNDS,
  agents_js_100ms_frames: stats(ms.plain),
  ours_20ms_frames: stats(ms.split),
  extra_ms_per_s_p50: +(percentile(ms.split, 50) - percentile(ms.plain, 50)).toFixed(2),
};
writeResults('output-frames', result);
console.log(JSON.stringify({ ...result }, null, 2));
process.exit(0);
