/** Command-line flags of the dispatch benchmark, parsed once (node:util parseArgs), with their defaults. */
import { parseArgs } from 'node:util';

export type Db = 'sqlite' | 'postgres';
/** gpux with its market (escrow, paid placement, stake, settlement; the default) or without (a private cluster). */
export type Market = 'on' | 'off';

export interface BenchArgs {
  agents: number;
  jobs: number;
  concurrency: number;
  /** Offered rate of the fixed-rate phase, jobs/s; 0 skips the phase. */
  rate: number;
  rateSeconds: number;
  dbs: Db[];
  /** gpux variants measured, market on first; each gets its own rows. */
  markets: Market[];
  baseline: boolean;
  /**
   * Coordinator replicas on one PostgreSQL database for the PostgreSQL gpux phases, each count its own rows
   * (ascending; default [1]). SQLite stays one process.
   */
  replicas: number[];
  /** Where the coordinator runs: its own child process (default) or this process. */
  coordinator: 'child' | 'inproc';
  /** Each phase gives up after this many seconds and reports what completed. */
  phaseTimeoutS: number;
  /** Write a V8 CPU profile of the coordinator (child mode) into bench/results/prof/. */
  cpuProf: boolean;
  /** SQLite's synchronous mode for the coordinator; null keeps its default (FULL). A diagnostic. */
  sqliteSync: 'FULL' | 'NORMAL' | null;
  /** PostgreSQL pool size of the coordinator's store; null keeps its default (10). A diagnostic. */
  pgPool: number | null;
  /** Provider accounts owning the agents' nodes in market runs (agent i: provider i mod N). */
  providers: number;
  /** How gpux and graphile-worker reach the run's own PostgreSQL cluster (GPUX_BENCH_PG_URL is used as given). */
  pgVia: 'socket' | 'tcp';
  /** Count and time the coordinator's Store calls and watch its event loop (adds a little overhead). */
  diagnose: boolean;
  quick: boolean;
  out: string;
}

export const USAGE = `usage: npm run bench:dispatch -- [options]
  --agents N         agents (in-process, loopback HTTP)             default 20
  --jobs N           jobs of the throughput phase                   default 2000 (quick 200)
  --concurrency N    concurrent submitters in the throughput phase  default 16
  --rate R           offered jobs/s of the fixed-rate phase (0: off) default 200
  --rate-seconds S   length of the fixed-rate phase                 default 5 (quick 2)
  --db LIST          sqlite,postgres                                 default both
  --market LIST      on,off: gpux with its market, and without          default both
  --replicas LIST    coordinator replicas on PostgreSQL, e.g. 1,2,3    default 1 (child mode only above 1)
  --no-baseline      skip graphile-worker
  --coordinator M    child | inproc                                  default child
  --phase-timeout S  give up on a phase after S seconds              default 90 (quick 30)
  --sqlite-sync M    full | normal: SQLite's synchronous mode       default: the coordinator's (full)
  --pg-pool N        the coordinator's PostgreSQL pool size          default: the coordinator's (10)
  --providers N      provider accounts owning the nodes (market on)   default 1
  --pg-via M         socket | tcp: how every client reaches the run's PostgreSQL  default socket
  --diagnose         the coordinator's Store calls per job (count, mean ms) and event-loop delay
  --cpu-prof         V8 CPU profile of the coordinator into bench/results/prof/
  --quick            a ~30 s smoke run
  --out FILE         JSON results                                    default bench/results/dispatch(-quick).json`;

export function parseBenchArgs(argv: string[]): BenchArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      agents: { type: 'string' },
      jobs: { type: 'string' },
      concurrency: { type: 'string' },
      rate: { type: 'string' },
      'rate-seconds': { type: 'string' },
      db: { type: 'string' },
      market: { type: 'string' },
      replicas: { type: 'string' },
      'no-baseline': { type: 'boolean' },
      coordinator: { type: 'string' },
      'phase-timeout': { type: 'string' },
      'cpu-prof': { type: 'boolean' },
      'sqlite-sync': { type: 'string' },
      diagnose: { type: 'boolean' },
      'pg-pool': { type: 'string' },
      'pg-via': { type: 'string' },
      providers: { type: 'string' },
      quick: { type: 'boolean' },
      out: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const quick = values.quick ?? false;
  const num = (v: string | undefined, dflt: number, name: string): number => {
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number, got ${v}`);
    return n;
  };
  const dbs = (values.db ?? 'sqlite,postgres').split(',').map((s) => s.trim());
  for (const d of dbs) if (d !== 'sqlite' && d !== 'postgres') throw new Error(`--db takes sqlite and/or postgres, got ${d}`);
  const markets = (values.market ?? 'on,off').split(',').map((s) => s.trim());
  for (const m of markets) if (m !== 'on' && m !== 'off') throw new Error(`--market takes on and/or off, got ${m}`);
  const coordinator = values.coordinator ?? 'child';
  if (coordinator !== 'child' && coordinator !== 'inproc') throw new Error(`--coordinator takes child or inproc, got ${coordinator}`);
  const replicas = [...new Set((values.replicas ?? '1').split(',').map((s) => Number(s.trim())))].sort((a, b) => a - b);
  for (const r of replicas) if (!Number.isInteger(r) || r < 1 || r > 16) throw new Error(`--replicas takes whole numbers from 1 to 16, e.g. 1,2,3; got ${values.replicas}`);
  // In-process, replicas would share one event loop and no CPU figure could be taken per process.
  if (coordinator === 'inproc' && replicas.some((r) => r > 1)) throw new Error('--replicas above 1 needs --coordinator child (each replica is its own process)');
  const sync = values['sqlite-sync']?.toUpperCase() ?? null;
  if (sync !== null && sync !== 'FULL' && sync !== 'NORMAL') throw new Error(`--sqlite-sync takes full or normal, got ${values['sqlite-sync']}`);
  const pgVia = values['pg-via'] ?? 'socket';
  if (pgVia !== 'socket' && pgVia !== 'tcp') throw new Error(`--pg-via takes socket or tcp, got ${pgVia}`);
  return {
    pgVia,
    providers: Math.max(1, Math.floor(num(values.providers, 1, 'providers'))),
    agents: Math.max(1, Math.floor(num(values.agents, 20, 'agents'))),
    jobs: Math.max(1, Math.floor(num(values.jobs, quick ? 200 : 2000, 'jobs'))),
    concurrency: Math.max(1, Math.floor(num(values.concurrency, 16, 'concurrency'))),
    rate: num(values.rate, 200, 'rate'),
    rateSeconds: num(values['rate-seconds'], quick ? 2 : 5, 'rate-seconds'),
    dbs: dbs as Db[],
    // On before off, whatever the order given, so the table reads the same in every run.
    markets: (['on', 'off'] as const).filter((m) => markets.includes(m)),
    replicas,
    baseline: !(values['no-baseline'] ?? false),
    coordinator,
    phaseTimeoutS: num(values['phase-timeout'], quick ? 30 : 90, 'phase-timeout'),
    cpuProf: values['cpu-prof'] ?? false,
    sqliteSync: sync,
    diagnose: values.diagnose ?? false,
    pgPool: values['pg-pool'] === undefined ? null : Math.max(1, Math.floor(num(values['pg-pool'], 10, 'pg-pool'))),
    quick,
    out: values.out ?? (quick ? 'bench/results/dispatch-quick.json' : 'bench/results/dispatch.json'),
  };
}
