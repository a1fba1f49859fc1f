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

/** One of a fixed set (case-insensitive); anything else is a usage error naming every valid value. */
export function choiceArg<T extends string>(name: string, choices: readonly T[]): (raw: string) => T {
  return (raw) => {
    const v = raw.trim().toLowerCase();
    if (!(choices as readonly string[]).includes(v)) throw new InvalidArgumentError(`${name} must be ${orList(choices)}, got "${raw}"${didYouMean(v, choices)}`);
    return v as T;
  };
}

/** A comma-separated list of a fixed set, e.g. `--state queued,running`; kept as the comma-joined text. */
export function choiceListArg(name: string, choices: readonly string[]): (raw: string) => string {
  const one = choiceArg(name, choices);
  return (raw) => {
    const parts = raw.split(',').map((p) => p.trim());
    if (parts.some((p) => p === '')) throw new InvalidArgumentError(`${name} must be one or more of ${orList(choices)}, comma-separated, got "${raw}"`);
    try {
      return [...new Set(parts.map(one))].join(',');
    } catch {
      const wrong = parts.filter((p) => !choices.includes(p.toLowerCase()));
      const hint = wrong.length === 1 ? didYouMean(wrong[0]!.toLowerCase(), choices) : '';
      throw new InvalidArgumentError(`${name} must be one or more of ${orList(choices)}, comma-separated; "${wrong.join('", "')}" is not one${hint}`);
    }
  };
}

const orList = (xs: readonly string[]) => (xs.length < 2 ? xs.join('') : `${xs.slice(0, -1).join(', ')} or ${xs[xs.length - 1]}`);

/** " (did you mean running?)" for a near miss (at most 2 edits), else nothing. */
function didYouMean(v: string, choices: readonly string[]): string {
  const best = choices.map((c) => [c, editDistance(v, c)] as const).sort((a, b) => a[1] - b[1])[0];
  return best && best[1] <= 2 ? ` (did you mean ${best[0]}?)` : '';
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = row;
  }
  return prev[b.length]!;
}
