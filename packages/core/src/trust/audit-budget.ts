/**
 * The audit budget (TRUST.md "Who pays for verification"): audits, referee runs and canaries are paid by
 * the treasury, out of a share of its fee income plus what was put into the treasury on purpose. Pure:
 * it reads the treasury's running in/out totals per transfer kind (the store keeps them in the same
 * transaction as every transfer that touches the treasury).
 *
 * Per asset, in integer minor units:
 * - fee income = every settlement fee into the treasury (kind settlement; check runs' own fees included,
 *   so the treasury's net cost of verification never passes share × buyers' fees + funded);
 * - funded     = money put straight into the treasury (kinds mint and deposit);
 * - spent      = what check runs and canaries held from the treasury (kind escrow.hold out of it) minus
 *   the unspent rest that came back when they ended (kind escrow.release into it). A running check run
 *   counts with its whole hold until it ends;
 * - allowance  = ⌊fee income × shareBps / 10000⌋ + funded.
 * A check run (or n of them) may be funded only while spent + its holds ≤ allowance, and the treasury's
 * balance covers the holds. Slashes, forfeits and penalty fees into the treasury are not budget income.
 */
import type { Asset } from '@gpux/protocol';
import { BPS, checkedAdd, mulDiv } from '../market/arith.js';
import type { TransferKind } from '../market/ledger.js';

/** Lifetime money into and out of the treasury by one transfer kind, in one asset. */
export interface TreasuryFlow {
  asset: Asset;
  kind: TransferKind;
  /** Sum of the treasury's positive postings of this kind (≥ 0). */
  in: number;
  /** Sum of the treasury's negative postings of this kind, as a positive number (≥ 0). */
  out: number;
}

export interface AuditBudget {
  asset: Asset;
  shareBps: number;
  feeIncome: number;
  funded: number;
  /** Held for check runs and canaries minus what came back (negative only if more came back than was held). */
  spent: number;
  allowance: number;
  /** max(0, allowance − spent): the holds that may still be taken. */
  left: number;
}

/** The default share: all of the treasury's fee income may pay for verification. */
export const DEFAULT_AUDIT_BUDGET_BPS = BPS;

/** The audit budget of `asset` from the treasury's flows (flows of other assets are ignored). */
export function auditBudgetOf(asset: Asset, flows: readonly TreasuryFlow[], shareBps: number): AuditBudget {
  if (!Number.isInteger(shareBps) || shareBps < 0 || shareBps > BPS) throw new Error(`invariant: audit budget share ${shareBps} bps is not from 0 to ${BPS}`);
  const sum = (kind: TransferKind, side: 'in' | 'out') => flows.filter((f) => f.asset === asset && f.kind === kind).reduce((s, f) => checkedAdd(s, f[side]), 0);
  const feeIncome = sum('settlement', 'in');
  const funded = checkedAdd(sum('mint', 'in'), sum('deposit', 'in'));
  const spent = sum('escrow.hold', 'out') - sum('escrow.release', 'in');
  const allowance = checkedAdd(mulDiv(feeIncome, shareBps, BPS), funded);
  return { asset, shareBps, feeIncome, funded, spent, allowance, left: Math.max(0, allowance - spent) };
}

/** Whether holds of `amount` more fit the budget. */
export function auditBudgetAllows(b: AuditBudget, amount: number): boolean {
  return amount <= b.left;
}
