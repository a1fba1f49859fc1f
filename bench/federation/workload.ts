/**
 * The federation bench's workload: a seeded schedule of one-GPU simulated jobs with Poisson arrivals, most of them
 * submitted to one region (the hot one) and the rest spread over the others, each by the region's own buyer; sent
 * on schedule whatever the system does (open loop), then read back from each home coordinator once all have ended.
 */
import { isPeerNodeId, seededRandom } from '@gpux/core';
import type { JobSpecInput } from '@gpux/protocol';
import type { LoopbackRegion } from './regions.js';

export interface WorkloadOptions {
  jobs: number;
  /** Mean arrival span: jobs ÷ this is the Poisson rate (jobs/s). */
  seconds: number;
  /** Share of jobs submitted to the first (hot) region. */
  skew: number;
  /** GPUX_SIM_SECONDS of every job: how long the simulated node "runs" it. */
  simSeconds: number;
  capPerGpuHour: number;
  timeoutSeconds: number;
  seed: number;
}

export interface Arrival {
  index: number;
  /** ms after the run's start. */
  atMs: number;
  /** Where it is submitted: its home. */
  region: string;
  /** constraints.region: the job must run there (a peer's name forwards it at once). */
  mustRunIn?: string;
}

/** The same schedule for the same options and region names: exponential gaps, then a region draw per job. */
export function schedule(o: WorkloadOptions, regions: string[]): Arrival[] {
  const rnd = seededRandom(o.seed);
  const rate = o.jobs / o.seconds;
  const [hot, ...rest] = regions;
  const out: Arrival[] = [];
  let t = 0;
  for (let index = 0; index < o.jobs; index++) {
    t += (-Math.log(1 - rnd.next()) / rate) * 1000;
    const u = rnd.next();
    const region = u < o.skew || rest.length === 0 ? (hot as string) : (rest[Math.min(rest.length - 1, Math.floor(((u - o.skew) / (1 - o.skew)) * rest.length))] as string);
    out.push({ index, atMs: Math.round(t), region });
  }
  return out;
}

/**
 * A one-GPU simulated job. It asks for a tenth of a CPU core: a simulated node advertises its host's cores, and the
 * default (1 core a job) would let a 2-core machine's node hold only two jobs whatever its GPUs.
 */
export function jobSpec(o: WorkloadOptions, index: number, mustRunIn?: string): JobSpecInput {
  return {
    name: `fed-${index}`,
    image: 'bench/sim',
    command: ['true'],
    resources: { gpu: { count: 1 }, cpuCores: 0.1 },
    env: { GPUX_SIM_SECONDS: String(o.simSeconds) },
    timeoutSeconds: o.timeoutSeconds,
    maxPricePerGpuHour: o.capPerGpuHour,
    ...(mustRunIn === undefined ? {} : { constraints: { region: mustRunIn } }),
  };
}

/** `jobs` arrivals `everyMs` apart, all submitted to `region`: the CPU probe's steady load. */
export function steady(jobs: number, everyMs: number, region: string, mustRunIn: string, firstIndex: number): Arrival[] {
  return Array.from({ length: jobs }, (_, i) => ({ index: firstIndex + i, atMs: Math.round(i * everyMs), region, mustRunIn }));
}

export interface JobOutcome {
  index: number;
  /** The region it was submitted to (its home). */
  home: string;
  id: string | null;
  submitError: string | null;
  state: string;
  /** Epoch ms just before the submit request left. */
  sentAt: number;
  /** Home's job.startedAt − sentAt; null if it never ran. */
  waitMs: number | null;
  /** Where the attempt that started ran: the home region's name, or the peer's it was forwarded to. */
  ranAt: string | null;
  forwarded: boolean;
  /** That attempt's creation (job.assigned, or job.forwarded at home) → running at home. */
  assignToRunMs: number | null;
  /** Attempts made, forwarded ones included. */
  attempts: number;
  forwardReason: string | null;
}

export interface RunTimes {
  /** Epoch ms of the first submit and when every job had ended (as the bench saw it). */
  startedAt: number;
  endedAt: number;
  timedOut: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const OPEN_STATES = 'queued,assigned,running';

/**
 * Submit every arrival on time, wait until no region has an open job of its buyer (or `deadline`), and read each
 * job back from its home.
 */
export async function runWorkload(o: WorkloadOptions, regions: LoopbackRegion[], arrivals: Arrival[], deadline: number): Promise<{ jobs: JobOutcome[]; times: RunTimes }> {
  const byName = new Map(regions.map((r) => [r.name, r]));
  const sent: Array<{ a: Arrival; sentAt: number; id: string | null; error: string | null }> = [];
  const t0 = Date.now();
  const submits = arrivals.map(async (a) => {
    await sleep(Math.max(0, t0 + a.atMs - Date.now()));
    const r = byName.get(a.region) as LoopbackRegion;
    const sentAt = Date.now();
    try {
      const { job } = await r.buyer.submitJob(jobSpec(o, a.index, a.mustRunIn), { idempotencyKey: `fed-${o.seed}-${a.index}` });
      sent.push({ a, sentAt, id: job.id, error: null });
    } catch (e) {
      sent.push({ a, sentAt, id: null, error: (e as Error).message });
    }
  });
  const allSent = Promise.all(submits);
  let submitted = false;
  allSent.then(() => {
    submitted = true;
  });
  let timedOut = false;
  for (;;) {
    await sleep(500);
    if (!submitted) continue;
    const open = await Promise.all(regions.map(async (r) => (await r.buyer.listJobs({ state: OPEN_STATES, limit: 1 })).jobs.length));
    if (open.every((n) => n === 0)) break;
    if (Date.now() > deadline) {
      timedOut = true;
      break;
    }
  }
  const endedAt = Date.now();
  await allSent;
  const jobs: JobOutcome[] = [];
  for (const s of sent.sort((x, y) => x.a.index - y.a.index)) jobs.push(await readBack(byName.get(s.a.region) as LoopbackRegion, s));
  return { jobs, times: { startedAt: t0, endedAt, timedOut } };
}

async function readBack(r: LoopbackRegion, s: { a: Arrival; sentAt: number; id: string | null; error: string | null }): Promise<JobOutcome> {
  const base = { index: s.a.index, home: r.name, id: s.id, submitError: s.error, sentAt: s.sentAt };
  if (s.id === null) return { ...base, state: 'not submitted', waitMs: null, ranAt: null, forwarded: false, assignToRunMs: null, attempts: 0, forwardReason: null };
  const { job, attempts, events } = await r.buyer.getJob(s.id, { eventsLimit: 100 });
  // The attempt that gave the job its startedAt: the first one that started.
  const ran = attempts.filter((x) => x.startedAt !== null).sort((x, y) => (x.startedAt as number) - (y.startedAt as number))[0];
  const forwarded = ran !== undefined && isPeerNodeId(ran.nodeId);
  const peerName = (nodeId: string) => r.peerNames.get(nodeId.slice('peer:'.length)) ?? nodeId;
  const reason = events.find((e) => e.type === 'job.forwarded')?.data.reason;
  return {
    ...base,
    state: job.state,
    waitMs: job.startedAt === null ? null : job.startedAt - s.sentAt,
    ranAt: ran === undefined ? null : forwarded ? peerName(ran.nodeId) : r.name,
    forwarded,
    assignToRunMs: ran === undefined ? null : (ran.startedAt as number) - ran.createdAt,
    attempts: attempts.length,
    forwardReason: typeof reason === 'string' ? reason : null,
  };
}
