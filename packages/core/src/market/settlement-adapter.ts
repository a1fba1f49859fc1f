/**
 * The settlement adapter port: how money leaves the network. A withdrawal first becomes a durable pending
 * payout (the amount already moved from the wallet to payout:<id>); then the coordinator hands it to the
 * adapter. An adapter that pays at once answers `completed` with its external reference (a bank transfer id,
 * a transaction hash); one that pays later answers `pending` and the payout is completed or rejected when it
 * reports back (the manual adapter: an operator). `rejected` returns the amount to the wallet.
 */
import type { PayoutRecord } from './records.js';

export type PayoutOutcome = { state: 'pending' } | { state: 'completed'; reference: string } | { state: 'rejected'; reason: string };

export interface SettlementAdapter {
  /** Recorded on each payout, e.g. `manual`. */
  readonly name: string;
  /** Hand over a pending payout. A thrown error leaves it pending (an operator can complete or reject it). */
  submit(payout: PayoutRecord): Promise<PayoutOutcome>;
}

/** The adapter shipped: an operator pays outside gpux and records the reference (`gpux payout complete`). */
export const manualSettlementAdapter: SettlementAdapter = {
  name: 'manual',
  submit: async () => ({ state: 'pending' }),
};
