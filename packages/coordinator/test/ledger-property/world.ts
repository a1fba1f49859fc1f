/**
 * The fixed world of the ledger property tests: its parties and nodes, the menus commands pick caps,
 * timeouts and fees from, the start of time, how many runs each property does, and small pure helpers.
 */
import { mulDiv, transitionDecider } from '@gpux/core';
import { type Asset, type JobState, TERMINAL_JOB_STATES } from '@gpux/protocol';

export const T0 = 1_700_000_000_000;
export const decide = transitionDecider({ baseBackoffMs: 1, maxBackoffMs: 10 });
export const ASSETS: readonly Asset[] = ['usdc', 'credit'];
export const BUYERS = ['buyer-0', 'buyer-1', 'buyer-2'];
// Four operators: an audit avoids the executor's, and each referee every earlier one's (issue 11), so an
// audit mismatch can reach its quorum of two referees (executor, auditor, referee, referee).
export const PROVIDERS = ['prov-0', 'prov-1', 'prov-2', 'prov-3'];
export const NODES = [
  { id: 'node-0', providerId: 'prov-0' },
  { id: 'node-1', providerId: 'prov-1' },
  { id: 'node-2', providerId: 'prov-0' },
  { id: 'node-3', providerId: 'prov-2' },
  { id: 'node-4', providerId: 'prov-3' },
];
export const PARTIES = [...BUYERS, ...PROVIDERS];
export const CAPS = [500_000, 1_000_000, 2_345_679];
export const TIMEOUTS = [60, 600, 1_800];
export const FEES = [0, 250, 500, 2_500];
/** Every verified job's one true result (deterministic): this digest with exit code 0. */
export const DIGEST = 'a'.repeat(64);
/** A wrong result: its own digest per attempt, so two lying runs never agree (no colluding quorum). */
export const wrongDigest = (attemptId: string) => `bad-${attemptId}`.padEnd(64, 'b');
/** The dispute window of the jobs submitted with held pay (the clock advances up to 15 minutes a step). */
export const WINDOW_MS = 600_000;
/** The account check runs (audits, referees) are submitted by (coordinator store verification-jobs.ts). */
export const SYSTEM_AUDIT = 'system:audit';

/** GPUX_PROPERTY_RUNS=k multiplies every property's runs (a soak: k=20); the default keeps the file near a minute. */
const SCALE = Math.max(1, Number(process.env.GPUX_PROPERTY_RUNS ?? 1) || 1);
export const runs = (n: number) => n * SCALE;
/** GPUX_PROPERTY_SEED=seed[:path] replays a reported failure (fast-check prints both); a concurrent one may not repeat. */
export function replay(): { seed?: number; path?: string } {
  // The path has colons of its own: split at the first only.
  const [seed = '', ...path] = (process.env.GPUX_PROPERTY_SEED ?? '').split(':');
  return seed ? { seed: Number(seed), ...(path.length > 0 ? { path: path.join(':') } : {}) } : {};
}

export type TestNode = (typeof NODES)[number];

export const isTerminal = (s: JobState) => TERMINAL_JOB_STATES.includes(s);
/** The k-th element, wrapping around: commands pick "the k-th of whatever exists now". */
export const at = <T>(xs: readonly T[], k: number): T | undefined => (xs.length === 0 ? undefined : xs[k % xs.length]);
export const byId = <T extends { id: string }>(xs: T[]) => xs.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
export const sum = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0);
export const node = (k: number) => NODES[k % NODES.length] as TestNode;
/** The model's map key for one party's money in one asset. */
export const key = (account: string, asset: Asset) => `${account}|${asset}`;
/** pct % of a balance, at least 1 (above 100 %: more than there is). */
export const pctOf = (balance: number, pct: number) => Math.max(1, mulDiv(Math.max(0, balance), pct, 100));
