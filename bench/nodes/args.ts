/** Command-line flags of `bench:nodes` (node:util parseArgs), with their defaults. */
import { parseArgs } from 'node:util';

export type Db = 'sqlite' | 'postgres';

export interface NodesArgs {
  steps: number[];
  replicas: number[];
  dbs: Db[];
  workers: number;
  intervalMs: number;
  windowS: number;
  /** One-GPU jobs submitted at once after the last step, to time their placement with every node online; 0: none. */
  jobs: number;
  baseline: boolean;
  maxSockets: number;
  registerConcurrency: number;
  cpuProf: boolean;
  quick: boolean;
  out: string;
}

export const USAGE = `usage: npm run bench:nodes -- [options]
  --nodes N            largest step (steps above it are dropped)            default 50000 (quick 5000)
  --steps a,b,c        node counts of the ramp                              default 1000,5000,10000,25000,50000
  --replicas 1,3       coordinator replicas on PostgreSQL (SQLite: always 1) default 1,3
  --db sqlite,postgres databases                                            default sqlite,postgres
  --workers K          load-generator processes                             default 2
  --interval MS        heartbeat interval (the coordinator's too)           default GPUX_HEARTBEAT_MS or 5000
  --window S           measured seconds per step                            default 20 (quick 10)
  --jobs N             one-GPU jobs placed at once after the last step      default 500 (quick 100)
  --no-baseline        skip the bare signature-checking server
  --sockets N          keep-alive sockets per worker and coordinator        default 64
  --register-concurrency N  registrations in flight per worker             default 16
  --cpu-prof           V8 CPU profile of each coordinator into bench/results/prof/
  --quick              1,000 and 5,000 nodes, 10 s windows, 100 jobs
  --out FILE           default bench/results/nodes.json (quick: nodes-quick.json)
  --report FILE        print the table of an earlier run's JSON and exit`;

const list = (s: string) => s.split(',').map((x) => x.trim()).filter(Boolean);
const int = (name: string, s: string) => {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer, got ${s}`);
  return n;
};

export function parseNodesArgs(argv: string[], env: NodeJS.ProcessEnv): NodesArgs {
  const { values } = parseArgs({
    args: argv,
    options: {
      nodes: { type: 'string' },
      steps: { type: 'string' },
      replicas: { type: 'string' },
      db: { type: 'string' },
      workers: { type: 'string' },
      interval: { type: 'string' },
      window: { type: 'string' },
      jobs: { type: 'string' },
      'no-baseline': { type: 'boolean' },
      sockets: { type: 'string' },
      'register-concurrency': { type: 'string' },
      'cpu-prof': { type: 'boolean' },
      quick: { type: 'boolean' },
      out: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const quick = values.quick === true;
  const max = values.nodes !== undefined ? int('nodes', values.nodes) : quick ? 5000 : 50_000;
  let steps = values.steps !== undefined ? list(values.steps).map((s) => int('steps', s)) : quick ? [1000, 5000] : [1000, 5000, 10_000, 25_000, 50_000];
  steps = steps.filter((s) => s > 0 && s <= max);
  if (values.nodes !== undefined && !steps.includes(max)) steps.push(max);
  steps.sort((a, b) => a - b);
  const dbs = list(values.db ?? 'sqlite,postgres');
  for (const d of dbs) if (d !== 'sqlite' && d !== 'postgres') throw new Error(`--db takes sqlite and/or postgres, got ${d}`);
  const replicas = list(values.replicas ?? '1,3').map((s) => int('replicas', s));
  if (replicas.some((r) => r < 1)) throw new Error('--replicas must be 1 or more');
  return {
    steps,
    replicas,
    dbs: dbs as Db[],
    workers: Math.max(1, int('workers', values.workers ?? '2')),
    intervalMs: int('interval', values.interval ?? env.GPUX_HEARTBEAT_MS ?? '5000'),
    windowS: int('window', values.window ?? (quick ? '10' : '20')),
    jobs: int('jobs', values.jobs ?? (quick ? '100' : '500')),
    baseline: values['no-baseline'] !== true,
    maxSockets: Math.max(1, int('sockets', values.sockets ?? '64')),
    registerConcurrency: Math.max(1, int('register-concurrency', values['register-concurrency'] ?? '16')),
    cpuProf: values['cpu-prof'] === true,
    quick,
    out: values.out ?? (quick ? 'bench/results/nodes-quick.json' : 'bench/results/nodes.json'),
  };
}
