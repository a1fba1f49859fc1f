/** pickFleet: N node shapes following the trace's fleet mix, deterministic for a seeded Random. */
import type { Random } from '@gpux/core';
import { FLEET_MIX, type NodeShape } from './fleet-mix.js';

/**
 * Systematic sampling along the cumulative mix (one random offset, then evenly spaced points), so every shape gets
 * within one node of n × its share even for small n; then a Fisher-Yates shuffle so node i is not sorted by shape.
 */
export function pickFleet(n: number, random: Random, mix: readonly NodeShape[] = FLEET_MIX): NodeShape[] {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`fleet size must be a non-negative integer, got ${n}`);
  const total = mix.reduce((s, m) => s + m.count, 0);
  const offset = random.next();
  const picked: NodeShape[] = [];
  let shape = 0;
  let cumulative = mix[0]?.count ?? 0;
  for (let i = 0; i < n; i++) {
    const point = ((i + offset) / n) * total;
    while (point >= cumulative && shape < mix.length - 1) cumulative += mix[++shape]?.count ?? 0;
    picked.push(mix[shape] as NodeShape);
  }
  for (let i = picked.length - 1; i > 0; i--) {
    const j = Math.floor(random.next() * (i + 1));
    [picked[i], picked[j]] = [picked[j] as NodeShape, picked[i] as NodeShape];
  }
  return picked;
}

export { seededRandom } from '@gpux/core';
