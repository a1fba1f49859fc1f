/**
 * The scheduling pass: refresh the index (ended gang members, node track records and auto-cordons), claim
 * queued jobs fairly (a share per buyer and priority class), place them with the scheduler, write the
 * placements in one store transaction, wake the chosen nodes' work long-polls. Runs every
 * schedulePassIntervalMs and soon after a kick; one at a time. Claimed jobs carry their spec's scheduling view
 * (no command, args, env, labels or inputs: the store never reads those for a pass), so a pass costs the same
 * whatever the size of the queued specs (bench/scheduling-pass).
 */
import { newId } from '@gpux/core';
import type { Needs } from '../runtime.js';
import { pricePlacements } from '../services/market.js';
import { PlacementWaits } from '../services/placement-waits.js';
import { resyncIndex } from '../cluster/follow.js';
import { PeriodicTask } from './periodic.js';
import { refreshNodeStats, refreshReputations, releaseEndedGangs } from './capacity.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type SchedulingDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'delivery' | 'index' | 'logger' | 'logs' | 'metrics' | 'nodeKeys' | 'offlineNodes' | 'predictions' | 'random' | 'scheduler' | 'scheduling' | 'store' | 'work'>;

export class SchedulingLoop {
  /** The last pass left runnable jobs unplaced: new capacity (an idle node's heartbeat) deserves a pass. */
  backlog = false;
  /** Node track records changed at or after this time are read at the next pass. */
  statsSince = 0;
  /** Node reputations changed at or after this time are read at the next pass. */
  reputationSince = 0;
  /** The fair claim starts at this buyer, rotating, so more buyers than a window holds all get turns. */
  private fromBuyer = '';
  /** Rebuild the index from the store before the next pass (cluster/follow.ts resyncIndex). */
  private resyncDue = false;
  private readonly task: PeriodicTask;
  /** Waits from submission to first placement, for the quote's expected wait (services/quote.ts). */
  readonly waits = new PlacementWaits();

  constructor(private rt: SchedulingDeps) {
    this.task = new PeriodicTask(
      { leads: () => true, logger: rt.logger }, // started only where it leads (cluster/replica.ts)
      { what: 'scheduling pass', everyMs: rt.config.schedulePassIntervalMs, pass: () => this.pass() },
    );
  }

  /** Start passing; `leader`: the runtime whose store is fenced by this replica's lease (issue 14). */
  start(leader?: SchedulingDeps): void {
    if (this.task.isStarted) return;
    if (leader) this.rt = leader;
    this.task.start();
    this.task.kick();
  }

  stop(): Promise<void> {
    return this.task.stop();
  }

  /** Rebuild the index between two passes (never during one: its placements are reserved before they commit). */
  resync(): void {
    this.resyncDue = true;
    this.kick();
  }

  /** Ask for a pass soon, here or (off the leader) on the leader. Kicks arriving together (a burst of submits) share one pass. */
  kick(): void {
    if (this.task.isStarted) this.task.kick();
    else this.rt.bus.publish({ t: 'kick' });
  }

  /** Passes until one finds nothing more to do; if one is running, once more after it. */
  run(): Promise<void> {
    return this.task.run();
  }

  /**
   * One pass. Returns true when it placed anything: more may be waiting (the fair claim's window is not
   * always full when work is queued, so a short window says nothing), and a pass that finds nothing to
   * place ends the run.
   */
  async pass(): Promise<boolean> {
    const { store, config, clock, random, scheduler, metrics, logger } = this.rt;
    if (this.resyncDue) {
      this.resyncDue = false;
      await resyncIndex(this.rt);
    }
    const { index } = this.rt;
    metrics.schedulePasses.inc();
    await releaseEndedGangs(this.rt);
    this.statsSince = await refreshNodeStats(this.rt, this.statsSince);
    this.reputationSince = await refreshReputations(this.rt, this.reputationSince);
    const jobs = await store.claimQueuedFair(clock.now(), config.scheduleBatchSize, this.fromBuyer);
    // Read after the claim: a job submitted while the pass read the store must not get an attempt older than itself.
    const now = clock.now();
    if (jobs.length === 0) {
      this.backlog = false;
      return false;
    }
    // Start the next claim at the last buyer served (ids may not carry a NUL for "just after" on PostgreSQL).
    this.fromBuyer = jobs.at(-1)?.buyerId ?? '';
    // Issue 17: reservations, backfill and the order by predicted work (services/run-predictions.ts forPass).
    const predictions = config.predictionsSchedule ? this.rt.predictions : null;
    const predict = predictions ? await predictions.forPass(index) : undefined;
    const proposed = scheduler.place(jobs, index, { now, leaseTtlMs: config.leaseTtlMs, newAttemptId: () => newId('att', now, random), random, ...(predict ? { predict } : {}) });
    const byId = new Map(jobs.map((j) => [j.id, j]));
    const { priced: placements, dropped } = pricePlacements(this.rt, byId, proposed);
    for (const p of dropped) index.release(p.attemptId);
    this.backlog = placements.length < jobs.length;
    if (placements.length === 0) return false;
    let written: Set<string>;
    try {
      written = new Set((await store.assign(placements, now)).map((a) => a.id));
    } catch (err) {
      for (const p of placements) index.release(p.attemptId);
      throw err;
    }
    const nodes = new Set<string>();
    for (const p of placements) {
      // A job cancelled (or placed elsewhere) since claimQueued is skipped by the store: free its room.
      if (!written.has(p.attemptId)) index.release(p.attemptId);
      else {
        nodes.add(p.nodeId);
        const job = byId.get(p.jobId);
        // A gang's members share one job: its wait is noted once (rank 0), and only a first placement is a wait from submission.
        if (job && job.attemptCount === 0 && (p.gang === undefined || p.gang.rank === 0)) this.waits.note(now, now - job.createdAt);
        if (job) predictions?.noteAttempt(p.attemptId, job, now);
        logger.debug({ jobId: p.jobId, attemptId: p.attemptId, nodeId: p.nodeId, gpus: p.gpuIndices }, 'job assigned');
      }
    }
    metrics.placements.inc(written.size);
    for (const n of nodes) this.rt.work.wake(n);
    return written.size > 0;
  }
}
