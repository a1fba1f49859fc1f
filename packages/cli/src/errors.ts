/** CLI errors and how they are printed: `error: <message>`, one line per problem, exit 2 for bad usage and 1 otherwise. */
import { GpuxError } from '@gpux/core';
import type { Problem } from '@gpux/protocol';
import { GpuxApiError, GpuxInsecureTransportError, GpuxResponseError, GpuxTlsError } from '@gpux/sdk';

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** An expected failure of a command; `exitCode` 2 marks bad usage (flags, spec files). */
export class CliError extends Error {
  readonly exitCode: number;
  readonly problems: Problem[];

  constructor(message: string, opts: { exitCode?: number; problems?: Problem[]; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'CliError';
    this.exitCode = opts.exitCode ?? EXIT_FAILURE;
    this.problems = opts.problems ?? [];
  }
}

export const usageError = (message: string, problems: Problem[] = []) => new CliError(message, { exitCode: EXIT_USAGE, problems });

function problemsOf(err: unknown): Problem[] {
  if (err instanceof CliError || err instanceof GpuxApiError || err instanceof GpuxResponseError) return err.problems;
  if (err instanceof GpuxError) return err.problems ?? [];
  return [];
}

/** Validation errors (a bad flag, config value or spec, found here or by the coordinator) are usage errors; everything else is a failure. */
export function exitCodeOf(err: unknown): number {
  if (err instanceof CliError) return err.exitCode;
  if (err instanceof GpuxInsecureTransportError) return EXIT_USAGE; // fixed by the URL or --insecure, like a bad flag
  if (err instanceof GpuxError && (err.code === 'REQUEST_INVALID' || err.code === 'SPEC_INVALID')) return EXIT_USAGE;
  // The coordinator found a flag's value or the spec invalid (a check the CLI does not repeat): still bad usage.
  if (err instanceof GpuxApiError && err.status === 400 && (err.code === 'REQUEST_INVALID' || err.code === 'SPEC_INVALID')) return EXIT_USAGE;
  return EXIT_FAILURE;
}

/** The text written to stderr for an error; a stack only when debugging. */
export function formatError(err: unknown, debug = false): string {
  const message = err instanceof GpuxTlsError && err.untrusted ? untrustedMessage(err) : err instanceof Error ? err.message : String(err);
  const lines = [`error: ${message}`];
  for (const p of problemsOf(err)) lines.push(`  - ${p.path}: ${p.message}`);
  if (debug && err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string') lines.push(`  code: ${code}`);
    if (err.stack) lines.push(err.stack);
    if (err.cause !== undefined) lines.push(`  cause: ${err.cause instanceof Error ? (err.cause.stack ?? err.cause.message) : String(err.cause)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The SDK's advice names its own options; the CLI's fix is GPUX_CA_FILE or --ca-file. */
function untrustedMessage(err: GpuxTlsError): string {
  const tried = err.tried.length > 1 ? ` (tried ${err.tried.join(', ')})` : '';
  return `the certificate of the coordinator at ${err.url}${tried} is not trusted (${err.reason}): set GPUX_CA_FILE (or --ca-file) to your CA bundle, the PEM file of the CA that signed it`;
}

/** Print the error and return the process exit code. */
export function reportError(err: unknown, io: { err: { write(s: string): unknown }; env: Record<string, string | undefined> }): number {
  io.err.write(formatError(err, io.env.GPUX_DEBUG === '1'));
  return exitCodeOf(err);
}

/** A busy port deserves a hint, not a bare EADDRINUSE. */
export function explainListenError(err: unknown, port: number): unknown {
  if ((err as NodeJS.ErrnoException | undefined)?.code === 'EADDRINUSE') {
    return new CliError(`port ${port} is already in use: pass --port N (0 picks a free port), or stop whatever listens there`, { cause: err });
  }
  return err;
}
