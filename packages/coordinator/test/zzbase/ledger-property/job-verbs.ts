/**
 * The job commands against a Store: submit (with its hold), cancel, priced assignment (taking stake),
 * start, finish, heartbeat, chunk settlement and lease expiry (with its abandoned-lease fees). Sequential runs also check each verb's
 * exact answer against the model; concurrent batches accept any expected refusal.
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, type AttemptRecord, mulDiv, type Placement, stakeToLock } from '@gpux/core';
import { sampleJobSpec } from '@gpux/testing';
import type { Verbs } from './commands.js';
import { checkLeasePenalty } from './lease-fees.js';
import { finishReport, paymentFor, refusable } from './store-helpers.js';
import { at, BUYERS, byId, DIGEST, decide, node } from './world.js';

type JobVerb = 'submit' | 'cancel' | 'assign' | 'start' | 'finish' | 'heartbeat' | 'settle' | 'expire';

export const jobVerbs: Verbs<JobVerb> = {
  async submit(run, store, cmd) {
    const now = run.now;
    const id = run.id('job');
    const buyerId = at(BUYERS, cmd.buyer) as string;
    const spec = sampleJobSpec({
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
    const r = await refusable(store.submitJob({ id, buyerId, spec, idempotencyKey, now, payment }), ['INSUFFICIENT_FUNDS']);
    if (walletBefore !== undefined) {
      assert.equal(r.ok, existing !== undefined || walletBefore >= payment.held, `submit ${id}: a wallet of ${walletBefore} and a hold of ${payment.held}`);
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
    run.jobs.set(id, { id, buyerId, payment, billChecked: false });
    if (keyed !== undefined) run.keys.set(keyed, id);
    return `${id} held ${payment.held} ${cmd.asset}`;
  },

  async cancel(run, store, cmd) {
    const now = run.now;
    const open = byId((await store.listJobs({ states: ['queued', 'assigned', 'running'], limit: 500 })).items);
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
    const queued = byId((await store.listJobs({ states: ['queued'], limit: 500 })).items);
    const job = at(queued, cmd.job);
    if (!job?.payment) return 'skip';
    const p = job.payment;
    const price = mulDiv(p.capPerUnitHour, cmd.pricePct, 100);
    // Multiple 0 stands for no lock (stakeToLock itself takes 1..1000).
    const stakeLock = cmd.lockMultiple === 0 ? 0 : stakeToLock(price, p.units, job.spec.timeoutSeconds, cmd.lockMultiple);
    const worldSize = job.spec.nodes ?? 1;
    const members = Array.from({ length: worldSize }, (_, rank) => node(cmd.node + rank));
    const attemptId = run.id('att');
    const ids = members.map((_, rank) => (rank === 0 ? attemptId : `${attemptId}-r${rank}`));
    const peers = members.map((m, rank) => ({ rank, nodeId: m.id }));
    const placements: Placement[] = members.map((m, rank) => ({
      jobId: job.id,
      attemptId: ids[rank] as string,
      nodeId: m.id,
      gpuIndices: Array.from({ length: p.units }, (_, i) => i),
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
    const assigned = byId((await store.listActiveAttempts()).filter((a) => a.state === 'assigned'));
    const a = at(assigned, cmd.attempt);
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
      a = at(byId(await store.listActiveAttempts()), cmd.attempt);
    }
    if (!a) return 'skip';
    const report = finishReport(a.id, a.nodeId, cmd.outcome, 1_000, now);
    const r = await refusable(store.finishAttempt(report, decide), ['CONFLICT']);
    if (run.sequential) {
      const active = a.state === 'assigned' || a.state === 'running';
      // A late 'cancelled' for an attempt the coordinator cancelled (gang stop, cancel grace) repeats it whatever its digest.
      const repeat = a.state === report.outcome && (a.outputDigest === DIGEST || a.state === 'cancelled');
      assert.equal(r.ok, active || repeat, `finish ${a.id} (${a.state}) as ${report.outcome}`);
      if (r.ok) assert.equal(r.value.duplicate, !active);
    }
    return r.ok ? `${a.id} ${cmd.outcome} → job ${r.value.job.state}${r.value.duplicate ? ' (duplicate)' : ''}` : `${a.id} ${r.code}`;
  },

  async heartbeat(run, store, cmd) {
    const n = node(cmd.node);
    await store.heartbeat(n.id, run.now, run.now + cmd.leaseMs);
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
