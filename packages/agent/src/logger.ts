/** The default logger (pino on stderr) behind the core Logger port, and a silent one for tests and simulated fleets. */
import type { Logger } from '@gpux/core';
import pino from 'pino';

/** pino's levels; the same names the coordinator accepts, so one GPUX_LOG_LEVEL serves both. */
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function createLogger(level: LogLevel = 'info', bindings: Record<string, unknown> = {}): Logger {
  return pino({ level, base: { component: 'agent', ...bindings } }, pino.destination(2)) as unknown as Logger;
}

export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
