/**
 * The replay: a discrete-event simulation of the coordinator's scheduling in simulated time. Pods arrive
 * (time-compressed), a scheduling pass runs shortly after anything changes (the coordinator's kick),
 * placed jobs run for their trace duration, and chosen nodes fail for good at random times: their attempts
 * are lost and the jobs requeue with the coordinator's backoff (core lifecycle), away from the node. The
 * same run is made with the placement engine (fair claim, scores, node records) and with FIFO first-fit.
 */
import {
  applyOutcome,
  applyReputationEvent,
  CapacityIndex,
  claimWindow,
  DEFAULT_NODE_STATS_POLICY,
  decideAfterAttempt,
  type RetryPolicy,
  emptyNodeStats,
  emptyReputation,
  FirstFitScheduler,
  fitOnNode,
  isDue,
  type JobRecord,
  type NodeRecord,
  type NodeStats,
  PlacementEngine,
  type PlacementPredictor,
  type Random,
  type ReputationState,
  type RunTimeEstimate,
  requirementsOf,
  type Scheduler,
} from '@gpux/core';
import { EventHeap } from './heap.js';

export interface SimJob {
  rec: JobRecord;
  arrival: number;
  duration: number;
  gpus: number;
  firstStart: number | null;
  end: number | null;
  /** The running attempt: its node, GPUs and predicted end (with predictions; Infinity when unknown). */
  attempt: { id: string; nodeId: string; gpuIndices?: number[]; endsAt?: number } | null;
}

/** Issue 17: run-time predictions the engine is given (ctx.predict), told of every run that finished. */
export interface SimPredictions {
  estimate(job: SimJob, t: number): RunTimeEstimate | undefined;
  finished(job: SimJob, gpuClass: string | null, t: number): void;
}

export interface SimOptions {
  policy: 'engine' | 'fifo-first-fit';
  window: number;
  /** A pass runs this long after the first change since the last pass (the coordinator's kick). */
  passDelayMs: number;
  agingMs: number;
  /** The coordinator's retry backoff after a lost attempt, in simulated ms (scenario.ts coordinatorTimes: compressed like run times). */
  retryPolicy: RetryPolicy;
  /** Node id → failure time (sim ms). */
  failures: ReadonlyMap<string, number>;
  random: Random;
  /**
   * After every pass, check each job the pass left waiting against every node with the first-fit test:
   * a job some node could take now is a miss (the instrument of issue 18). Scans nodes: slow, off by default.
   */
  countMisses?: boolean;
  /** Experiments: another scheduler in place of the policy's, and the window claim (default: fair for the engine, FIFO otherwise). */
  scheduler?: Scheduler;
  claim?: 'fair' | 'fifo';
  /** Issue 17 (learned.ts): the window in this policy's order, told of every run that finished (and on which GPU model). */
  order?: { window(queued: readonly SimJob[], t: number, size: number): JobRecord[]; finished(job: SimJob, gpuClass: string | null, t: number): void };
  /** Issue 17: predictions for the engine (reservations and backfill, order by predicted run time, node stability). */
  predictions?: SimPredictions;
}

export interface SimResult {
  policy: string;
  jobs: number;
  completed: number;
  /** Jobs that never completed although some node of the fleet could take them. */
  lost: number;
  /** Jobs no node of the fleet fits at all (a model absent, more CPU or memory than any node of the model has): never placed, not "lost". */
  unplaceable: number;
  lostAttempts: number;
  /** With countMisses: job-passes in which a job stayed queued although a node could take it then. */
  misses: number;
  queueDelayMs: Float64Array;
  jctMs: Float64Array;
  /** Queue delay (ms) of the completed jobs, by priority class and for jobs of 4 GPUs or more. */
  delayByClass: Record<string, Float64Array>;
  /** Time-weighted allocated GPUs / GPUs on live nodes, from the first to the last arrival. */
  gpuAllocation: number;
  /** The same, over the time some job was waiting for a node: how well the waiting work was packed. */
  gpuAllocationWhileWaiting: number;
  /** Simulated ms during which some job was waiting. */
  waitingMs: number;
  passes: number;
  placements: number;
  schedulerMs: number;
  simEndMs: number;
  autoCordoned: number;
  /** With predictions (engine): jobs given a reservation over all passes, and placements on reserved nodes. */
  reserved: number;
  backfilled: number;
}

type Ev = { t: number; seq?: number } & ({ kind: 'arrive'; job: SimJob } | { kind: 'finish'; job: SimJob; attemptId: string } | { kind: 'fail'; nodeId: string } | { kind: 'pass' });

export function simulate(nodes: readonly NodeRecord[], jobs: readonly SimJob[], o: SimOptions): SimResult {
  const index = new CapacityIndex();
  for (const n of nodes) index.upsertNode(n);
  const scheduler: Scheduler = o.scheduler ?? (o.policy === 'engine' ? new PlacementEngine({ agingMs: o.agingMs, random: o.random }) : new FirstFitScheduler());
  const stats = new Map<string, NodeStats>();
  // The reliability score is the reputation (as the coordinator keeps it): a finished job is a completion, a lost one a lost lease.
  const reputations = new Map<string, ReputationState>();
  const policy = DEFAULT_NODE_STATS_POLICY;
  const heap = new EventHeap<Ev>();
  for (const j of jobs) heap.push({ t: j.arrival, kind: 'arrive', job: j });
  for (const [nodeId, t] of o.failures) heap.push({ t, kind: 'fail', nodeId });
  const byAttempt = new Map<string, SimJob>();
  const onNode = new Map<string, Set<SimJob>>();
  let queued: SimJob[] = [];
  let passPending = false;
  let ids = 0;
  let aliveGpus = nodes.reduce((s, n) => s + n.advertisement.gpus.length, 0);
  let busyGpus = 0;
  const lastArrival = Math.max(...jobs.map((j) => j.arrival));
  const firstArrival = Math.min(...jobs.map((j) => j.arrival));
  let lastT = firstArrival;
  let busyArea = 0;
  let aliveArea = 0;
  let waitBusy = 0;
  let waitAlive = 0;
  /** Jobs queued and not placed by the last pass (or arrived since). */
  let waiting = 0;
  // Jobs that fit no node of the whole fleet, idle (first-fit's test, memoized by shape).
  const fitsFleet = new Map<string, boolean>();
  const unplaceable = new Set<SimJob>();
  for (const j of jobs) {
    const shape = requirementsOf(j.rec).shape;
    let ok = fitsFleet.get(shape);
    if (ok === undefined) {
      ok = false;
      for (const n of index.allNodes()) if (fitOnNode(j.rec, n)) {
        ok = true;
        break;
      }
      fitsFleet.set(shape, ok);
    }
    if (!ok) unplaceable.add(j);
  }
  const r: SimResult = { policy: o.policy, jobs: jobs.length, completed: 0, lost: 0, unplaceable: unplaceable.size, misses: 0, lostAttempts: 0, queueDelayMs: new Float64Array(0), jctMs: new Float64Array(0), delayByClass: {}, gpuAllocation: 0, gpuAllocationWhileWaiting: 0, waitingMs: 0, passes: 0, placements: 0, schedulerMs: 0, simEndMs: 0, autoCordoned: 0, reserved: 0, backfilled: 0 };
  const kick = (t: number) => {
    if (passPending) return;
    passPending = true;
    heap.push({ t: t + o.passDelayMs, kind: 'pass' });
  };
  const record = (nodeId: string, kind: 'success' | 'failure', t: number) => {
    const res = applyOutcome(stats.get(nodeId) ?? emptyNodeStats(t), { kind }, t, policy);
    stats.set(nodeId, res.stats);
    index.setStats(nodeId, res.stats);
    const rep = applyReputationEvent(reputations.get(nodeId) ?? emptyReputation(t), kind === 'success' ? 'completed' : 'lease-lost', t);
    reputations.set(nodeId, rep);
    index.setReputation(nodeId, rep);
    if (res.cordonReason && index.get(nodeId)?.adminState === 'active') {
      index.setAdminState(nodeId, 'cordoned', res.cordonReason);
      r.autoCordoned++;
    }
  };
  let fifoSorted = true;
  const pass = (t: number) => {
    passPending = false;
    queued = queued.filter((j) => j.rec.state === 'queued');
    let window: JobRecord[];
    if (o.order) window = o.order.window(queued, t, o.window);
    else if ((o.claim ?? (o.policy === 'engine' ? 'fair' : 'fifo')) === 'fair') window = claimWindow(queued.map((j) => j.rec), t, o.window);
    else {
      if (!fifoSorted) {
        queued.sort((a, b) => a.rec.createdAt - b.rec.createdAt);
        fifoSorted = true;
      }
      window = [];
      for (const j of queued) {
        if (window.length >= o.window) break;
        if (isDue(j.rec, t)) window.push(j.rec);
      }
    }
    if (window.length === 0) return;
    r.passes++;
    const byJob = new Map(queued.map((j) => [j.rec.id, j]));
    const estimates = new Map<SimJob, RunTimeEstimate | undefined>();
    const estimate = (job: SimJob) => {
      if (!o.predictions) return undefined;
      if (!estimates.has(job)) estimates.set(job, o.predictions.estimate(job, t));
      return estimates.get(job);
    };
    const predict: PlacementPredictor | undefined = o.predictions && {
      runTime: (rec) => {
        const job = byJob.get(rec.id);
        return job ? estimate(job) : undefined;
      },
      running: (nodeId) => runningOn(onNode.get(nodeId)),
    };
    const s = performance.now();
    const placed = scheduler.place(window, index, { now: t, leaseTtlMs: 0, newAttemptId: () => `a${++ids}`, random: o.random, ...(predict ? { predict } : {}) });
    r.schedulerMs += performance.now() - s;
    if (predict && scheduler instanceof PlacementEngine) {
      r.reserved += scheduler.lastPass.reserved ?? 0;
      r.backfilled += scheduler.lastPass.backfilled ?? 0;
    }
    for (const p of placed) {
      const job = byJob.get(p.jobId) as SimJob;
      job.rec.state = 'running';
      job.rec.attemptCount++;
      job.attempt = { id: p.attemptId, nodeId: p.nodeId };
      if (o.predictions) {
        const e = estimate(job);
        job.attempt.gpuIndices = p.gpuIndices;
        job.attempt.endsAt = e && Number.isFinite(e.medianMs) ? t + e.medianMs : Number.POSITIVE_INFINITY;
      }
      job.firstStart ??= t;
      byAttempt.set(p.attemptId, job);
      const set = onNode.get(p.nodeId) ?? new Set<SimJob>();
      onNode.set(p.nodeId, set);
      set.add(job);
      busyGpus += p.gpuIndices.length;
      heap.push({ t: t + job.duration, kind: 'finish', job, attemptId: p.attemptId });
      r.placements++;
    }
    if (o.countMisses) {
      const verdict = new Map<string, boolean>();
      for (const rec of window) {
        if (rec.state !== 'queued') continue;
        const shape = requirementsOf(rec).shape;
        let fits = verdict.get(shape);
        if (fits === undefined) {
          fits = false;
          for (const n of index.allNodes()) if (fitOnNode(rec, n)) {
            fits = true;
            break;
          }
          verdict.set(shape, fits);
        }
        if (fits) r.misses++;
      }
    }
    // As the coordinator does: a pass that placed something runs another at once.
    if (placed.length > 0) {
      passPending = true;
      heap.push({ t, kind: 'pass' });
    }
  };
  for (let e = heap.pop(); e; e = heap.pop()) {
    const t = e.t;
    if (t > lastT && lastT < lastArrival) {
      const until = Math.min(t, lastArrival);
      busyArea += busyGpus * (until - lastT);
      aliveArea += aliveGpus * (until - lastT);
    }
    // A job that arrived waits at least until the next pass; only time past the pass delay counts as waiting.
    if (t > lastT && waiting > 0) {
      waitBusy += busyGpus * (t - lastT);
      waitAlive += aliveGpus * (t - lastT);
      r.waitingMs += t - lastT;
    }
    lastT = t;
    if (e.kind === 'arrive') {
      queued.push(e.job);
      kick(t);
    } else if (e.kind === 'pass') {
      pass(t);
      waiting = queued.reduce((n, j) => n + (isDue(j.rec, t) && !unplaceable.has(j) ? 1 : 0), 0);
    }
    else if (e.kind === 'finish') {
      const job = e.job;
      if (job.attempt?.id !== e.attemptId) continue; // lost before it finished
      const res = index.release(e.attemptId);
      busyGpus -= res?.gpuIndices.length ?? 0;
      onNode.get(job.attempt.nodeId)?.delete(job);
      record(job.attempt.nodeId, 'success', t);
      o.order?.finished(job, index.get(job.attempt.nodeId)?.gpus[0]?.model ?? null, t);
      o.predictions?.finished(job, index.get(job.attempt.nodeId)?.gpus[0]?.model ?? null, t);
      job.attempt = null;
      job.rec.state = 'succeeded';
      job.end = t;
      r.completed++;
      kick(t);
    } else {
      const node = index.get(e.nodeId);
      if (!node) continue;
      index.setSchedulable(e.nodeId, false);
      aliveGpus -= node.gpus.length;
      for (const job of onNode.get(e.nodeId) ?? []) {
        const attemptId = job.attempt?.id as string;
        const res = index.release(attemptId);
        busyGpus -= res?.gpuIndices.length ?? 0;
        record(e.nodeId, 'failure', t);
        r.lostAttempts++;
        job.attempt = null;
        const next = decideAfterAttempt(job.rec, { outcome: 'lost', exitCode: null, error: null }, t, o.retryPolicy);
        job.rec.state = next.state;
        job.rec.runAfter = next.runAfter;
        if (next.avoidNode) job.rec.avoidNodeIds = [...job.rec.avoidNodeIds, e.nodeId];
        if (next.state === 'queued') {
          queued.push(job);
          fifoSorted = false;
          heap.push({ t: next.runAfter ?? t, kind: 'pass' });
        } else r.lost++;
      }
      onNode.delete(e.nodeId);
      kick(t);
    }
    r.simEndMs = t;
  }
  const done = jobs.filter((j) => j.end !== null);
  r.lost += jobs.filter((j) => j.end === null && j.rec.state !== 'failed' && !unplaceable.has(j)).length;
  r.queueDelayMs = Float64Array.from(done, (j) => (j.firstStart as number) - j.arrival);
  r.jctMs = Float64Array.from(done, (j) => (j.end as number) - j.arrival);
  const groups: Record<string, SimJob[]> = { high: [], normal: [], low: [], '4+ GPUs': [] };
  for (const j of done) {
    groups[j.rec.spec.priority ?? 'normal']?.push(j);
    if (j.gpus >= 4) groups['4+ GPUs']?.push(j);
  }
  for (const [k, list] of Object.entries(groups)) r.delayByClass[k] = Float64Array.from(list, (j) => (j.firstStart as number) - j.arrival);
  r.gpuAllocation = aliveArea > 0 ? busyArea / aliveArea : 0;
  r.gpuAllocationWhileWaiting = waitAlive > 0 ? waitBusy / waitAlive : 0;
  return r;
}

/** What runs on a node, as the engine's predictor reports it: GPUs, cores, memory and the predicted end. */
function* runningOn(jobs: Iterable<SimJob> | undefined): Generator<{ endsAt: number; gpuIndices: readonly number[]; cpu: number; memoryMb: number }> {
  for (const j of jobs ?? []) {
    const a = j.attempt;
    if (!a) continue;
    const req = requirementsOf(j.rec);
    yield { endsAt: a.endsAt ?? Number.POSITIVE_INFINITY, gpuIndices: a.gpuIndices ?? [], cpu: req.cpu, memoryMb: req.memoryMb };
  }
}
