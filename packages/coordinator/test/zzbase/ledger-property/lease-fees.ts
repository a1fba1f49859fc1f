/**
 * Abandoned leases in the model: every attempt the expiry pass loses is one more loss of its node. In
 * sequential runs the store's penalty row and fee transfer are checked against the model's count: the
 * first loss in 7 days free, then one hour of the attempt's price (what the provider's wallet could pay,
 * the rest unpaid), more than 3 suspend. Concurrent batches lose attempts in an order the model cannot
 * know; their fees are checked in the jobs' bills (bill.ts) and the money totals (checks.ts).
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, FREE_LEASE_LOSSES, LEASE_LOSS_WINDOW_MS, type LostAttempt, lostJobPrice, MAX_LEASE_LOSSES, type Store } from '@gpux/core';
import type { Cmd } from './commands.js';
import type { Run } from './model.js';

export async function checkLeasePenalty(run: Run, store: Store, l: LostAttempt): Promise<void> {
  const times = (run.leaseLosses.get(l.nodeId) ?? []).filter((t) => run.now - t < LEASE_LOSS_WINDOW_MS);
  times.push(run.now);
  run.leaseLosses.set(l.nodeId, times);
  if (!run.sequential) return;
  const what = `lost attempt ${l.attemptId} on ${l.nodeId} (loss ${times.length} in 7 days)`;
  const a = await store.getAttempt(l.attemptId);
  const row = (await store.listPenalties(l.nodeId, { limit: 1_000 })).items.find((p) => p.kind === 'lease-abandoned' && p.attemptId === l.attemptId);
  assert.ok(a && row, `${what}: a lease-abandoned penalty row`);
  const due = times.length > FREE_LEASE_LOSSES ? lostJobPrice(a.price) : 0;
  assert.equal(row.evidence.lossesIn7Days, times.length, `${what}: the store counted the model's losses`);
  assert.equal(row.fee, due, `${what}: the fee due`);
  assert.equal(row.suspended, times.length > MAX_LEASE_LOSSES, `${what}: suspended after ${MAX_LEASE_LOSSES}`);
  assert.equal(row.slashed, 0, `${what}: stake never slashed`);
  const t = (await store.jobTransfers(l.jobId)).find((x) => x.kind === 'penalty.fee' && x.attemptId === l.attemptId);
  const providerLeg = a.price ? t?.postings.find((p) => p.account === ACCOUNTS.wallet(a.price?.providerId ?? '')) : undefined;
  const paid = providerLeg ? -providerLeg.amount : 0;
  assert.equal(row.transferId, t?.id ?? null, `${what}: the row names its transfer`);
  assert.deepEqual([row.evidence.paid, Number(row.evidence.paid) + Number(row.evidence.unpaid)], [paid, due], `${what}: paid + unpaid = the fee`);
  // Less than the fee only when the wallet ran dry.
  if (providerLeg && paid < due) assert.equal(providerLeg.balanceAfter, 0, `${what}: a partial fee empties the wallet`);
  if (due > 0) run.count(paid === due ? 'lease fee paid in full' : 'lease fee capped at the wallet');
  if (row.suspended) run.count('node suspended for lost leases');
}

/** Funding for LEASE_LOSS_RUN: every party 20 units of each asset. */
export const LEASE_LOSS_FUNDING: readonly number[] = Array.from({ length: 10 }, () => 20_000_000);

/**
 * A fixed run the random ones rarely reach: node-0 loses the leases of five jobs in a row (the first free,
 * then a fee each, the fourth and fifth suspended), the last with its provider's wallet paid out to a few
 * units so its fee is capped.
 */
export const LEASE_LOSS_RUN: readonly Cmd[] = [
  { t: 'stake', node: 0, pct: 50, wrongOwner: false },
  ...Array.from({ length: 5 }, (): Cmd => ({ t: 'submit', buyer: 0, asset: 'usdc', cap: 1_000_000, gpus: 1, timeout: 600, retries: 0, nodes: 1, key: null })),
  ...Array.from({ length: 5 }, (_, i): Cmd[] => [
    ...(i === 4 ? [{ t: 'payout', who: 3, asset: 'usdc', pct: 99 } as Cmd] : []),
    { t: 'assign', job: 0, node: 0, pricePct: 50, feeBps: 500, lockMultiple: 1, leaseMs: 5_000 },
    { t: 'start', attempt: 0 },
    { t: 'advance', ms: 10_000 },
    { t: 'expire', limit: 10 },
  ]).flat(),
];
