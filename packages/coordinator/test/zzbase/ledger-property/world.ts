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
export const PROVIDERS = ['prov-0', 'prov-1'];
export const NODES = [
  { id: 'node-0', providerId: 'prov-0' },
  { id: 'node-1', providerId: 'prov-1' },
  { id: 'node-2', providerId: 'prov-0' },
];
export const PARTIES = [...BUYERS, ...PROVIDERS];
export const CAPS = [500_000, 1_000_000, 2_345_679];
export const TIMEOUTS = [60, 600, 1_800];
export const FEES = [0, 250, 500, 2_500];
export const DIGEST = 'a'.repeat(64);

/** GPUX_PROPERTY_RUNS=k multiplies every property's runs (a soak: k=20); the default keeps the file near a minute. */
const SCALE = Math.max(1, Number(process.env.GPUX_PROPERTY_RUNS ?? 1) || 1);
export const runs = (n: number) => n * SCALE;

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
