/**
 * Issue 18 diagnostics: one variant and seed through both schedulers, the jobs the engine delayed most against
 * first-fit (same arrivals and failures), with their shape. `node --import tsx bench/replay/diag.ts VARIANT SEED [N]`.
 */
import { requirementsOf } from '@gpux/core';
import { buildFleet, seededRandom } from './fleet.js';
import { coordinatorTimes, failuresFor, jobsFor, type ScenarioOptions } from './scenario.js';
import { simulate } from './sim.js';
import { DEFAULT_NODE_FILE, DEFAULT_POD_FILE, readNodeList, readPodList } from './trace-csv.js';
import { isVariant, makeVariant } from './variants.js';

const [variant = 'default', seedArg = '1', topArg = '15'] = process.argv.slice(2);
if (!isVariant(variant)) throw new Error(`unknown variant ${variant}`);
const seed = Number(seedArg);
const rows = readNodeList(DEFAULT_NODE_FILE);
const pods = makeVariant(variant, readPodList(DEFAULT_POD_FILE), rows, seed);
const fleet = buildFleet(rows, undefined, [], seededRandom(seed), 0);
const o: ScenarioOptions = { name: 'burst', compression: 1000, load: 10_000, failFraction: Number(process.env.FAIL ?? 0.1), window: 1000, passDelayMs: 10, agingTraceS: 600, buyers: Number(process.env.BUYERS ?? 20), seed };
if (process.env.NOPRIO) for (const p of pods) p.qos = 'LS';
const probe = jobsFor(pods, o);
const first = Math.min(...probe.map((j) => j.arrival));
const last = Math.max(...probe.map((j) => j.arrival));
const failures = failuresFor(fleet, probe, o);
const run = (policy: 'engine' | 'fifo-first-fit') => {
  const jobs = jobsFor(pods, o);
  const r = simulate(fleet, jobs, { policy, window: o.window, passDelayMs: o.passDelayMs, ...coordinatorTimes(o), failures, random: seededRandom(seed + 2) });
  return { jobs, r };
};
const e = run('engine');
const f = run('fifo-first-fit');
const delay = (j: { firstStart: number | null; arrival: number }) => (j.firstStart === null ? Number.NaN : j.firstStart - j.arrival);
const n = e.jobs.length;
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
const de = e.jobs.map(delay);
const df = f.jobs.map(delay);
console.log(`${variant} seed ${seed}: mean E ${(sum(de.filter(Number.isFinite)) / n).toFixed(1)} F ${(sum(df.filter(Number.isFinite)) / n).toFixed(1)}`);
const idx = [...Array(n).keys()].sort((a, b) => (de[b] as number) - (de[a] as number));
const top = Number(topArg);
for (const i of idx.slice(0, top)) {
  const j = e.jobs[i];
  if (!j) continue;
  const req = requirementsOf(j.rec);
  console.log(`${j.rec.id} E ${de[i]} F ${df[i]} gpus ${req.gpuCount} cpu ${req.cpu} memGb ${(req.memoryMb / 1024).toFixed(1)} models ${j.rec.spec.resources.gpu.models?.join('|') ?? '-'} prio ${j.rec.spec.priority} dur ${j.duration} arr ${j.arrival}`);
}
// Contribution of the tail: how much of the mean the top jobs make.
for (const k of [1, 5, 20, 80]) {
  const se = sum(idx.slice(0, k).map((i) => de[i] as number)) / n;
  console.log(`top ${k} engine jobs add ${se.toFixed(2)} ms to the engine mean`);
}
const idxF = [...Array(n).keys()].sort((a, b) => (df[b] as number) - (df[a] as number));
for (const k of [1, 5, 20, 80]) console.log(`top ${k} FIFO jobs add ${(sum(idxF.slice(0, k).map((i) => df[i] as number)) / n).toFixed(2)} ms to the FIFO mean`);

// Delay by job kind: where the engine's total delay goes against first-fit's.
{
  const groups = new Map<string, { n: number; e: number; f: number; eTail: number; fTail: number }>();
  const pe = [...de].filter(Number.isFinite).sort((a, b) => a - b);
  const pf = [...df].filter(Number.isFinite).sort((a, b) => a - b);
  const p99e = pe[Math.ceil(0.99 * pe.length) - 1] as number;
  const p99f = pf[Math.ceil(0.99 * pf.length) - 1] as number;
  console.log(`p99 E ${p99e} F ${p99f}`);
  for (let i = 0; i < n; i++) {
    const j = e.jobs[i];
    if (!j) continue;
    const req = requirementsOf(j.rec);
    const g = req.gpuCount === 0 ? 'cpu' : req.gpuCount >= 8 ? '8' : req.gpuCount >= 4 ? '4-7' : req.gpuCount >= 2 ? '2-3' : '1';
    const k = `${g} ${j.rec.spec.resources.gpu.models ? 'models' : 'any'} ${j.rec.spec.priority}`;
    const x = groups.get(k) ?? { n: 0, e: 0, f: 0, eTail: 0, fTail: 0 };
    x.n++;
    x.e += Number.isFinite(de[i]) ? (de[i] as number) : 0;
    x.f += Number.isFinite(df[i]) ? (df[i] as number) : 0;
    if ((de[i] as number) >= p99e) x.eTail++;
    if ((df[i] as number) >= p99f) x.fTail++;
    groups.set(k, x);
  }
  for (const [k, x] of [...groups].sort((a, b) => b[1].e - b[1].f - (a[1].e - a[1].f)))
    console.log(`${k.padEnd(18)} jobs ${String(x.n).padStart(5)} sum E ${Math.round(x.e).toString().padStart(8)} F ${Math.round(x.f).toString().padStart(8)} mean E ${(x.e / x.n).toFixed(1)} F ${(x.f / x.n).toFixed(1)} at/above p99: E ${x.eTail} F ${x.fTail}`);
}

// Where the worst job could go: the nodes that fit it idle, and what each scheduler ran on them before it started.
const watch = process.env.WATCH ?? e.jobs[idx[0] as number]?.rec.id;
if (watch) {
  const { CapacityIndex, FirstFitScheduler, PlacementEngine, fitOnNode } = await import('@gpux/core');
  const idle = new CapacityIndex();
  for (const nd of fleet) idle.upsertNode(nd);
  const wj = e.jobs.find((j) => j.rec.id === watch);
  if (wj) {
    const homes = new Set<string>();
    for (const nd of idle.allNodes()) if (fitOnNode(wj.rec, nd)) homes.add(nd.nodeId);
    console.log(`\n${watch}: fits ${homes.size} nodes idle: ${[...homes].slice(0, 10).join(' ')}`);
    for (const policy of ['engine', 'fifo-first-fit'] as const) {
      const inner = policy === 'engine' ? new PlacementEngine({ ...coordinatorTimes(o), random: seededRandom(seed + 2) }) : new FirstFitScheduler();
      const jobs = jobsFor(pods, o);
      const byId = new Map(jobs.map((j) => [j.rec.id, j]));
      const log: string[] = [];
      const sched = {
        place: (w: Parameters<typeof inner.place>[0], index: Parameters<typeof inner.place>[1], ctx: Parameters<typeof inner.place>[2]) => {
          const inWindow = w.some((r) => r.id === watch);
          const out = inner.place(w, index, ctx);
          for (const p of out) {
            if (!homes.has(p.nodeId)) continue;
            const j = byId.get(p.jobId);
            const rq = j ? requirementsOf(j.rec) : undefined;
            log.push(`t ${ctx.now} ${p.jobId} on ${p.nodeId} gpus ${rq?.gpuCount} cpu ${rq?.cpu} models ${j?.rec.spec.resources.gpu.models?.join('|') ?? '-'} dur ${j?.duration} arr ${j?.arrival} (watched in window: ${inWindow})`);
          }
          return out;
        },
      };
      simulate(fleet, jobs, { policy, scheduler: sched, window: o.window, passDelayMs: o.passDelayMs, ...coordinatorTimes(o), failures, random: seededRandom(seed + 2) });
      console.log(`${policy}: ${log.length} placements on those nodes; failures there: ${[...homes].map((h) => failures.get(h)).join(',')}`);
      for (const l of log.slice(0, 25)) console.log(`  ${l}`);
    }
  }
}

// Allocation by phase: busy GPU·ms before the burst and during it (to the last arrival), and what failures cut.
if (process.env.ALLOC) {
  const { FirstFitScheduler, PlacementEngine } = await import('@gpux/core');
  const burstAt = Number(process.env.ALLOC);
  for (const policy of ['engine', 'fifo-first-fit'] as const) {
    const inner = policy === 'engine' ? new PlacementEngine({ ...coordinatorTimes(o), random: seededRandom(seed + 2) }) : new FirstFitScheduler();
    const jobs = jobsFor(pods, o);
    const byId = new Map(jobs.map((j) => [j.rec.id, j]));
    const spans: Array<{ t: number; end: number; cut: number; gpus: number }> = [];
    const sched = {
      place: (w: Parameters<typeof inner.place>[0], index: Parameters<typeof inner.place>[1], ctx: Parameters<typeof inner.place>[2]) => {
        const out = inner.place(w, index, ctx);
        for (const p of out) {
          const j = byId.get(p.jobId);
          if (!j) continue;
          const full = ctx.now + j.duration;
          const fail = failures.get(p.nodeId) ?? Number.POSITIVE_INFINITY;
          spans.push({ t: ctx.now, end: Math.min(full, fail), cut: fail < full ? fail : Number.NaN, gpus: p.gpuIndices.length });
        }
        return out;
      },
    };
    simulate(fleet, jobs, { policy, scheduler: sched, window: o.window, passDelayMs: o.passDelayMs, ...coordinatorTimes(o), failures, random: seededRandom(seed + 2) });
    const area = (a: number, b: number) => spans.reduce((s, x) => s + x.gpus * Math.max(0, Math.min(b, x.end) - Math.max(a, x.t)), 0);
    const cutArea = (a: number, b: number) => spans.reduce((s, x) => s + (Number.isNaN(x.cut) ? 0 : x.gpus * Math.max(0, b - Math.max(a, x.cut))), 0);
    const cutJobs = spans.filter((x) => !Number.isNaN(x.cut) && x.cut < last);
    console.log(`${policy}: busy GPU·ms before ${burstAt}: ${area(first, burstAt)}, burst: ${area(burstAt, last)}; cut by failures (GPU·ms to the last arrival): before ${cutArea(first, burstAt)} burst ${cutArea(burstAt, last)}; attempts cut ${cutJobs.length} (GPUs ${cutJobs.reduce((s, x) => s + x.gpus, 0)})`);
  }
}

// Timeline: per 10 ms, after the last pass in it: jobs left waiting (by class) and GPUs free on schedulable nodes.
if (process.env.TIMELINE) {
  const { FirstFitScheduler, PlacementEngine } = await import('@gpux/core');
  const step = Number(process.env.TIMELINE);
  const lines = new Map<number, string[]>();
  for (const policy of ['engine', 'fifo-first-fit'] as const) {
    const inner = policy === 'engine' ? new PlacementEngine({ ...coordinatorTimes(o), random: seededRandom(seed + 2) }) : new FirstFitScheduler();
    const jobs = jobsFor(pods, o);
    const snap = new Map<number, string>();
    const flexOn = new Map<string, number>();
    const sched = {
      place: (w: Parameters<typeof inner.place>[0], index: Parameters<typeof inner.place>[1], ctx: Parameters<typeof inner.place>[2]) => {
        const out = inner.place(w, index, ctx);
        const placed = new Set(out.map((p) => p.jobId));
        const left = { high: 0, normal: 0, low: 0, models: 0, big: 0 };
        for (const r of w) {
          if (placed.has(r.id)) continue;
          left[r.spec.priority ?? 'normal']++;
          if (r.spec.resources.gpu.models) left.models++;
          if (r.spec.resources.gpu.count >= 4) left.big++;
        }
        let free = 0;
        let freeCores = 0;
        for (const p of index.allPools()) free += p.freeGpus;
        for (const nd of index.allNodes()) if (nd.schedulable && nd.freeGpuCount > 0) freeCores += nd.freeCpu;
        const wrec = new Map(w.map((r) => [r.id, r]));
        for (const p of out) {
          const nd = index.get(p.nodeId);
          const model = nd?.labels.model ?? '?';
          const flex = !wrec.get(p.jobId)?.spec.resources.gpu.models;
          if (p.gpuIndices.length > 0) flexOn.set(`${model}${flex ? '' : '*'}`, (flexOn.get(`${model}${flex ? '' : '*'}`) ?? 0) + p.gpuIndices.length);
        }
        const pools = [...index.allPools()].map((p) => `${p.cls.model.slice(-7)} ${p.freeGpus}/${p.gpus}`).join(' ');
        const flexs = [...flexOn].sort().map(([k, v]) => `${k}:${v}`).join(' ');
        snap.set(Math.floor(ctx.now / step), `${policy === 'engine' ? 'E' : 'F'} t${ctx.now} win ${w.length} left n${left.normal}/l${left.low}/h${left.high} (models ${left.models}, 4+ ${left.big}) freeGPUs ${free} freeCores/GPU-node ${Math.round(freeCores)}${process.env.POOLS ? `\n   pools ${pools}\n   placed GPUs (model, * = constrained jobs) ${flexs}` : ''}`);
        return out;
      },
    };
    simulate(fleet, jobs, { policy, scheduler: sched, window: o.window, passDelayMs: o.passDelayMs, ...coordinatorTimes(o), failures, random: seededRandom(seed + 2) });
    for (const [k, v] of snap) lines.set(k, [...(lines.get(k) ?? []), v]);
  }
  for (const k of [...lines.keys()].sort((a, b) => a - b)) if (k * step >= 1000 && k * step < 1500) console.log((lines.get(k) as string[]).join(process.env.POOLS ? '\n' : '   |   '));
}
