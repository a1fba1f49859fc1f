/**
 * Where the coordinator's CPU goes per job, stage by stage (issue 14's map): submits with every node cordoned
 * (nothing places), then placement + delivery + start with the runs held, then the results. Each stage's
 * coordinator CPU is read from /proc beside the idle rate measured first (heartbeats, loops) and taken off.
 *   node --import tsx bench/dispatch/stages-cpu.ts [--jobs N] [--db sqlite|postgres] [--market on|off] [--agents N] [--providers N]
 *     [--until submit|place|result] [--cpu-prof DIR]
 * --until stops after that stage (a CPU profile then covers the stages up to it); PostgreSQL is reached over its
 * Unix socket, as in bench:dispatch. Nodes are uncordoned one after another, so the first pass may pack most jobs onto
 * the first few nodes (and providers): the per-stage CPU holds, the spread over nodes is not bench:dispatch's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { startPostgres } from '@gpux/testing';
import { startGpuxSystem } from './gpux-system.js';
import { closedLoop, waitUntil } from './load.js';
import { NOOP_SPEC } from './noop-job.js';

const { values } = parseArgs({
  options: { jobs: { type: 'string' }, db: { type: 'string' }, market: { type: 'string' }, agents: { type: 'string' }, until: { type: 'string' }, providers: { type: 'string' }, 'cpu-prof': { type: 'string' } },
});
const count = (v: string | undefined, dflt: number, name: string) => {
  const n = Number(v ?? dflt);
  if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new Error(`--${name} takes a whole number from 1 to 100000, got ${v}`);
  return n;
};
const jobs = count(values.jobs, 1000, 'jobs');
const agents = count(values.agents, 20, 'agents');
const providers = count(values.providers, 1, 'providers');
if (values.db !== undefined && values.db !== 'sqlite' && values.db !== 'postgres') throw new Error(`--db takes sqlite or postgres, got ${values.db}`);
if (values.market !== undefined && values.market !== 'on' && values.market !== 'off') throw new Error(`--market takes on or off, got ${values.market}`);
if (values.until !== undefined && !['submit', 'place', 'result'].includes(values.until)) throw new Error(`--until takes submit, place or result, got ${values.until}`);
const pg = values.db === 'postgres' ? await startPostgres() : null;
const sys = await startGpuxSystem({
  db: pg ? (pg.viaSocket?.(pg.url) ?? pg.url) : 'sqlite:{dir}/bench.db',
  agents,
  replicas: 1,
  market: (values.market ?? 'on') === 'on',
  coordinator: 'child',
  cpuProfDir: values['cpu-prof'] ?? null,
  sqliteSynchronous: null,
  pgPool: null,
  diagnostics: false,
  providers,
});
const cpu = () => sys.coordinatorCpuMs() ?? Number.NaN;
const unfinished = async (state: string) => (await sys.buyer.listJobs({ state, limit: 1 })).jobs.length > 0;
try {
  const { nodes } = await sys.operator.listNodes({ limit: 1000 });
  for (const n of nodes) await sys.operator.cordonNode(n.id);
  for (const e of sys.executors) e.hold();
  await sleep(1000);
  const idle0 = cpu();
  const t0 = Date.now();
  await sleep(3000);
  const idleRate = (cpu() - idle0) / (Date.now() - t0);
  let past = false;
  const stage = async (name: string, work: () => Promise<void>) => {
    if (past) return;
    if (values.until && name.startsWith(values.until)) past = true;
    const c = cpu();
    const t = Date.now();
    await work();
    const wall = Date.now() - t;
    const used = cpu() - c - idleRate * wall;
    console.log(`${name.padEnd(28)} ${(used / jobs).toFixed(2).padStart(6)} ms CPU/job  (${wall} ms wall)`);
  };
  console.log(`coordinator idle: ${(idleRate * 1000).toFixed(1)} ms CPU/s; ${jobs} jobs, ${nodes.length} nodes of ${providers} providers, market ${values.market ?? 'on'}, ${values.db ?? 'sqlite'}`);
  await stage('submit (nodes cordoned)', async () => {
    const r = await closedLoop(jobs, 16, Date.now() + 120_000, async (i) => {
      await sys.buyer.submitJob(NOOP_SPEC, { idempotencyKey: `stage-${i}` });
    });
    if (r.failed) throw new Error(`${r.failed} submits failed: ${r.firstError}`);
    await sleep(500);
  });
  await stage('place + deliver + start', async () => {
    for (const n of nodes) await sys.operator.uncordonNode(n.id);
    if (!(await waitUntil(async () => !(await unfinished('queued,assigned')), Date.now() + 120_000, 50))) throw new Error('not all started');
    await sleep(500);
  });
  await stage('result + settle', async () => {
    for (const e of sys.executors) e.release();
    if (!(await waitUntil(async () => !(await unfinished('queued,assigned,running')), Date.now() + 120_000, 50))) throw new Error('not all finished');
    await sleep(500);
  });
} finally {
  await sys.stop();
  await pg?.stop();
}
