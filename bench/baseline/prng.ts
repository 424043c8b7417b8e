/**
 * mulberry32: a tiny seeded 32-bit PRNG. Every benchmark dataset is drawn from
 * it (seed 12345 unless stated), so runs on different machines see the same
 * tuples. All arithmetic stays in 32-bit integers (`Math.imul`, `>>> 0`): a
 * plain LCG in doubles loses precision above 2^53 and cycles early
 * (performance-anchors §4).
 */
export type Rng = () => number;

/** Returns a generator of floats in [0, 1). */
export function mulberry32(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A uniform integer in [0, n). */
export function randInt(rng: Rng, n: number): number {
  return Math.floor(rng() * n);
}
