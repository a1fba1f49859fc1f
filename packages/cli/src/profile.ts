/** The CLI profile ($GPUX_HOME/profile.json, mode 0600) and how flags and env override it. */
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { CliError, EXIT_USAGE } from './errors.js';

export interface Profile {
  url?: string;
  token?: string;
  operatorToken?: string;
}

export type Env = Record<string, string | undefined>;

export function gpuxHome(env: Env): string {
  const home = env.GPUX_HOME?.trim();
  return home ? home : join(env.HOME?.trim() || homedir(), '.gpux');
}

export const profilePath = (env: Env): string => join(gpuxHome(env), 'profile.json');

/** The saved profile, or an empty one when there is none yet. A profile found readable by others is made 0600 first. */
export function readProfile(env: Env): Profile {
  const path = profilePath(env);
  let text: string;
  try {
    privateFile(path);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new CliError(`cannot read the profile ${path}: ${(err as Error).message}`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new CliError(`the profile ${path} is not valid JSON; fix or delete it`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new CliError(`the profile ${path} must hold a JSON object`);
  const out: Profile = {};
  for (const key of ['url', 'token', 'operatorToken'] as const) {
    const v = (data as Record<string, unknown>)[key];
    if (typeof v === 'string' && v !== '') out[key] = v;
  }
  return out;
}

/** Write the profile atomically with mode 0600 (it holds bearer tokens). Returns its path. */
export function writeProfile(env: Env, profile: Profile): string {
  const dir = gpuxHome(env);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  privateDir(dir);
  const path = profilePath(env);
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(profile, null, 2)}\n`, { mode: 0o600 });
  chmodSync(tmp, 0o600); // the umask may have narrowed it; never widen beyond 0600 either
  renameSync(tmp, path);
  return path;
}

/** The profile holds bearer tokens: never readable by other local users (an older one may have been written 0644). */
function privateFile(path: string): void {
  const st = statSync(path); // ENOENT: no profile yet, handled by the caller
  if ((st.mode & 0o077) !== 0 && process.getuid?.() === st.uid) chmodSync(path, 0o600);
}

/** GPUX_HOME to 0700 when this user owns it and it is no shared (sticky) dir; left alone otherwise. */
function privateDir(dir: string): void {
  const st = statSync(dir);
  if ((st.mode & 0o077) === 0 || (st.mode & 0o1000) !== 0 || process.getuid?.() !== st.uid) return;
  chmodSync(dir, 0o700);
}

export interface ConnectionFlags {
  coordinator?: string;
  token?: string;
}

export interface Connection {
  /** One coordinator URL, or several comma-separated (replicas; the client fails over between them). */
  url: string;
  token: string | undefined;
}

/**
 * Where to connect and with which token. URL: --coordinator, GPUX_URL, profile.url.
 * Buyer token: --token, GPUX_TOKEN, profile.token. Operator token: --token, GPUX_OPERATOR_TOKEN,
 * profile.operatorToken, then the buyer sources (an operator token also works as the main token).
 */
export function resolveConnection(flags: ConnectionFlags, env: Env, profile: Profile, role: 'buyer' | 'operator' | 'none' = 'buyer'): Connection {
  const pick = (...values: Array<string | undefined>) => values.map((v) => v?.trim()).find((v) => v !== undefined && v !== '');
  const url = pick(flags.coordinator, env.GPUX_URL, profile.url);
  if (!url) {
    // A missing flag, like any other: usage (exit 2).
    throw new CliError('no coordinator URL: pass --coordinator URL, set GPUX_URL, or start a local network with `gpux dev` (it writes the profile)', { exitCode: EXIT_USAGE });
  }
  const buyer = [env.GPUX_TOKEN, profile.token];
  const token = role === 'none' ? pick(flags.token) : role === 'operator' ? pick(flags.token, env.GPUX_OPERATOR_TOKEN, profile.operatorToken, ...buyer) : pick(flags.token, ...buyer);
  return { url, token };
}
