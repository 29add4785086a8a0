// Seeded randomness for the stand-ins and the benchmarks: the same seed gives the same draws on every run and
// machine, so a run that draws (pause lengths, an STT stand-in's latencies and errors) can be repeated.

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One 32-bit seed from several numbers (murmur3's finalizer over each): streams seeded from (seed, 1) and
 * (seed, 2) do not overlap, so each kind of draw has its own and one kind's count does not move another's.
 */
export function mixSeed(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) {
    h ^= Math.imul((p >>> 0) ^ (Math.floor(p / 4294967296) >>> 0), 0xcc9e2d51);
    h = Math.imul((h << 13) | (h >>> 19), 5) + 0xe6546b64;
    h ^= h >>> 16;
    h = Math.imul(h, 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

/** A draw from the uniform distribution on [min, max]. */
export const uniform = (rnd: () => number, range: { min: number; max: number }) => range.min + rnd() * (range.max - range.min);
