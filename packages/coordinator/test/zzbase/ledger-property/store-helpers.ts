/**
 * Store calls shared by the model-driven runs and the targeted races: expected refusals, test funds, a
 * staked node, a job's payment, a node's result report, and the ledger's global balance check.
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, type FinishAttemptInput, GpuxError, holdFor, type JobPaymentRecord, type LedgerTotals, move, type Store } from '@gpux/core';
import type { Asset, JobSpec } from '@gpux/protocol';
import { sampleAdvertisement } from '@gpux/testing';
import type { Outcome } from './commands.js';
import { DIGEST, T0 } from './world.js';

/** The verb's result, or its refusal when the code is one this verb may answer; anything else propagates. */
export async function refusable<T>(p: Promise<T>, codes: readonly string[]): Promise<{ ok: true; value: T } | { ok: false; code: string }> {
  try {
    return { ok: true, value: await p };
  } catch (err) {
    if (err instanceof GpuxError && codes.includes(err.code)) return { ok: false, code: err.code };
    throw err;
  }
}

/** Mint test funds into a party's wallet. */
export async function fund(store: Store, party: string, amount: number, asset: Asset = 'usdc', at = T0): Promise<void> {
  const postings = move(asset, ACCOUNTS.world, [{ account: ACCOUNTS.wallet(party), amount }]);
  await store.postTransfer({ kind: 'mint', postings, at, memo: `test funds for ${party}` });
}

export async function registerNode(store: Store, id: string, providerId: string, now = T0): Promise<void> {
  // Each node its own GPU uuids: a uuid is registered once across providers.
  const gpus = sampleAdvertisement().gpus.map((g) => ({ ...g, uuid: `GPU-${id}-${g.index}` }));
  await store.registerNode({ id, publicKey: `key-${id}`, advertisement: sampleAdvertisement({ gpus }), now, providerId });
}

/** A node whose provider bonded `amount` of USDC stake on it (minted to the provider first). */
export async function stakedNode(store: Store, id: string, providerId: string, amount: number): Promise<void> {
  await registerNode(store, id, providerId);
  await fund(store, providerId, amount);
  await store.addStake({ nodeId: id, providerId, amount, now: T0 });
}

/** What a submission holds: the cap for every unit of the spec, for its whole timeout. */
export function paymentFor(spec: JobSpec, asset: Asset, capPerUnitHour: number, units: number): JobPaymentRecord {
  return { asset, capPerUnitHour, units, held: holdFor(spec, capPerUnitHour) };
}

/** A node's result report; 'crashed' is a failure without an exit code (the executor died). */
export function finishReport(attemptId: string, nodeId: string, outcome: Outcome, durationMs: number, now: number): FinishAttemptInput {
  return {
    attemptId,
    nodeId,
    outcome: outcome === 'crashed' ? 'failed' : outcome,
    exitCode: outcome === 'succeeded' ? 0 : outcome === 'failed' ? 3 : null,
    error: outcome === 'succeeded' ? null : outcome === 'crashed' ? 'executor failed' : `${outcome} on purpose`,
    outputDigest: DIGEST,
    outputs: [],
    metrics: { durationMs },
    now,
  };
}

/** Per asset, every account but the world sums to what was minted, and none is below zero. */
export function assertBalanced(totals: readonly LedgerTotals[]): void {
  for (const t of totals) {
    assert.equal(t.inside, t.minted, `${t.asset}: every account but the world sums to what was minted`);
    assert.equal(t.negativeAccounts, 0, `${t.asset}: no account below zero`);
  }
}
