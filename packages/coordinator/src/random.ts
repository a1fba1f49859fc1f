/**
 * The production Random: node:crypto. Tests and the simulator pass their own.
 * Bytes come from a pool filled 4 KiB at a time: one call into OpenSSL costs about the same for 12 bytes as for
 * 4,096, and a job's life takes a dozen ids and draws (issue 14: it was 4% of the coordinator's time per result).
 */
import { randomFillSync } from 'node:crypto';
import type { Random } from '@gpux/core';

const POOL_BYTES = 4096;
const pool = Buffer.alloc(POOL_BYTES);
let used = POOL_BYTES;

/** `n` fresh random bytes, copied out of the pool (never handed out twice). */
function take(n: number): Buffer {
  if (n > POOL_BYTES) return randomFillSync(Buffer.alloc(n));
  if (used + n > POOL_BYTES) {
    randomFillSync(pool);
    used = 0;
  }
  const out = Buffer.from(pool.subarray(used, used + n));
  used += n;
  return out;
}

export const cryptoRandom: Random = {
  // 48 random bits (crypto.randomInt cannot span 2^48 values).
  next: () => take(6).readUIntBE(0, 6) / 2 ** 48,
  bytes: (n) => take(n),
};
