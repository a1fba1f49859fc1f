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
