/**
 * One phase against a running gpux system: submit no-op jobs through the SDK (one idempotency key each),
 * wait until none is left unfinished, then read every job record back through the API and measure from it.
 */
import type { JobView } from '@gpux/protocol';
import type { GpuxClient } from '@gpux/sdk';
import type { GpuxSystem } from './gpux-system.js';
import { ownCpuMs } from './cpu.js';
import { closedLoop, openLoop, waitUntil } from './load.js';
import { NOOP_SPEC } from './noop-job.js';
import type { DbWaits, WaitWatch } from './pg-waits.js';
import { type JobTimes, type Phase, type PhaseResult, phaseResult } from './phase.js';
import { summarize } from './stats.js';

const UNFINISHED = 'queued,assigned,running';

/** Per-stage p50/p99 (ms) from a sample of jobs' attempts: where the time between submit and done goes. */
export interface StageBreakdown {
  sampled: number;
  /** client send → job row created (HTTP + validation + insert commit). */
  accept: { p50: number; p99: number };
  /** job created → attempt created (queue wait + scheduling pass). */
  place: { p50: number; p99: number };
  /** attempt created → attempt started (long-poll delivery + agent's start report). */
  claim: { p50: number; p99: number };
  /** attempt started → attempt finished (executor + signed result commit + settle). */
  commit: { p50: number; p99: number };
}

/** How the scheduler spread the phase's jobs over the agents. */
export interface Spread {
  /** Agents that ran at least one job. */
  agentsUsed: number;
  /** Share of all jobs run by the busiest agent, 0..1. */
  busiestShare: number;
}

/** The books after a market phase, every job finished: nothing left in escrow, and the ledger balanced. */
export interface MoneyCheck {
  /** USDC minor units still in escrow (0 once every job has settled and released its hold). */
  escrow: number;
  /** USDC minor units the treasury took in fees. */
  treasury: number;
  /** The coordinator's own invariant check (treasury route). */
  balanced: boolean;
}

export interface GpuxPhaseResult extends PhaseResult {
  stages: StageBreakdown | null;
  spread: Spread;
  /** Market runs only; null without a market. */
  money: MoneyCheck | null;
  /** PostgreSQL with --diagnose: what the connections waited for while the jobs went through. */
  dbWaits: DbWaits | null;
}

async function moneyCheck(sys: GpuxSystem): Promise<MoneyCheck | null> {
  if (!sys.market) return null;
  const usdc = (await sys.operator.treasury()).assets.find((a) => a.asset === 'usdc');
  return usdc ? { escrow: usdc.escrow, treasury: usdc.treasury, balanced: usdc.balanced } : null;
}

async function readAllJobs(client: GpuxClient): Promise<Map<string, JobView>> {
  const out = new Map<string, JobView>();
  let cursor: string | undefined;
  // Bounded: at most 10,000 pages of 500.
  for (let page = 0; page < 10_000; page++) {
    const res = await client.listJobs(cursor === undefined ? { limit: 500 } : { limit: 500, cursor });
    for (const j of res.jobs) out.set(j.id, j);
    if (!res.nextCursor) break;
    cursor = res.nextCursor;
  }
  return out;
}

async function stages(client: GpuxClient, sample: Array<{ id: string; submit: number }>): Promise<StageBreakdown | null> {
  const accept: number[] = [];
  const place: number[] = [];
  const claim: number[] = [];
  const commit: number[] = [];
  for (const s of sample) {
    const { job, attempts } = await client.getJob(s.id);
    const a = attempts.find((x) => x.id === job.currentAttemptId) ?? attempts[attempts.length - 1];
    accept.push(job.createdAt - s.submit);
    if (!a) continue;
    place.push(a.createdAt - job.createdAt);
    if (a.startedAt !== null) claim.push(a.startedAt - a.createdAt);
    if (a.startedAt !== null && a.finishedAt !== null) commit.push(a.finishedAt - a.startedAt);
  }
  if (accept.length === 0) return null;
  const pp = (xs: number[]) => {
    const s = summarize(xs);
    return { p50: s.p50, p99: s.p99 };
  };
  return { sampled: accept.length, accept: pp(accept), place: pp(place), claim: pp(claim), commit: pp(commit) };
}

/** CPU ms of the PostgreSQL backends of the phase's database; null on SQLite. */
export type DbCpu = () => Promise<number | null>;

export async function runGpuxPhase(
  sys: GpuxSystem,
  phase: Phase,
  deadlineMs: number,
  tag: string,
  dbCpu: DbCpu,
  watchWaits: (() => WaitWatch) | null = null,
): Promise<GpuxPhaseResult> {
  const submitted: Array<{ id: string; submit: number }> = [];
  // Submitter j goes through replica j mod N (one replica: always the buyer's one client).
  const submit = async (i: number, submitter: number) => {
    const t = Date.now();
    const client = sys.buyers[submitter % sys.buyers.length] as GpuxClient;
    const res = await client.submitJob(NOOP_SPEC, { idempotencyKey: `${tag}-${i}` });
    submitted.push({ id: res.job.id, submit: t });
  };
  const sendAndDrain = async () => {
    const cpuStart = { server: sys.coordinatorCpuMs(), client: ownCpuMs(), db: await dbCpu() };
    const load =
      phase.kind === 'throughput'
        ? await closedLoop(phase.jobs, phase.concurrency, deadlineMs, submit)
        : await openLoop(phase.rate, phase.seconds, 1000, submit);
    // Every phase has its own system, so "no unfinished job" means this phase's jobs are all done.
    const drained = await waitUntil(async () => (await sys.buyer.listJobs({ state: UNFINISHED, limit: 1 })).jobs.length === 0, deadlineMs, 100);
    return { cpuStart, load, drained, cpuEnd: { server: sys.coordinatorCpuMs(), client: ownCpuMs(), db: await dbCpu() } };
  };
  const watch = watchWaits?.();
  let dbWaits: DbWaits | null = null;
  const { cpuStart, load, drained, cpuEnd } = await sendAndDrain().finally(async () => {
    dbWaits = watch ? await watch.stop() : null;
  });
  const records = await readAllJobs(sys.buyer);
  const times: JobTimes[] = submitted.map(({ id, submit }) => {
    const j = records.get(id);
    const done = j && j.finishedAt !== null ? j.finishedAt : null;
    return { submit, start: j?.startedAt ?? null, done, succeeded: j?.state === 'succeeded' };
  });
  const step = Math.max(1, Math.floor(submitted.length / 100));
  const sample = submitted.filter((_, i) => i % step === 0).slice(0, 100);
  const ran = sys.executors.map((e) => e.started);
  const total = ran.reduce((a, b) => a + b, 0);
  const spread = { agentsUsed: ran.filter((n) => n > 0).length, busiestShare: total ? Math.max(...ran) / total : 0 };
  return { ...phaseResult(load, times, !drained, cpuStart, cpuEnd), stages: await stages(sys.buyer, sample), spread, money: await moneyCheck(sys), dbWaits };
}
