/** One measured phase (closed-loop throughput or open-loop fixed rate) and how its samples become figures. */
import type { LoadResult } from './load.js';
import { type LatencySummary, summarize, throughput } from './stats.js';

export type Phase = { kind: 'throughput'; jobs: number; concurrency: number } | { kind: 'rate'; rate: number; seconds: number };

export interface PhaseResult {
  /** Jobs the system accepted. */
  jobs: number;
  /** Of those, jobs that reached done within the phase's deadline. */
  completed: number;
  /** completed / (last done − first submit). */
  jobsPerSec: number;
  /** completed / (last done − first done): the rate the system finished jobs at, whatever it was offered. */
  doneRate: number;
  toRunning: LatencySummary;
  toDone: LatencySummary;
  load: LoadResult;
  timedOut: boolean;
  /** Jobs that ended in a state other than success. */
  notSucceeded: number;
  /**
   * CPU ms per accepted job during the phase: `server` is the coordinator process (gpux, child mode; null
   * otherwise), `client` this process (gpux: agents and submitters; graphile-worker: its worker and adders),
   * `db` the PostgreSQL backends serving the phase's database (null on SQLite, which runs inside the server).
   */
  cpuMsPerJob: { server: number | null; client: number; db: number | null };
}

/** CPU readings (ms) taken at the start and at the end of a phase. */
export interface CpuMark {
  server: number | null;
  client: number;
  db: number | null;
}

/** Times of one job, epoch ms: when the client sent it, when it started running, when it was done. */
export interface JobTimes {
  submit: number;
  start: number | null;
  done: number | null;
  succeeded: boolean;
}

export function phaseResult(load: LoadResult, jobs: readonly JobTimes[], timedOut: boolean, cpuStart: CpuMark, cpuEnd: CpuMark): PhaseResult {
  const toRunning: number[] = [];
  const toDone: number[] = [];
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  let firstDone = Number.POSITIVE_INFINITY;
  let notSucceeded = 0;
  for (const j of jobs) {
    first = Math.min(first, j.submit);
    if (j.start !== null) toRunning.push(j.start - j.submit);
    if (j.done === null) continue;
    if (!j.succeeded) notSucceeded++;
    toDone.push(j.done - j.submit);
    last = Math.max(last, j.done);
    firstDone = Math.min(firstDone, j.done);
  }
  return {
    jobs: jobs.length,
    completed: toDone.length,
    jobsPerSec: toDone.length ? throughput(toDone.length, first, last) : 0,
    doneRate: toDone.length > 1 ? throughput(toDone.length - 1, firstDone, last) : 0,
    toRunning: summarize(toRunning),
    toDone: summarize(toDone),
    load,
    timedOut,
    notSucceeded,
    cpuMsPerJob: {
      server: perJob(cpuStart.server, cpuEnd.server, jobs.length),
      client: (cpuEnd.client - cpuStart.client) / Math.max(1, jobs.length),
      db: perJob(cpuStart.db, cpuEnd.db, jobs.length),
    },
  };
}

function perJob(start: number | null, end: number | null, jobs: number): number | null {
  return start === null || end === null ? null : (end - start) / Math.max(1, jobs);
}

export function describePhase(p: Phase): string {
  return p.kind === 'throughput' ? `${p.jobs} jobs, ${p.concurrency} submitters` : `${p.rate} jobs/s for ${p.seconds} s`;
}
