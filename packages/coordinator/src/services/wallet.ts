/**
 * Wallets and the manual settlement adapter: balances, statements, deposits (operator-recorded, or minted
 * on a dev network), withdrawals as pending payouts the operator completes or rejects, and the operator's
 * views of the treasury and the ledger.
 */
import { ACCOUNTS, auditBudgetOf, GpuxError, move, newId, type PayoutRecord, type TransferRecord } from '@gpux/core';
import {
  ASSETS,
  type DepositRequest,
  type LedgerResponse,
  type ListPayoutsResponse,
  type PayoutView,
  type TransferView,
  type TreasuryResponse,
  type WalletHistoryResponse,
  type WalletResponse,
  type WithdrawRequest,
} from '@gpux/protocol';
import type { z } from 'zod';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type WalletDeps = Needs<'clock' | 'config' | 'logger' | 'random' | 'settlementAdapter' | 'store'>;

type Out<T extends z.ZodType> = z.output<T>;

export function transferView(t: TransferRecord): TransferView {
  return {
    id: t.id,
    kind: t.kind,
    at: t.at,
    memo: t.memo,
    jobId: t.jobId,
    attemptId: t.attemptId,
    nodeId: t.nodeId,
    reference: t.reference,
    postings: t.postings.map((p) => ({ account: p.account, asset: p.asset, amount: p.amount, balanceAfter: p.balanceAfter })),
  };
}

export function payoutView(p: PayoutRecord): PayoutView {
  return { ...p };
}

export async function wallet(rt: WalletDeps, p: Principal): Promise<WalletResponse> {
  const escrow = await rt.store.escrowOfBuyer(p.accountId);
  const pending = await rt.store.listPayouts({ accountId: p.accountId, state: 'pending', limit: 1000 });
  // Issue 11: a provider's pay waits in pending:<attempt> until verification; shown, never counted as available.
  const held = await rt.store.pendingPayOf(p.accountId);
  const balances = await Promise.all(
    ASSETS.map(async (asset) => {
      const h = held.find((x) => x.asset === asset);
      return {
        asset,
        available: await rt.store.getBalance(ACCOUNTS.wallet(p.accountId), asset),
        inEscrow: escrow[asset] ?? 0,
        pendingPayout: pending.filter((x) => x.asset === asset).reduce((s, x) => s + x.amount, 0),
        heldForVerification: h?.amount ?? 0,
        heldJobs: h?.jobs ?? 0,
        nextWindowClosesAt: h?.nextWindowClosesAt ?? null,
      };
    }),
  );
  return { accountId: p.accountId, balances };
}

export async function walletHistory(rt: WalletDeps, p: Principal, q: { asset?: (typeof ASSETS)[number]; limit: number; cursor?: string }): Promise<WalletHistoryResponse> {
  const page = await rt.store.walletHistory(p.accountId, q);
  return {
    entries: page.items.map((e) => ({ transferId: e.transferId, at: e.at, kind: e.kind, asset: e.asset, amount: e.amount, balanceAfter: e.balanceAfter, jobId: e.jobId, nodeId: e.nodeId, memo: e.memo })),
    nextCursor: page.nextCursor,
  };
}

/** The accountId an operator deposits to in order to fund the treasury (and so its audit budget). */
export const TREASURY_ACCOUNT_ID = 'treasury';

/**
 * Operators record money that arrived outside (with its reference) into any account, the treasury included
 * (accountId "treasury": it funds audits, referee runs and canaries); on a dev network
 * (GPUX_DEV_MINT=1) any account may mint test funds into its own wallet.
 */
export async function deposit(rt: WalletDeps, p: Principal, body: Out<typeof DepositRequest>): Promise<TransferView> {
  const target = body.accountId ?? p.accountId;
  const operator = p.role === 'operator';
  if (!operator && target !== p.accountId) throw new GpuxError('FORBIDDEN', 'only operators deposit into another account; drop accountId');
  const mint = !operator || body.reference === undefined;
  if (mint && !rt.config.devMint) {
    throw new GpuxError(
      'FORBIDDEN',
      operator
        ? 'this network does not mint test funds (GPUX_DEV_MINT is off): record a real deposit with its external reference'
        : 'deposits on this network are recorded by its operator when your payment arrives; test funds can be minted only on a dev network (GPUX_DEV_MINT=1)',
    );
  }
  // An operator funds the treasury's audit budget (TRUST.md "who pays for verification") by naming it.
  const account = operator && target === TREASURY_ACCOUNT_ID ? ACCOUNTS.treasury : ACCOUNTS.wallet(target);
  const t = await rt.store.postTransfer({
    kind: mint ? 'mint' : 'deposit',
    postings: move(body.asset, ACCOUNTS.world, [{ account, amount: body.amount }]),
    at: rt.clock.now(),
    memo: mint ? `test funds for ${target}` : `deposit for ${target}`,
    reference: body.reference ?? null,
  });
  rt.logger.info({ accountId: target, asset: body.asset, amount: body.amount, kind: t.kind, by: p.accountId }, 'wallet credited');
  return transferView(t);
}

/**
 * The amount leaves the wallet as a durable pending payout first; then the settlement adapter gets it. An
 * adapter failure leaves the payout pending (never lost, never paid twice by us): an operator settles it.
 */
export async function withdraw(rt: WalletDeps, p: Principal, body: Out<typeof WithdrawRequest>): Promise<PayoutView> {
  const now = rt.clock.now();
  const adapter = rt.settlementAdapter;
  let payout = await rt.store.requestPayout({
    id: newId('pay', now, rt.random),
    accountId: p.accountId,
    asset: body.asset,
    amount: body.amount,
    destination: body.destination,
    adapter: adapter.name,
    now,
  });
  rt.logger.info({ payoutId: payout.id, accountId: p.accountId, amount: body.amount, asset: body.asset, adapter: adapter.name }, 'payout requested');
  try {
    const outcome = await adapter.submit(payout);
    if (outcome.state === 'completed') payout = await rt.store.completePayout(payout.id, outcome.reference, rt.clock.now());
    else if (outcome.state === 'rejected') payout = await rt.store.rejectPayout(payout.id, outcome.reason, rt.clock.now());
  } catch (err) {
    rt.logger.error({ err, payoutId: payout.id, adapter: adapter.name }, 'settlement adapter failed; the payout stays pending');
  }
  return payoutView(payout);
}

export async function listPayouts(rt: WalletDeps, q: { accountId?: string; state?: PayoutRecord['state']; limit: number }): Promise<ListPayoutsResponse> {
  return { payouts: (await rt.store.listPayouts(q)).map(payoutView) };
}

export async function settlePayout(rt: WalletDeps, p: Principal, id: string, outcome: { reference: string } | { reason: string }): Promise<PayoutView> {
  const now = rt.clock.now();
  const payout = 'reference' in outcome ? await rt.store.completePayout(id, outcome.reference, now) : await rt.store.rejectPayout(id, outcome.reason, now);
  rt.logger.info({ payoutId: id, state: payout.state, by: p.accountId }, 'payout settled');
  return payoutView(payout);
}

/**
 * The treasury and the ledger's totals per asset, the audit budget (core trust/audit-budget.ts: what the
 * store enforces when it funds a check run) with the treasury's flows it is read from, and the canaries.
 */
export async function treasury(rt: WalletDeps): Promise<TreasuryResponse> {
  const [totals, flows, canaries] = await Promise.all([rt.store.ledgerTotals(), rt.store.treasuryFlows(), rt.store.canaryStats()]);
  const shareBps = rt.config.auditBudgetBps;
  return {
    feeBps: rt.config.treasuryFeeBps,
    auditBudgetBps: shareBps,
    assets: totals.map((t) => {
      const { feeIncome, funded, spent, allowance, left } = auditBudgetOf(t.asset, flows, shareBps);
      return {
        asset: t.asset,
        minted: t.minted,
        treasury: t.treasury,
        wallets: t.wallets,
        escrow: t.escrow,
        stake: t.stake,
        pendingPayouts: t.pendingPayouts,
        balanced: t.inside === t.minted && t.negativeAccounts === 0,
        pendingPay: t.pendingPay ?? 0,
        bonds: t.bonds ?? 0,
        auditBudget: { feeIncome, funded, spent, allowance, left },
        flows: flows.filter((f) => f.asset === t.asset).map((f) => ({ kind: f.kind, in: f.in, out: f.out })),
      };
    }),
    canaries: { catalog: canaries.catalog, issued: canaries.issued, open: canaries.open, passed: canaries.passed, failed: canaries.failed, dropped: canaries.dropped, noResult: canaries.noResult },
  };
}

export async function ledger(rt: WalletDeps, q: { limit: number; cursor?: string; jobId?: string; account?: string }): Promise<LedgerResponse> {
  const page = await rt.store.listTransfers(q);
  return { transfers: page.items.map(transferView), nextCursor: page.nextCursor };
}
