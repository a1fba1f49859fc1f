/** Random draws for the market benchmark, all from core's seeded `Random`: normal, log-normal, Poisson, geometric, weighted pick, shuffle. */
import type { Random } from '@gpux/core';

/** Standard normal (Box–Muller); 1 − next() keeps the logarithm away from 0. */
export function normal(r: Random): number {
  const u = 1 - r.next();
  const v = r.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

export function logNormal(r: Random, median: number, sigma: number): number {
  return median * Math.exp(sigma * normal(r));
}

/** Poisson by inversion, exact; a large mean is split into parts of at most 200 (a sum of Poissons is Poisson) so e^−mean never underflows. */
export function poisson(r: Random, mean: number): number {
  let k = 0;
  for (let left = mean; left > 0; left -= 200) k += poissonSmall(r, Math.min(left, 200));
  return k;
}

function poissonSmall(r: Random, mean: number): number {
  const u = r.next();
  let p = Math.exp(-mean);
  let sum = p;
  let k = 0;
  while (u > sum && p > 0) {
    k++;
    p *= mean / k;
    sum += p;
  }
  return k;
}

/** A whole number ≥ 1 with the given mean (1 + a geometric count): memoryless job lengths in epochs. */
export function geometric(r: Random, mean: number): number {
  if (mean <= 1) return 1;
  return 1 + Math.floor(Math.log(1 - r.next()) / Math.log(1 - 1 / mean));
}

/** A picker over [value, weight] pairs (cumulative weights computed once). */
export function picker<T>(weighted: ReadonlyArray<readonly [T, number]>): (r: Random) => T {
  const values = weighted.map(([v]) => v);
  const cum: number[] = [];
  let total = 0;
  for (const [, w] of weighted) {
    total += w;
    cum.push(total);
  }
  return (r) => {
    const x = r.next() * total;
    for (let i = 0; i < cum.length; i++) if (x < (cum[i] as number)) return values[i] as T;
    return values[values.length - 1] as T;
  };
}

/** Fisher–Yates on a copy. */
export function shuffled<T>(r: Random, xs: readonly T[]): T[] {
  const a = xs.slice();
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(r.next() * (i + 1));
    [a[i], a[j]] = [a[j] as T, a[i] as T];
  }
  return a;
}
