/**
 * The same-run baseline: graphile-worker on the same PostgreSQL cluster, one process, a no-op task,
 * concurrency 10, unbatched (its defaults). Jobs are added by the same load generators as gpux's.
 */
import { Logger, makeWorkerUtils, run, type Runner, type WorkerUtils } from 'graphile-worker';
import pg from 'pg';
import { ownCpuMs } from './cpu.js';
import { closedLoop, openLoop, waitUntil } from './load.js';
import { type JobTimes, type Phase, type PhaseResult, phaseResult } from './phase.js';

/** Fractional epoch ms, so sub-millisecond latencies survive. */
const nowMs = () => performance.timeOrigin + performance.now();

const quietLogger = new Logger(() => (level, message) => {
  if (level === 'error') console.error(`[graphile-worker] ${message}`);
});

export interface GraphileBench {
  runPhase(phase: Phase, deadlineMs: number): Promise<PhaseResult>;
  close(): Promise<void>;
}

/** Installs graphile-worker's schema in a fresh schema of `pgUrl` and starts one runner. */
/** `dbCpu` reads the CPU ms of the PostgreSQL backends serving `pgUrl`'s database. */
export async function startGraphile(pgUrl: string, dbCpu: () => Promise<number | null>, concurrency = 10, submitters = 16): Promise<GraphileBench> {
  const schema = `gw_bench_${process.pid}`;
  let added: number[] = [];
  let started: number[] = [];
  let doneAt: number[] = [];
  let failed = new Set<number>();
  let completed = 0;
  // Our own pool, with an error listener: the bench's PostgreSQL ends with DROP DATABASE … WITH (FORCE), and an idle
  // client cut by it would otherwise be an unhandled 'error' that kills the run before its table is printed.
  const pool = new pg.Pool({ connectionString: pgUrl, max: submitters + concurrency + 2 });
  pool.on('error', () => {});
  const utils: WorkerUtils = await makeWorkerUtils({ pgPool: pool, schema, logger: quietLogger });
  await utils.migrate();
  const runner: Runner = await run({
    pgPool: pool,
    schema,
    concurrency,
    noHandleSignals: true,
    pollInterval: 1000,
    logger: quietLogger,
    taskList: {
      noop: async (payload) => {
        started[(payload as { i: number }).i] = nowMs();
      },
    },
  });
  runner.events.on('job:complete', ({ job, error }) => {
    const i = (job.payload as { i: number }).i;
    doneAt[i] = nowMs();
    if (error) failed.add(i);
    completed++;
  });

  async function runPhase(phase: Phase, deadlineMs: number): Promise<PhaseResult> {
    added = [];
    started = [];
    doneAt = [];
    failed = new Set();
    completed = 0;
    const cpuStart = { server: null, client: ownCpuMs(), db: await dbCpu() };
    const submit = async (i: number) => {
      added[i] = nowMs();
      try {
        await utils.addJob('noop', { i });
      } catch (err) {
        delete added[i];
        throw err;
      }
    };
    const load =
      phase.kind === 'throughput'
        ? await closedLoop(phase.jobs, phase.concurrency, deadlineMs, submit)
        : await openLoop(phase.rate, phase.seconds, 1000, submit);
    const timedOut = !(await waitUntil(() => completed >= load.submitted, deadlineMs));
    const cpuEnd = { server: null, client: ownCpuMs(), db: await dbCpu() };
    const times: JobTimes[] = [];
    for (let i = 0; i < added.length; i++) {
      const submit = added[i];
      if (submit === undefined) continue;
      const done = doneAt[i] ?? null;
      times.push({ submit, start: started[i] ?? null, done, succeeded: done !== null && !failed.has(i) });
    }
    return phaseResult(load, times, timedOut, cpuStart, cpuEnd);
  }

  async function close() {
    await runner.stop();
    await utils.withPgClient((c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
    await utils.release();
    await pool.end();
  }
  return { runPhase, close };
}
