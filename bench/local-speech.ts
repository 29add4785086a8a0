// Local speech providers against the bare binaries, in one run on the same machine:
//   - TTS time to first audio: LocalTTS (espeak-ng; festival with its warm spare process) vs spawning
//     espeak-ng / festival directly and timing the first PCM byte on stdout;
//   - STT real-time factor: LocalSTT (python3-pocketsphinx helper, streaming) vs pocketsphinx_continuous
//     on the same 16 kHz audio, both including process start and model load, plus start-up alone.
// Usage: node bench/local-speech.ts [runs]   (npm run bench:speech)
import { initializeLogger, stt } from '@livekit/agents';
import { AudioFrame } from '@livekit/rtc-node';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { LocalSTT } from '../shared/speech/local-stt.ts';
import { LocalTTS } from '../shared/speech/local-tts.ts';

initializeLogger({ pretty: false, level: 'error' });
const RUNS = Number(process.argv[2] ?? 10);
const SENTENCE = 'Thank you for calling, how can I help you today?';
const UTTERANCE = 'Hello, I would like to book a table for two people tomorrow evening at eight.';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
function stats(xs: number[]) {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { p50: q(0.5), p95: q(0.95), min: s[0]!, max: s.at(-1)! };
}
const fmt = (x: { p50: number; p95: number; min: number; max: number }, digits = 1) =>
  `p50 ${x.p50.toFixed(digits)} | p95 ${x.p95.toFixed(digits)} | min ${x.min.toFixed(digits)} | max ${x.max.toFixed(digits)}`;

/** Time from spawn to the first PCM byte after the 44-byte WAV header. */
function bareFirstByte(cmd: string, args: string[], input: string, headerBytes = 44): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args);
    let seen = 0;
    let done = false;
    child.stdout.on('data', (d: Buffer) => {
      seen += d.length;
      if (!done && seen > headerBytes) {
        done = true;
        resolve(performance.now() - t0);
      }
    });
    child.on('error', reject);
    child.on('close', () => !done && reject(new Error(`${cmd} wrote no audio`)));
    child.stdin.end(input);
  });
}

/** festival already running with the voice loaded; time from the command to the first PCM byte. */
async function bareFestivalWarm(): Promise<number> {
  const child = spawn('stdbuf', ['-o0', 'festival', '--pipe']);
  child.stdin.write('(voice_cmu_us_slt_arctic_hts)\n');
  await sleep(1500); // voice load (~0.4 s) finished
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    let seen = 0;
    let done = false;
    child.stdout.on('data', (d: Buffer) => {
      seen += d.length;
      if (!done && seen > 44) {
        done = true;
        resolve(performance.now() - t0);
      }
    });
    child.on('close', () => !done && reject(new Error('festival wrote no audio')));
    child.stdin.end(`(utt.save.wave (SynthText "${SENTENCE}") "-" 'riff)\n`);
  });
}

async function oursFirstFrame(engine: LocalTTS): Promise<number> {
  const t0 = performance.now();
  const stream = engine.synthesize(SENTENCE);
  const first = await stream.next();
  const ms = performance.now() - t0;
  if (first.done) throw new Error('no audio');
  for await (const _ of stream) {
    // drain
  }
  return ms;
}

async function ttsBench() {
  const rows: string[] = [];
  const espeakBare: number[] = [];
  const espeakOurs: number[] = [];
  const espeak = new LocalTTS({ model: 'espeak-ng' });
  await oursFirstFrame(espeak); // JIT and page cache
  for (let i = 0; i < RUNS; i++) {
    espeakBare.push(await bareFirstByte('espeak-ng', ['--stdout', '-v', 'en-us'], SENTENCE));
    espeakOurs.push(await oursFirstFrame(espeak));
  }
  rows.push(`| espeak-ng, bare binary (spawn to first PCM byte) | ${fmt(stats(espeakBare))} |`);
  rows.push(`| espeak-ng, LocalTTS.synthesize() to first 20 ms frame | ${fmt(stats(espeakOurs))} |`);

  const festRuns = Math.max(3, Math.ceil(RUNS / 2));
  const festCold: number[] = [];
  const festWarm: number[] = [];
  const festOurs: number[] = [];
  const festival = new LocalTTS({ model: 'festival' });
  festival.prewarm();
  await sleep(1500);
  for (let i = 0; i < festRuns; i++) {
    festCold.push(
      await bareFirstByte('stdbuf', ['-o0', 'festival', '--pipe'], `(voice_cmu_us_slt_arctic_hts)\n(utt.save.wave (SynthText "${SENTENCE}") "-" 'riff)\n`),
    );
    festWarm.push(await bareFestivalWarm());
    festOurs.push(await oursFirstFrame(festival));
    await sleep(1000); // let the next spare load, as it would while the sentence plays
  }
  await festival.close();
  rows.push(`| festival us-slt-hts, bare binary, cold (spawn + voice load + synthesis) | ${fmt(stats(festCold))} |`);
  rows.push(`| festival us-slt-hts, bare binary, voice already loaded | ${fmt(stats(festWarm))} |`);
  rows.push(`| festival us-slt-hts, LocalTTS.synthesize() with the warm spare | ${fmt(stats(festOurs))} |`);
  return rows;
}

async function speech(): Promise<{ frames: AudioFrame[]; raw16k: Buffer; seconds: number }> {
  const engine = new LocalTTS({ model: 'festival' });
  const frames: AudioFrame[] = [];
  for await (const a of engine.synthesize(UTTERANCE)) frames.push(a.frame);
  await engine.close();
  // 16 kHz copy for the bare CLI (sox, as a user of the CLI would).
  const pcm32 = Buffer.concat(frames.map((f) => Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength)));
  const raw16k = await new Promise<Buffer>((resolve, reject) => {
    const sox = spawn('sox', ['-t', 'raw', '-r', '32000', '-e', 'signed', '-b', '16', '-c', '1', '-', '-t', 'raw', '-r', '16000', '-']);
    const out: Buffer[] = [];
    sox.stdout.on('data', (d: Buffer) => out.push(d));
    sox.on('close', (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new Error('sox failed'))));
    sox.stdin.end(pcm32);
  });
  const seconds = frames.reduce((s, f) => s + f.samplesPerChannel / f.sampleRate, 0);
  return { frames, raw16k, seconds };
}

async function bareContinuous(file: string): Promise<{ ms: number; text: string }> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn('pocketsphinx_continuous', ['-infile', file, '-logfn', '/dev/null']);
    let text = '';
    child.stdout.on('data', (d: Buffer) => (text += d.toString()));
    child.on('error', reject);
    child.on('close', () => resolve({ ms: performance.now() - t0, text: text.trim() }));
  });
}

async function oursTranscribe(frames: AudioFrame[]): Promise<{ ms: number; text: string }> {
  const t0 = performance.now();
  const stream = new LocalSTT().stream();
  for (const f of frames) stream.pushFrame(f);
  stream.flush();
  stream.endInput();
  const texts: string[] = [];
  for await (const ev of stream) if (ev.type === stt.SpeechEventType.FINAL_TRANSCRIPT) texts.push(ev.alternatives![0].text);
  return { ms: performance.now() - t0, text: texts.join(' ') };
}

async function sttBench() {
  const dir = mkdtempSync(path.join(tmpdir(), 'vap-bench-speech-'));
  try {
    const { frames, raw16k, seconds } = await speech();
    const file = path.join(dir, 'utt.raw');
    writeFileSync(file, raw16k);
    const silenceFile = path.join(dir, 'silence.raw');
    writeFileSync(silenceFile, Buffer.alloc(3200));
    const silence = [new AudioFrame(new Int16Array(1600), 16000, 1, 1600)];
    const runs = Math.max(3, Math.ceil(RUNS / 2));
    const bare: number[] = [];
    const ours: number[] = [];
    const bareStart: number[] = [];
    const oursStart: number[] = [];
    let bareText = '';
    let oursText = '';
    for (let i = 0; i < runs; i++) {
      const b = await bareContinuous(file);
      bare.push(b.ms / 1000 / seconds);
      bareText = b.text;
      const o = await oursTranscribe(frames);
      ours.push(o.ms / 1000 / seconds);
      oursText = o.text;
      bareStart.push((await bareContinuous(silenceFile)).ms);
      oursStart.push((await oursTranscribe(silence)).ms);
    }
    return {
      seconds,
      rows: [
        `| pocketsphinx_continuous (batch CMN), whole run / audio | ${fmt(stats(bare), 2)} |`,
        `| LocalSTT stream (live CMN, partials), whole run / audio | ${fmt(stats(ours), 2)} |`,
        `| pocketsphinx_continuous start-up (0.1 s of audio), ms | ${fmt(stats(bareStart), 0)} |`,
        `| LocalSTT start-up (0.1 s of audio), ms | ${fmt(stats(oursStart), 0)} |`,
      ],
      bareText,
      oursText,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const tts = await ttsBench();
const sttResult = await sttBench();
console.log(`\nLocal speech, ${RUNS} runs (festival and STT: ${Math.max(3, Math.ceil(RUNS / 2))})\n`);
console.log('| TTS: time to first audio (ms) | |\n|---|---|');
for (const row of tts) console.log(row);
console.log(`\n| STT on ${sttResult.seconds.toFixed(2)} s of festival speech: real-time factor | |\n|---|---|`);
for (const row of sttResult.rows) console.log(row);
console.log(`\nreference: "${UTTERANCE}"\nbare:      "${sttResult.bareText}"\nLocalSTT:  "${sttResult.oursText}"`);
// rtc-node's native client (used by the resampler) keeps the event loop alive.
process.exit(0);
