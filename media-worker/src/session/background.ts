// background_sound: an ambient loop from media-worker/assets, decoded here (no ffmpeg needed) and handed
// to agents-js's BackgroundAudioPlayer, which mixes it on its own track under the agent's voice.
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AudioFrame } from '@livekit/rtc-node';

import { BackgroundSounds, type BackgroundSound } from '../../../schemas/agents.ts';

/** The API's values (schemas/agents.ts): one loop per value, media-worker/assets/<name>.wav. */
export const AMBIENT_SOUNDS = BackgroundSounds;
export type AmbientSound = BackgroundSound;

export const ambientPath = (name: AmbientSound) => fileURLToPath(new URL(`../../assets/${name}.wav`, import.meta.url));

export function isAmbientSound(name: string | null): name is AmbientSound {
  return !!name && (AMBIENT_SOUNDS as readonly string[]).includes(name);
}

/** PCM of a 16-bit mono WAV. */
export function readWav(path: string): { samples: Int16Array; sampleRate: number } {
  const buf = readFileSync(path);
  if (buf.toString('ascii', 0, 4) !== 'RIFF' || buf.toString('ascii', 8, 12) !== 'WAVE') throw new Error('not a WAV file');
  let off = 12;
  let sampleRate = 0;
  let channels = 1;
  while (off + 8 <= buf.length) {
    const id = buf.toString('ascii', off, off + 4);
    const size = buf.readUInt32LE(off + 4);
    if (id === 'fmt ') {
      channels = buf.readUInt16LE(off + 10);
      sampleRate = buf.readUInt32LE(off + 12);
    } else if (id === 'data') {
      if (channels !== 1) throw new Error('ambient loops must be mono');
      const end = Math.min(buf.length, off + 8 + size);
      const bytes = buf.subarray(off + 8, end);
      return { samples: new Int16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + (bytes.length & ~1))), sampleRate };
    }
    off += 8 + size + (size & 1);
  }
  throw new Error('WAV file has no data');
}

/** Endless 20 ms frames of the loop, scaled by `volume`. */
export async function* ambientFrames(name: AmbientSound, volume = 0.3, signal?: AbortSignal): AsyncGenerator<AudioFrame> {
  const path = ambientPath(name);
  if (!existsSync(path)) throw new Error(`missing ambient sound ${name}`);
  const { samples, sampleRate } = readWav(path);
  const n = Math.round(sampleRate / 50);
  let pos = 0;
  while (!signal?.aborted) {
    const data = new Int16Array(n);
    for (let i = 0; i < n; i++) {
      data[i] = Math.round(samples[pos]! * volume);
      pos = (pos + 1) % samples.length;
    }
    yield new AudioFrame(data, sampleRate, 1, n);
  }
}
