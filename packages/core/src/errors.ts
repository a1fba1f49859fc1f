/** One error type with a code; the HTTP layer maps codes to statuses. */
import type { ErrorCode, Problem } from '@gpux/protocol';

export class GpuxError extends Error {
  readonly code: ErrorCode;
  readonly problems: Problem[] | undefined;

  constructor(code: ErrorCode, message: string, opts: { problems?: Problem[]; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'GpuxError';
    this.code = code;
    this.problems = opts.problems;
  }
}

export const isGpuxError = (e: unknown): e is GpuxError => e instanceof GpuxError;
