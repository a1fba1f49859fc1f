/** Ports the core needs from the outside world. Adapters live in coordinator/agent. */
export interface Clock {
  now(): number; // epoch ms
}
export interface Random {
  /** Uniform in [0, 1). */
  next(): number;
  bytes(n: number): Uint8Array;
}
export interface Logger {
  debug(obj: object | string, msg?: string): void;
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A small seeded Random (mulberry32) for simulations, fleets and tests; not for anything secret. */
export function seededRandom(seed: number): Random {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, bytes: (k) => Uint8Array.from({ length: k }, () => Math.floor(next() * 256)) };
}
