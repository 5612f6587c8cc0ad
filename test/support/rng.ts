/**
 * A small seeded generator (mulberry32): the same seed gives the same run on every machine, so
 * any failure a soak or a test reports can be replayed from the seed it prints.
 */
interface Rng {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [0, n). */
  int(n: number): number;
  /** An integer in [min, max]. */
  range(min: number, max: number): number;
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  bytes(n: number): Buffer;
}

export function rng(seed: number): Rng {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return {
    next,
    int,
    range: (min, max) => min + int(max - min + 1),
    chance: (p) => next() < p,
    pick: (items) => items[int(items.length)]!,
    bytes(n) {
      const out = Buffer.allocUnsafe(n);
      for (let i = 0; i < n; i++) out[i] = int(256);
      return out;
    },
  };
}

/** Splits `body` into pieces of 1 to `max` bytes. */
export function chunksOf(body: Buffer, random: Rng, max: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let at = 0; at < body.length;) {
    const size = 1 + random.int(max);
    chunks.push(body.subarray(at, at + size));
    at += size;
  }
  return chunks;
}
