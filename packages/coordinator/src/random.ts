/** The production Random: node:crypto. Tests and the simulator pass their own. */
import { randomBytes } from 'node:crypto';
import type { Random } from '@gpux/core';

export const cryptoRandom: Random = {
  // 48 random bits (crypto.randomInt cannot span 2^48 values).
  next: () => randomBytes(6).readUIntBE(0, 6) / 2 ** 48,
  bytes: (n) => new Uint8Array(randomBytes(n)),
};
