/** What every command gets: output streams, the environment, and helpers to build an SDK client from flags. */
import { tlsFetchFromFiles } from '@gpux/protocol/tls-fetch';
import { type FetchLike, GpuxClient, parseCoordinatorUrls } from '@gpux/sdk';
import { type Command, InvalidArgumentError } from 'commander';
import { CliError, EXIT_USAGE } from './errors.js';
import { type ConnectionFlags, type Env, profilePath, readProfile, resolveConnection } from './profile.js';

export interface Writer {
  write(s: string): unknown;
  isTTY?: boolean;
}

export interface Io {
  out: Writer;
  err: Writer;
  env: Env;
  /** Set by a command that finishes normally but must report failure (e.g. a waited-for job failed). */
  exitCode: number;
  /** The global --insecure flag: tokens may cross plain HTTP to a non-loopback host (GPUX_INSECURE=1 does the same). */
  insecure?: boolean;
  /** The global --ca-file flag (GPUX_CA_FILE does the same): the CA bundle that signed the coordinator's certificate. */
  caFile?: string;
}

/** --insecure or GPUX_INSECURE=1: the user accepts that a token sent over plain HTTP can be read and reused on the path. */
export function insecureAccepted(io: Io): boolean {
  return io.insecure === true || io.env.GPUX_INSECURE === '1';
}

/** --ca-file, else GPUX_CA_FILE, with the name to cite when the file is unusable; undefined: the system roots. */
export function caFileOf(io: Io): { path: string; source: string } | undefined {
  if (io.caFile !== undefined && io.caFile !== '') return { path: io.caFile, source: '--ca-file' };
  const env = io.env.GPUX_CA_FILE?.trim();
  return env ? { path: env, source: 'GPUX_CA_FILE' } : undefined;
}

export function processIo(): Io {
  return { out: process.stdout, err: process.stderr, env: process.env, exitCode: 0 };
}

/** The --coordinator and --token flags every API command takes. */
export function connectionOptions(cmd: Command): Command {
  return cmd.option('--coordinator <url[,url]>', 'coordinator URL, or several comma-separated (replicas: fail over) (default: $GPUX_URL, then the profile)').option('--token <token>', 'bearer token (default: $GPUX_TOKEN, then the profile)');
}

export function jsonOption(cmd: Command): Command {
  return cmd.option('--json', 'print JSON for scripts');
}

export function clientFor(io: Io, flags: ConnectionFlags, role: 'buyer' | 'operator'): GpuxClient {
  const conn = resolveConnection(flags, io.env, readProfile(io.env), role);
  return new GpuxClient({ url: coordinatorUrls(conn.url, urlSource(flags, io.env)), insecure: insecureAccepted(io), fetch: fetchFor(io), ...(conn.token ? { token: conn.token } : {}) });
}

/** Where the coordinator URL came from, to name it in an error (same order as resolveConnection). */
export function urlSource(flags: ConnectionFlags, env: Env): string {
  if (flags.coordinator?.trim()) return '--coordinator';
  if (env.GPUX_URL?.trim()) return 'GPUX_URL';
  return `the profile's url (${profilePath(env)})`;
}

/** One URL or a comma-separated list, checked here so a bad entry is a usage error naming where it came from. */
export function coordinatorUrls(raw: string, source: string): string[] {
  try {
    return parseCoordinatorUrls(raw);
  } catch (err) {
    throw new CliError(`${source}: ${(err as Error).message} (several coordinators: comma-separated, e.g. https://a.example:8080,https://b.example:8080)`, {
      exitCode: EXIT_USAGE,
      cause: err,
    });
  }
}

/** The fetch for every command that talks to a coordinator: one trusting the CA bundle when one is given. */
export function fetchFor(io: Io): FetchLike | undefined {
  const ca = caFileOf(io);
  if (!ca) return undefined;
  try {
    return tlsFetchFromFiles({ caFile: ca.path, source: ca.source }) as FetchLike;
  } catch (err) {
    throw new CliError((err as Error).message, { exitCode: EXIT_USAGE, cause: err });
  }
}

/** Commander option parsers that turn bad values into usage errors. */
export function intArg(name: string, min: number, max: number): (raw: string) => number {
  return (raw) => {
    const n = Number(raw);
    if (!/^\d+$/.test(raw.trim()) || n < min || n > max) throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
    return n;
  };
}
