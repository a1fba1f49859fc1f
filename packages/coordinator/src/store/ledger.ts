/**
 * The ledger primitive: post one balanced transfer inside the caller's transaction. Balances live in
 * ledger_balances and move by an upsert that returns the new balance, so "no account but the world below
 * zero" is checked on the row the transaction holds (row-locked on PostgreSQL; SQLite's write transaction
 * is exclusive). Balance rows are locked in (asset, account) order with the treasury's last, so two transfers
 * never lock in opposite orders and the row every fee moves is held only from its posting to the commit (a
 * reader that locks it, treasuryCanFund, comes after any wallet too). A refused transfer throws
 * INSUFFICIENT_FUNDS and the caller's transaction rolls back whole.
 *
 * No balance passes MAX_AMOUNT (2^53 − 1 minor units), and the world no lower than −MAX_AMOUNT: as every
 * other account is ≥ 0 and they sum to −world, no balance, wallet or ledger total can pass 2^53 either.
 * A transfer that would (only a deposit or mint can) is REQUEST_INVALID with the limit. The clearing accounts
 * (issue 15) may go below zero too, bounded at −MAX_AMOUNT like the world (in practice far above it: a peer's
 * credit line, GPUX_PEER_CREDIT, bounds what it may owe).
 */
import { ACCOUNTS, amountFromDb, assertBalanced, GpuxError, MAX_AMOUNT, mayGoNegative, type NewTransfer, newId, type Posting, type PostingRecord, type TransferRecord } from '@gpux/core';
import { type Asset, formatAmount } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import { cryptoRandom } from '../random.js';
import type { StoreContext } from './context.js';
import type { Database } from './schema.js';
import { countTreasuryFlowsIn } from './treasury-flows.js';

/** Sum postings per (account, asset), drop zeros, order for locking. */
function normalize(postings: readonly Posting[]): Posting[] {
  const sums = new Map<string, Posting>();
  for (const p of postings) {
    const key = `${p.asset}\u0000${p.account}`;
    const prev = sums.get(key);
    sums.set(key, { account: p.account, asset: p.asset, amount: (prev?.amount ?? 0) + p.amount });
  }
  return [...sums.entries()]
    .filter(([, p]) => p.amount !== 0)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, p]) => p);
}

export function insufficientFunds(account: string, asset: Asset, available: number, needed: number): GpuxError {
  return new GpuxError(
    'INSUFFICIENT_FUNDS',
    `insufficient funds in ${account}: needs ${formatAmount(needed, asset)}, has ${formatAmount(available, asset)} available (short ${formatAmount(needed - available, asset)})`,
  );
}

/**
 * A balance would pass MAX_AMOUNT, or one that may go negative (the world, a clearing account) −MAX_AMOUNT: for the
 * world, the network would hold more than MAX_AMOUNT; for a clearing account, the peer would owe more.
 */
export function amountLimit(account: string, asset: Asset, before: number, amount: number): GpuxError {
  const below = amount < 0 && mayGoNegative(account);
  const where = account === ACCOUNTS.world ? `the ${asset} in the whole network` : below ? `what is owed on ${account}` : `the balance of ${account}`;
  const room = Math.max(0, below ? MAX_AMOUNT + before : MAX_AMOUNT - before);
  return new GpuxError(
    'REQUEST_INVALID',
    `${where} would pass the largest amount, ${formatAmount(MAX_AMOUNT, asset)} (2^53 − 1 minor units): at most ${formatAmount(room, asset)} more fits`,
    { problems: [{ path: 'amount', message: `${Math.abs(amount)} minor units is too much: at most ${room} more fits` }] },
  );
}

/** The balance of one account (0 when it never had a posting); locks the row on PostgreSQL when `lock`. */
export async function balanceIn(trx: Kysely<Database>, ctx: StoreContext, account: string, asset: Asset, lock = false): Promise<number> {
  const row = await trx
    .selectFrom('ledger_balances')
    .select('balance')
    .where('account', '=', account)
    .where('asset', '=', asset)
    .$if(lock && ctx.q.forUpdate, (qb) => qb.forUpdate())
    .executeTakeFirst();
  return row ? amountFromDb(row.balance, `balance of ${account}`) : 0;
}

/** Post `t` in the caller's transaction. Throws INSUFFICIENT_FUNDS (the caller rolls back) or on an unbalanced transfer. */
export async function postTransferIn(trx: Kysely<Database>, t: NewTransfer): Promise<TransferRecord> {
  const [record] = await postTransfersIn(trx, [t]);
  if (!record) throw new Error('invariant: a posted transfer has no record');
  return record;
}

const balanceKey = (p: { account: string; asset: string }) => `${p.asset}\u0000${p.account}`;

/** The order balance rows are locked in: (asset, account), the treasury's rows after every other. */
function lockOrder(a: Posting, b: Posting): number {
  const ta = a.account === ACCOUNTS.treasury ? 1 : 0;
  const tb = b.account === ACCOUNTS.treasury ? 1 : 0;
  if (ta !== tb) return ta - tb;
  const ka = balanceKey(a);
  const kb = balanceKey(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/**
 * Post `transfers` in the caller's transaction as if one after another, in three statements whatever their
 * number (one balance upsert, one insert of the transfers, one of the postings): each posting's balance_after
 * and every refusal are those of posting them in order, computed back from the upsert's final balances. The
 * balance rows are locked in (asset, account) order across the whole batch.
 */
export async function postTransfersIn(trx: Kysely<Database>, transfers: readonly NewTransfer[]): Promise<TransferRecord[]> {
  if (transfers.length === 0) return [];
  const each = transfers.map((t) => {
    assertBalanced(t.postings);
    return normalize(t.postings);
  });
  // Net per (asset, account), zero nets kept: every touched account gets its row, as posting one by one would.
  const net = new Map<string, Posting>();
  for (const p of each.flat()) {
    const key = balanceKey(p);
    net.set(key, { account: p.account, asset: p.asset, amount: (net.get(key)?.amount ?? 0) + p.amount });
  }
  const balances = new Map<string, number>();
  if (net.size > 0) {
    const rows = await trx
      .insertInto('ledger_balances')
      .values([...net.values()].sort(lockOrder).map((p) => ({ account: p.account, asset: p.asset, balance: p.amount })))
      .onConflict((oc) => oc.columns(['account', 'asset']).doUpdateSet((eb) => ({ balance: eb('ledger_balances.balance', '+', eb.ref('excluded.balance')) })))
      .returning(['account', 'asset', 'balance'])
      .execute();
    // The balance before the batch, then walked forward posting by posting.
    for (const r of rows) balances.set(balanceKey(r), Number(r.balance) - (net.get(balanceKey(r))?.amount ?? 0));
  }
  const applied = each.map((postings) =>
    postings.map((p): PostingRecord => {
      const before = balances.get(balanceKey(p));
      if (before === undefined) throw new Error(`invariant: no balance row returned for ${p.account} (${p.asset})`);
      const after = before + p.amount;
      if (after < 0 && !mayGoNegative(p.account)) throw insufficientFunds(p.account, p.asset, before, -p.amount);
      // A driver may read a sum beyond 2^53 inexactly, but never as within it.
      if (after > MAX_AMOUNT || after < -MAX_AMOUNT) throw amountLimit(p.account, p.asset, before, p.amount);
      balances.set(balanceKey(p), after);
      return { ...p, balanceAfter: after };
    }),
  );
  // The audit budget's running totals (treasury-flows.ts), in this transaction, after the treasury's row moved.
  for (const [i, t] of transfers.entries()) await countTreasuryFlowsIn(trx, t.kind, each[i] ?? []);
  const records = transfers.map((t) => ({
    id: newId('tx', t.at, cryptoRandom),
    kind: t.kind,
    at: t.at,
    memo: t.memo,
    jobId: t.jobId ?? null,
    attemptId: t.attemptId ?? null,
    nodeId: t.nodeId ?? null,
    reference: t.reference ?? null,
  }));
  // Rows go in the transfers' order, so their seqs follow it as when posted one by one.
  const heads = await trx
    .insertInto('ledger_transfers')
    .values(records.map(({ jobId, attemptId, nodeId, ...same }) => ({ ...same, job_id: jobId, attempt_id: attemptId, node_id: nodeId })))
    .returning(['id', 'seq'])
    .execute();
  const seqOf = new Map(heads.map((h) => [h.id, Number(h.seq)]));
  const out = records.map((record, i): TransferRecord => {
    const seq = seqOf.get(record.id);
    if (seq === undefined) throw new Error(`invariant: transfer ${record.id} has no seq`);
    return { ...record, seq, postings: applied[i] ?? [] };
  });
  const postingRows = out.flatMap((r) => r.postings.map((p) => ({ transfer_seq: r.seq, account: p.account, asset: p.asset, amount: p.amount, balance_after: p.balanceAfter })));
  if (postingRows.length > 0) await trx.insertInto('ledger_postings').values(postingRows).execute();
  return out;
}
