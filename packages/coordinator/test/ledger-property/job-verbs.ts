/**
 * The job commands against a Store: submit (with its hold), cancel, priced assignment (taking stake),
 * start, finish, heartbeat, chunk settlement and lease expiry (with its abandoned-lease fees). Sequential runs also check each verb's
 * exact answer against the model; concurrent batches accept any expected refusal.
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, type AttemptRecord, GpuxError, mulDiv, type Placement, stakeToLock } from '@gpux/core';
import { sampleJobSpec } from '@gpux/testing';
import type { Verbs } from './commands.js';
import { checkLeasePenalty } from './lease-fees.js';
import { finishReport, paymentFor, refusable } from './store-helpers.js';
import { at, BUYERS, byId, DIGEST, decide, NODES, node, SYSTEM_AUDIT, type TestNode, WINDOW_MS, wrongDigest } from './world.js';

/** The k-th (by id) or, for k < 0, the newest (created last). */
function pick<T extends { id: string; createdAt: number }>(xs: T[], k: number): T | undefined {
  if (k >= 0) return at(byId(xs), k);
  return [...xs].sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).at(-1);
}

type JobVerb = 'submit' | 'cancel' | 'assign' | 'start' | 'finish' | 'heartbeat' | 'settle' | 'expire';


let gpuSerial = 0;
/** GPU indices no earlier placement used: assign refuses a GPU an active attempt holds, and this model is about money, not room. */
function freshGpus(n: number): number[] {
  const base = gpuSerial;
  gpuSerial += n;
  return Array.from({ length: n }, (_, i) => base + i);
}
export const jobVerbs: Verbs<JobVerb> = {
  async submit(run, store, cmd) {
    const now = run.now;
    const id = run.id('job');
    const buyerId = at(BUYERS, cmd.buyer) as string;
    // Verification (issue 11) is for single-node jobs; replicas: 2 holds a second run's escrow up front.
    const verified = cmd.verify !== 'none' && cmd.nodes === 1;
    const spec = sampleJobSpec({
      ...(verified && cmd.verify === 'replicas' && { replicas: 2 }),
      ...(verified && cmd.verify === 'nondeterministic' && { deterministic: false }),
      timeoutSeconds: cmd.timeout,
      maxRetries: cmd.retries,
      resources: { gpu: { count: cmd.gpus } },
      ...(cmd.nodes > 1 && { nodes: cmd.nodes }),
      asset: cmd.asset,
      maxPricePerGpuHour: cmd.cap,
    });
    const payment = paymentFor(spec, cmd.asset, cmd.cap, cmd.gpus);
    const idempotencyKey = cmd.key === null ? null : `key-${cmd.key}`;
    const keyed = idempotencyKey === null ? undefined : `${buyerId}|${idempotencyKey}`;
    const existing = keyed === undefined ? undefined : run.keys.get(keyed);
    const walletBefore = run.sequential ? await store.getBalance(ACCOUNTS.wallet(buyerId), cmd.asset) : undefined;
    const verify = verified ? { holdPay: true, verifyTerms: { disputeWindowMs: WINDOW_MS, auditFloorBps: 1000 } } : {};
    const r = await refusable(store.submitJob({ id, buyerId, spec, idempotencyKey, now, payment, ...verify }), ['INSUFFICIENT_FUNDS']);
    const need = payment.held * (spec.replicas === 2 ? 2 : 1);
    if (walletBefore !== undefined) {
      assert.equal(r.ok, existing !== undefined || walletBefore >= need, `submit ${id}: a wallet of ${walletBefore} and holds of ${need}`);
    }
    if (!r.ok || !r.value.created) {
      assert.equal(await store.getJob(id), undefined, `submission ${id} wrote no job of its own`);
      assert.deepEqual(await store.jobTransfers(id), [], `submission ${id} held nothing`);
    }
    if (!r.ok) return `${id} ${r.code}`;
    if (!r.value.created) {
      // The job the key made before (in a concurrent batch possibly one the model learns of a moment later).
      if (run.sequential) assert.equal(r.value.job.id, existing, `submit ${id} with ${idempotencyKey}`);
      return `${id} is ${r.value.job.id} (same key)`;
    }
    if (keyed !== undefined) assert.equal(run.keys.get(keyed), undefined, `${idempotencyKey} made a job before, yet submit ${id} created another`);
    assert.deepEqual(r.value.job.payment, payment);
    run.jobs.set(id, { id, buyerId, payment, billChecked: false, kind: 'buyer', rootId: id, holdPay: verified, funder: ACCOUNTS.wallet(buyerId), holdTotal: payment.held });
    if (spec.replicas === 2) run.replicaHolds.set(`${id}-replica`, { rootId: id, held: payment.held });
    if (keyed !== undefined) run.keys.set(keyed, id);
    if (verified) run.count(`submit ${cmd.verify}`);
    return `${id} held ${need} ${cmd.asset}${verified ? ` (${cmd.verify})` : ''}`;
  },

  async cancel(run, store, cmd) {
    const now = run.now;
    // The coordinator's own check runs belong to no buyer that could cancel them.
    const open = byId((await store.listJobs({ states: ['queued', 'assigned', 'running'], limit: 500 })).items).filter((j) => j.buyerId !== SYSTEM_AUDIT);
    const job = at(open, cmd.job);
    if (!job) return 'skip';
    const r = await refusable(store.requestCancel(job.id, now, cmd.graceMs), ['JOB_FINISHED']);
    if (run.sequential) assert.equal(r.ok, true, `cancel ${job.id}`);
    // Its active attempts are charged no further than the first cancel + its grace (concurrent cancels: the latest bound).
    const stop = now + cmd.graceMs;
    const seen = run.cancelStops.get(job.id);
    if (r.ok && (seen === undefined || (!run.sequential && stop > seen))) run.cancelStops.set(job.id, stop);
    return r.ok ? `${job.id} → ${r.value.job.state}` : `${job.id} ${r.code}`;
  },

  async assign(run, store, cmd) {
    const now = run.now;
    const job = pick((await store.listJobs({ states: ['queued'], limit: 500 })).items, cmd.job);
    if (!job?.payment) return 'skip';
    const p = job.payment;
    const price = mulDiv(p.capPerUnitHour, cmd.pricePct, 100);
    // Multiple 0 stands for no lock (stakeToLock itself takes 1..1000).
    const stakeLock = cmd.lockMultiple === 0 ? 0 : stakeToLock(price, p.units, job.spec.timeoutSeconds, cmd.lockMultiple);
    const worldSize = job.spec.nodes ?? 1;
    // As the scheduler places: never on a banned node, and a check run never with an operator it avoids
    // (the first such node from cmd.node on).
    const avoid = new Set(job.avoidProviderIds ?? []);
    const placeable = (n: TestNode) => !run.banned.has(n.id) && !avoid.has(n.providerId);
    const first = Array.from({ length: NODES.length }, (_, i) => cmd.node + i).find((k) => placeable(node(k)));
    if (first === undefined) return 'skip';
    const members = Array.from({ length: worldSize }, (_, rank) => node(first + rank));
    if (!members.every(placeable)) return 'skip';
    const attemptId = run.id('att');
    const ids = members.map((_, rank) => (rank === 0 ? attemptId : `${attemptId}-r${rank}`));
    const peers = members.map((m, rank) => ({ rank, nodeId: m.id }));
    const placements: Placement[] = members.map((m, rank) => ({
      jobId: job.id,
      attemptId: ids[rank] as string,
      nodeId: m.id,
      gpuIndices: freshGpus(p.units),
      leaseExpiresAt: now + cmd.leaseMs,
      price: { asset: p.asset, pricePerUnitHour: price, units: p.units, feeBps: cmd.feeBps, providerId: m.providerId, stakeLock, marketClass: 'h100-80gb' },
      ...(worldSize > 1 && { gang: { leaderAttemptId: attemptId, rank, worldSize, peers } }),
    }));
    // Sequential: the store takes the placement exactly when every member's node has the free stake.
    let fits: boolean | undefined;
    if (run.sequential && !job.cancelRequested) {
      const stakes = await store.listStakes();
      const need = new Map<string, number>();
      for (const m of members) run.add(need, m.id, stakeLock);
      fits = [...need].every(([nodeId, n]) => {
        const s = stakes.find((x) => x.nodeId === nodeId);
        return (s?.staked ?? 0) - (s?.locked ?? 0) >= n;
      });
    }
    const written = await store.assign(placements, now);
    if (fits !== undefined) {
      assert.equal(written.length, fits ? worldSize : 0, `assign ${job.id}: free stake ${fits ? 'covers' : 'does not cover'} ${stakeLock} per member`);
    }
    for (const a of written) {
      assert.deepEqual(a.price, placements.find((x) => x.attemptId === a.id)?.price);
      run.attempts.push(a.id);
    }
    return written.length > 0 ? `${job.id} → ${ids.join('+')} at ${price}, lock ${stakeLock}` : `${job.id} not taken: stake short of ${stakeLock}`;
  },

  async start(run, store, cmd) {
    const now = run.now;
    const a = pick((await store.listActiveAttempts()).filter((x) => x.state === 'assigned'), cmd.attempt);
    if (!a) return 'skip';
    const r = await refusable(store.startAttempt(a.id, a.nodeId, now), ['CONFLICT']);
    if (run.sequential) assert.equal(r.ok, true, `start ${a.id}`);
    return r.ok ? a.id : `${a.id} ${r.code}`;
  },

  /** An active attempt's result or, with `ended`, a late report for any attempt (a duplicate or a conflict). */
  async finish(run, store, cmd) {
    const now = run.now;
    let a: AttemptRecord | undefined;
    if (cmd.ended) {
      const id = at(run.attempts, cmd.attempt);
      a = id === undefined ? undefined : await store.getAttempt(id);
    } else {
      a = pick(await store.listActiveAttempts(), cmd.attempt);
    }
    if (!a) return 'skip';
    // A committed result (exit code and digest) other than the job's one true result (DIGEST, exit 0) is
    // wrong: a lie, or a failure with an exit code (each wrong result its own digest: liars never agree).
    // Any run may lie, a dispute's referees too: a dispute needs 2 agreeing referees (verify-checks.ts).
    const outcome = cmd.outcome;
    const committed = outcome === 'succeeded' || outcome === 'failed';
    const wrong = committed && (cmd.lie || outcome === 'failed');
    const report = finishReport(a.id, a.nodeId, outcome, 1_000, now, { digest: wrong ? wrongDigest(a.id) : DIGEST, draw: cmd.draw });
    const active = a.state === 'assigned' || a.state === 'running';
    const r = await refusable(store.finishAttempt(report, decide), ['CONFLICT']);
    if (run.sequential) {
      // A signed result repeats only with the very same commitment; a late 'cancelled' for an attempt the
      // coordinator cancelled (gang stop, cancel grace) repeats it whatever its digest.
      const repeat = a.commitment
        ? a.commitment === report.commitment && a.state === report.outcome
        : a.state === report.outcome && (a.outputDigest === report.outputDigest || a.state === 'cancelled');
      assert.equal(r.ok, active || repeat, `finish ${a.id} (${a.state}) as ${report.outcome}`);
      if (r.ok) assert.equal(r.value.duplicate, !active);
    }
    // (A check run written in this concurrent batch may not be in the model yet: ask the store.)
    if (r.ok && !r.value.duplicate && wrong && (run.jobs.get(a.jobId)?.holdPay ?? (await store.getJob(a.jobId))?.holdPay)) {
      run.lies.add(a.id);
      run.liars.add(a.nodeId);
    }
    return r.ok ? `${a.id} ${outcome}${wrong ? ' (wrong)' : ''} → job ${r.value.job.state}${r.value.duplicate ? ' (duplicate)' : ''}` : `${a.id} ${r.code}`;
  },

  async heartbeat(run, store, cmd) {
    const n = node(cmd.node);
    try {
      await store.heartbeat(n.id, run.now, run.now + cmd.leaseMs);
    } catch (err) {
      // A banned node's heartbeat is refused once it has gone offline (its agent would be told to enroll again).
      if (err instanceof GpuxError && err.code === 'UNAUTHORIZED' && run.banned.has(n.id)) return `${n.id} ${err.code}`;
      throw err;
    }
    return n.id;
  },

  async settle(run, store, cmd) {
    return `${await store.settleRunning(run.now, cmd.minIntervalMs, cmd.limit)} settled`;
  },

  async expire(run, store, cmd) {
    const lost = await store.expireLeases(run.now, decide, cmd.limit);
    for (const l of lost) {
      run.count(`expired as ${l.outcome ?? 'lost'}`);
      if ((l.outcome ?? 'lost') === 'lost') await checkLeasePenalty(run, store, l);
    }
    return lost.map((l) => `${l.attemptId} ${l.outcome ?? 'lost'} → ${l.jobState}`).join(', ') || 'none';
  },
};
