/**
 * A digest of the placement bench's decisions: the same fleet, jobs and runs as `npm run bench:placement`
 * (engine per decision, and the whole pass), with a hash over every placement (job, node, GPUs) in order, so a
 * change meant to leave every decision as it was can show it did. Prints the rate beside the hash.
 *
 *   node --import tsx bench/placement/digest.ts [--nodes 50000] [--jobs 100000] [--no-pass] [--seed 1]
 */
import { type JobRecord, PlacementEngine, type Placement } from '@gpux/core';
import { buildFleet, seededRandom } from '../replay/fleet.js';
import { buyerPicker, jobRecord, specOf } from '../replay/jobs.js';
import { parseFlags, percentile } from '../replay/report-util.js';
import { DEFAULT_NODE_FILE, DEFAULT_POD_FILE, readNodeList, readPodList } from '../replay/trace-csv.js';
import { type Decider, runPlacement } from './run.js';

const FLAGS = {
  nodes: 'fleet sizes, comma-separated (default 50000)',
  jobs: 'queued jobs (default 100000)',
  seed: 'random seed (default 1)',
  'no-pass': 'skip the whole-pass run',
  help: 'this list',
};

/** FNV-1a over the placements' text, 32 bits twice (order matters: the run is one sequence of decisions). */
class PlacementHash {
  private h1 = 0x811c9dc5;
  private h2 = 0x01000193;
  add(p: Placement): void {
    const text = `${p.jobId}>${p.nodeId}:${p.gpuIndices.join(',')};`;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      this.h1 = Math.imul(this.h1 ^ c, 0x01000193) >>> 0;
      this.h2 = Math.imul(this.h2 ^ c, 0x5bd1e995) >>> 0;
    }
  }
  hex(): string {
    return `${this.h1.toString(16).padStart(8, '0')}${this.h2.toString(16).padStart(8, '0')}`;
  }
}

/** The engine with every placement it returns kept in `log` (hashed after the run: the timed calls only push). */
function logged(engine: PlacementEngine, log: Placement[]): Decider {
  return {
    placeJob: (job, index, ctx) => {
      const out = engine.placeJob(job, index, ctx);
      for (const p of out) log.push(p);
      return out;
    },
    place: (jobs, index, ctx) => {
      const out = engine.place(jobs, index, ctx);
      for (const p of out) log.push(p);
      return out;
    },
  };
}

function hashOf(log: readonly Placement[]): string {
  const h = new PlacementHash();
  for (const p of log) h.add(p);
  return h.hex();
}

function main(): void {
  const f = parseFlags(process.argv.slice(2), FLAGS);
  if (f.help) {
    console.log(Object.entries(FLAGS).map(([k, v]) => `--${k}  ${v}`).join('\n'));
    return;
  }
  const str = (k: string, d: string) => (typeof f[k] === 'string' ? (f[k] as string) : d);
  const sizes = str('nodes', '50000').split(',').map(Number);
  const jobCount = Number(str('jobs', '100000'));
  const seed = Number(str('seed', '1'));
  // As bench/placement/main.ts builds them, draw for draw.
  const nodeRows = readNodeList(DEFAULT_NODE_FILE);
  const pods = readPodList(DEFAULT_POD_FILE);
  const now = 1_700_000_000_000;
  const random = seededRandom(seed);
  const pickBuyer = buyerPicker(50, random);
  const specs = pods.map(specOf);
  const jobs: JobRecord[] = Array.from({ length: jobCount }, (_, i) =>
    jobRecord(`job-${i}`, specs[Math.floor(random.next() * specs.length)] as JobRecord['spec'], pickBuyer(), now - (jobCount - i)),
  );
  const regions = Array.from({ length: 4 }, (_, i) => `region-${i}`);
  const opts = { window: 1000, targetUtil: 0.85, maxJobs: jobs.length, budgetMs: Number.POSITIVE_INFINITY, now };
  for (const size of sizes) {
    const fleet = buildFleet(nodeRows, size, regions, seededRandom(seed + size), now);
    const log: Placement[] = [];
    const e = runPlacement(fleet, jobs, logged(new PlacementEngine({ maxVisits: 512 }), log), opts, seededRandom(seed));
    const rate = Math.round((e.placements / e.decisionMs) * 1000);
    const [p50, p99] = [50, 99].map((q) => percentile(e.latenciesUs, q).toFixed(1));
    console.log(`${size} nodes, placeJob: ${e.placements} placed of ${e.decisions} decisions, ${rate}/s, p50 ${p50} µs, p99 ${p99} µs, hash ${hashOf(log)}`);
    if (f['no-pass'] === true) continue;
    const passLog: Placement[] = [];
    const p = runPlacement(fleet, jobs, logged(new PlacementEngine({ maxVisits: 512 }), passLog), { ...opts, wholePass: true }, seededRandom(seed));
    console.log(`${size} nodes, whole pass: ${p.placements} placed, ${Math.round((p.placements / p.decisionMs) * 1000)}/s, hash ${hashOf(passLog)}`);
  }
}

main();
