/**
 * The scheduling-pass benchmark's queue: specs at the largest size the schema allows (MAX_SPEC_BYTES of JSON
 * without inputs, optionally with inline inputs), of random text so PostgreSQL's TOAST cannot compress them
 * away, submitted through the real Store.submitJob.
 */
import type { Store } from '@gpux/core';
import { JobSpec, MAX_ARG_CHARS, MAX_SPEC_BYTES, specBytesWithoutInputs } from '@gpux/protocol';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** A pool of seeded random text; each spec takes slices at its own offsets. */
export function textPool(bytes: number, seed: number): string {
  let x = seed >>> 0 || 1;
  const out = new Array<string>(bytes);
  for (let i = 0; i < bytes; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = ALPHABET[(x >>> 0) % 64] as string;
  }
  return out.join('');
}

export interface SeedOptions {
  jobs: number;
  buyers: number;
  /** One job in `placeableEvery` asks for 1 GPU (it fits a node); the others ask for 16 on one node (none has as many). */
  placeableEvery: number;
  inputsKib: number;
  now: number;
}

/** The largest spec the schema accepts for job `i` (checked by JobSpec.parse). */
export function largestSpec(i: number, pool: string, o: Pick<SeedOptions, 'placeableEvery' | 'inputsKib'>): JobSpec {
  const at = (k: number, n: number) => {
    const start = (i * 7919 + k * 104_729) % (pool.length - n);
    return pool.slice(start, start + n);
  };
  const gpus = i % o.placeableEvery === 0 ? 1 : 16;
  const base = {
    name: `bench-${i}`,
    image: 'busybox:1.36',
    command: ['sh', '-c', 'exit 0'],
    args: [] as string[],
    env: { BENCH_TOKEN: at(1, 512) },
    labels: { bench: 'scheduling-pass' },
    resources: { gpu: { count: gpus, models: ['H100'] }, cpuCores: 1 },
    timeoutSeconds: 600,
    inputs: o.inputsKib > 0 ? [{ path: 'in.b64', content: at(2, o.inputsKib * 1024), encoding: 'base64' as const }] : [],
  };
  // With the schema's defaults in, fill args with 8 KiB entries, then trim the last to land on MAX_SPEC_BYTES.
  const spec = JobSpec.parse(base);
  for (let k = 0; specBytesWithoutInputs(spec) < MAX_SPEC_BYTES; k++) spec.args.push(at(10 + k, MAX_ARG_CHARS));
  const over = specBytesWithoutInputs(spec) - MAX_SPEC_BYTES;
  const last = spec.args.pop() as string;
  spec.args.push(last.slice(0, last.length - over));
  return JobSpec.parse(spec);
}

/** Submit the queue; returns the bytes of one spec (without inputs) as stored. */
export async function seedQueue(store: Store, pool: string, o: SeedOptions, progress: (done: number) => void): Promise<number> {
  let bytes = 0;
  for (let i = 0; i < o.jobs; i++) {
    const spec = largestSpec(i, pool, o);
    bytes = specBytesWithoutInputs(spec);
    const id = `job-${String(i).padStart(6, '0')}`;
    await store.submitJob({ id, buyerId: `buyer-${String(i % o.buyers).padStart(3, '0')}`, spec, idempotencyKey: null, now: o.now + i });
    if (i % 1000 === 999) progress(i + 1);
  }
  return bytes;
}
