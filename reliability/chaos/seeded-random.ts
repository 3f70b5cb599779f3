// The chaos run's only source of randomness: a seeded PRNG (mulberry32, as bench/generate-repo.ts), so a seed names
// one schedule of actions, delays and kills. (The timing of the machine still varies: a seed replays the schedule,
// not the exact instruction a kill lands on.)

export class SeededRandom {
  private a: number;

  constructor(readonly seed: number) {
    this.a = seed >>> 0;
  }

  /** [0, 1) */
  next(): number {
    this.a = (this.a + 0x6d2b79f5) >>> 0;
    let t = this.a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [lo, hi], both included. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(xs: readonly T[]): T {
    if (xs.length === 0) throw new Error('SeededRandom.pick: nothing to pick from');
    return xs[Math.floor(this.next() * xs.length)]!;
  }

  /** One of the keys, each as likely as its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K {
    const entries = Object.entries(weights) as Array<[K, number]>;
    const total = entries.reduce((s, [, w]) => s + w, 0);
    let r = this.next() * total;
    for (const [k, w] of entries) if ((r -= w) < 0) return k;
    return entries.at(-1)![0];
  }
}
