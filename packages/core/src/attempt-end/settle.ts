/**
 * One settlement step of one attempt as a plan piece: used for an ending attempt's final step, for gang
 * siblings stopped with it, and for the periodic chunks of running attempts (the store's settleRunning).
 * Charges the runtime since the last step (up to stop_by when the job's cancel was requested) from the
 * job's escrow, as far as it holds, with the fee carried per (provider, asset). The provider's share goes
 * to its wallet, or to pending:<attempt> while the job holds pay until verification (holdPay).
 */
import { formatAmount, priceUnit, unitsPhrase } from '@gpux/protocol';
import { CPU_CLASS } from '../market/classes.js';
import { ACCOUNTS, move, type NewTransfer } from '../market/ledger.js';
import type { AttemptSettlementRecord } from '../market/records.js';
import { type SettlementStep, settlementStep } from '../market/settlement.js';
import type { AttemptFacts, CarryKey } from './snapshot.js';

/** GPUs an attempt is priced for: none when it trades in the cpu class (one unit, the job). */
const gpusOf = (price: { marketClass: string; units: number }) => (price.marketClass === CPU_CLASS ? 0 : price.units);

/** A job or node event as the store writes it. */
export interface PlannedEvent {
  at: number;
  subject: 'job' | 'node';
  subjectId: string;
  type: string;
  data: Record<string, unknown>;
}

export type SettleableAttempt = Pick<AttemptFacts, 'id' | 'jobId' | 'nodeId' | 'startedAt' | 'stopBy' | 'price' | 'settlement'>;

export interface SettlementInput {
  attempt: SettleableAttempt;
  timeoutSeconds: number;
  /** The job holds the provider's pay until verification (JobRecord.holdPay). */
  holdPay: boolean;
  now: number;
  /** What escrow:<job> holds in the attempt's asset before this step. */
  escrowLeft: number;
  /** The provider's fee carry; required when settlementNeedsCarry says so. */
  carry?: number;
}

export interface SettlementPiece {
  attemptId: string;
  step: SettlementStep;
  /** The attempt's settled totals after this step; null: nothing to record (unpriced, never started, or up to date). */
  settlement: AttemptSettlementRecord | null;
  transfer: NewTransfer | null;
  event: PlannedEvent | null;
  /** The (provider, asset) whose carry this step moved, with its new value; null when no fee was taken. */
  carry: (CarryKey & { carry: number }) | null;
}

/** The runtime attempt `a` is charged for at `now`: up to now, or up to its stop_by; 0 if it never started. */
export function billableMs(a: Pick<AttemptFacts, 'startedAt' | 'stopBy'>, now: number): number {
  if (a.startedAt === null) return 0;
  const until = a.stopBy === null ? now : Math.min(now, a.stopBy);
  return Math.max(0, until - a.startedAt);
}

/** Where the provider's share of a settlement goes. */
export function providerPayAccount(attemptId: string, providerId: string, holdPay: boolean): string {
  return holdPay ? ACCOUNTS.pending(attemptId) : ACCOUNTS.wallet(providerId);
}

function stepOf(input: SettlementInput, carry: number): { step: SettlementStep; ms: number } | null {
  const { attempt: a, now } = input;
  const price = a.price;
  if (!price || a.startedAt === null) return null;
  const ms = billableMs(a, now);
  if (ms <= a.settlement.settledMs) return null;
  const q = { pricePerUnitHour: price.pricePerUnitHour, units: price.units, timeoutSeconds: input.timeoutSeconds, feeBps: price.feeBps };
  return { step: settlementStep(q, a.settlement, ms, input.escrowLeft, carry), ms };
}

/** The fee carry this step needs (it charges something and takes a fee); null: none. */
export function settlementNeedsCarry(input: SettlementInput): CarryKey | null {
  const s = stepOf(input, 0);
  const price = input.attempt.price;
  if (!s || !price || s.step.charge === 0 || price.feeBps === 0) return null;
  return { providerId: price.providerId, asset: price.asset };
}

export function planSettlement(input: SettlementInput): SettlementPiece {
  const a = input.attempt;
  const key = settlementNeedsCarry(input);
  if (key && input.carry === undefined) throw new Error(`invariant: the settlement of attempt ${a.id} needs the fee carry of ${key.providerId} in ${key.asset}`);
  const s = stepOf(input, key ? (input.carry as number) : 0);
  const none: SettlementPiece = { attemptId: a.id, step: { charge: 0, fee: 0, provider: 0, carry: input.carry ?? 0 }, settlement: null, transfer: null, event: null, carry: null };
  if (!s || !a.price) return none;
  const { step, ms } = s;
  const price = a.price;
  const settlement = { charged: a.settlement.charged + step.charge, fee: a.settlement.fee + step.fee, settledMs: ms };
  if (step.charge === 0) return { ...none, step, settlement };
  const transfer: NewTransfer = {
    kind: 'settlement',
    postings: move(price.asset, ACCOUNTS.escrow(a.jobId), [
      { account: providerPayAccount(a.id, price.providerId, input.holdPay), amount: step.provider },
      { account: ACCOUNTS.treasury, amount: step.fee },
    ]),
    at: input.now,
    memo: `attempt ${a.id}: ${ms - a.settlement.settledMs} ms at ${formatAmount(price.pricePerUnitHour, price.asset)} per ${priceUnit(gpusOf(price))} × ${unitsPhrase(gpusOf(price), price.units)}`,
    jobId: a.jobId,
    attemptId: a.id,
    nodeId: a.nodeId,
  };
  const event: PlannedEvent = {
    at: input.now,
    subject: 'job',
    subjectId: a.jobId,
    type: 'job.charged',
    data: { attemptId: a.id, asset: price.asset, charge: step.charge, fee: step.fee, provider: step.provider },
  };
  return { attemptId: a.id, step, settlement, transfer, event, carry: key ? { ...key, carry: step.carry } : null };
}
