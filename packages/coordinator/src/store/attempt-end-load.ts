/**
 * The snapshot of an attempt's end (core attempt-end/snapshot.ts), read inside the transaction that ends
 * it, in the lock order every path follows: the job row, then attempt rows (the ending attempt is already
 * locked by the caller, then its gang siblings), then the job's escrow, then fee carry rows, then the wallets
 * (the buyer's for a top-up, the provider's for an abandoned lease's fee; in account order), then the node's
 * rows (read unlocked). The treasury's balance row comes last, when the plan's transfers post (ledger.ts), and
 * an audit the end opens reads it after that (verification.ts treasuryCanFund). Only what the core's
 * `attemptEndNeeds` asks for is read in the second round.
 *
 * An abandoned lease's earlier losses are read after the provider's wallet is locked: two ends of the same
 * provider's leases then count each other (PostgreSQL reads each statement's committed rows). Unpriced
 * losses take no wallet lock and may, ending at the same instant, count one loss less; locking the node row
 * instead would invert the heartbeat's node-then-attempts order.
 */
import {
  ACCOUNTS,
  type AttemptEndBasis,
  type AttemptEndCause,
  type AttemptEndPolicy,
  type AttemptEndSnapshot,
  attemptEndNeeds,
  drivesJob,
  emptyNodeStats,
  isPeerNodeId,
  LEASE_LOSS_WINDOW_MS,
  type NodeFacts,
} from '@gpux/core';
import type { Asset } from '@gpux/protocol';
import type { Kysely, Selectable } from 'kysely';
import { attemptFactsFromRow } from './attempt-end-rows.js';
import type { StoreContext } from './context.js';
import { selectJobRow } from './jobs.js';
import { balanceIn } from './ledger.js';
import { readExpectationIn, readNodeRecordsIn, readNodeStatsIn } from './node-stats.js';
import { type AttemptRow, type JobRow, jobFromRow } from './rows.js';
import type { Database, NodeReputationTable } from './schema.js';
import { lockFeeCarriesIn } from './settlement.js';
import { activeSiblingsIn } from './transition.js';

export async function loadAttemptEndIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  q: { row: AttemptRow; jobRow?: JobRow; cause: AttemptEndCause; now: number; policy: AttemptEndPolicy },
): Promise<{ snapshot: AttemptEndSnapshot; reputation?: Selectable<NodeReputationTable> | null }> {
  const jobRow = q.jobRow ?? (await selectJobRow(trx, ctx, q.row.job_id, true));
  if (!jobRow) throw new Error(`invariant: attempt ${q.row.id} has no job ${q.row.job_id}`);
  const job = jobFromRow(jobRow);
  const attempt = attemptFactsFromRow(q.row);
  const gangLeader = attempt.gangLeader;
  const siblingRows = gangLeader !== null && drivesJob(job, attempt) ? await activeSiblingsIn(trx, ctx, { id: attempt.id, jobId: job.id, gangLeader }) : [];
  const siblings = siblingRows.map(attemptFactsFromRow);
  // The escrow in every asset the job's money can move in: none without payment or prices (no query).
  const assets = new Set<Asset>();
  if (job.payment) assets.add(job.payment.asset);
  for (const x of [attempt, ...siblings]) if (x.price) assets.add(x.price.asset);
  const escrow: Partial<Record<Asset, number>> = {};
  for (const asset of [...assets].sort()) escrow[asset] = await balanceIn(trx, ctx, ACCOUNTS.escrow(job.id), asset, true);
  const basis: AttemptEndBasis = { now: q.now, attempt, cause: q.cause, job, siblings, escrow };
  if (q.cause.kind === 'lease-expired') basis.node = await readNodeFactsIn(trx, attempt.nodeId);
  const needs = attemptEndNeeds(basis, q.policy);
  const carries = await lockFeeCarriesIn(trx, needs.carries);
  const snapshot: AttemptEndSnapshot = { ...basis, carries };
  const wallets = await lockWalletsIn(trx, ctx, [
    ...(needs.wallet ? [{ account: ACCOUNTS.wallet(job.buyerId), asset: needs.wallet }] : []),
    ...(needs.providerWallet ? [{ account: ACCOUNTS.wallet(needs.providerWallet.providerId), asset: needs.providerWallet.asset }] : []),
  ]);
  if (needs.wallet) snapshot.wallet = wallets.get(walletKey(ACCOUNTS.wallet(job.buyerId), needs.wallet)) as number;
  if (needs.providerWallet) snapshot.providerWallet = wallets.get(walletKey(ACCOUNTS.wallet(needs.providerWallet.providerId), needs.providerWallet.asset)) as number;
  if (needs.leaseLosses) snapshot.leaseLosses = await leaseLossesIn(trx, attempt.nodeId, q.now);
  // A forwarded attempt's peer:<id> has no track record here (the peer keeps its nodes' own): an empty one to plan
  // with, and endAttemptIn writes nothing for it.
  const peer = isPeerNodeId(attempt.nodeId);
  // SQLite reads the node's reputation row with its record: the plan's reputation event then needs no read of its own.
  const records = needs.nodeStats && !peer && !ctx.q.forUpdate ? await readNodeRecordsIn(trx, attempt.nodeId, q.now) : undefined;
  if (needs.nodeStats) snapshot.nodeStats = peer ? emptyNodeStats(q.now) : (records?.stats ?? (await readNodeStatsIn(trx, attempt.nodeId, q.now)));
  if (needs.expectation) snapshot.expectation = peer ? null : await readExpectationIn(trx, job, attempt.nodeId, attempt.gpuIndices);
  return records ? { snapshot, reputation: records.reputation } : { snapshot };
}

const walletKey = (account: string, asset: Asset) => `${asset}\u0000${account}`;

/** Lock and read wallet balance rows in (asset, account) order, the order postTransferIn locks in. */
async function lockWalletsIn(trx: Kysely<Database>, ctx: StoreContext, wallets: readonly { account: string; asset: Asset }[]): Promise<Map<string, number>> {
  const keys = [...new Set(wallets.map((w) => walletKey(w.account, w.asset)))].sort();
  const out = new Map<string, number>();
  for (const k of keys) {
    const w = wallets.find((x) => walletKey(x.account, x.asset) === k) as { account: string; asset: Asset };
    out.set(k, await balanceIn(trx, ctx, w.account, w.asset, true));
  }
  return out;
}

/**
 * Is the node removed or banned (the coordinator ended its leases), and when did it last heartbeat? Null for a node
 * with no row, a forwarded attempt's peer:<id> among them: its lost lease is no node's abandoned lease.
 */
async function readNodeFactsIn(trx: Kysely<Database>, nodeId: string): Promise<NodeFacts | null> {
  if (isPeerNodeId(nodeId)) return null;
  const row = await trx.selectFrom('nodes').select(['removed_at', 'banned_at', 'last_heartbeat_at']).where('id', '=', nodeId).executeTakeFirst();
  if (!row) return null;
  const removed = row.removed_at !== null || (row.banned_at !== null && row.banned_at !== undefined);
  return { removed, lastHeartbeatAt: Number(row.last_heartbeat_at) };
}

/** Times of the node's lease-abandoned penalties in the window before `now`. */
async function leaseLossesIn(trx: Kysely<Database>, nodeId: string, now: number): Promise<number[]> {
  const rows = await trx
    .selectFrom('penalties')
    .select('at')
    .where('node_id', '=', nodeId)
    .where('kind', '=', 'lease-abandoned')
    .where('at', '>', now - LEASE_LOSS_WINDOW_MS)
    .where('at', '<=', now)
    .orderBy('at')
    .execute();
  return rows.map((r) => Number(r.at));
}
