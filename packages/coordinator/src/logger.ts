/** The coordinator's pino logger; bearer tokens and authorization headers never reach the log. */
import { type DestinationStream, type Logger, pino } from 'pino';
import type { LogLevel } from './config.js';

export const REDACT_PATHS = ['authorization', 'token', '*.token', 'headers.authorization', 'req.headers.authorization', '*.headers.authorization'];

/** JSON lines to stdout, or to `destination` (tests). */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  const opts = { level, base: { service: 'gpux-coordinator' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(opts, destination) : pino(opts);
}
