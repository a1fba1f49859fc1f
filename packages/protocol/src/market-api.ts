/** Bodies of the money routes: wallet, payouts, stake, asks, prices, bills, treasury and ledger. */
import { z } from 'zod';
import { Amount, Asset, SignedAmount } from './money.js';

const Cursor = z.string().optional().describe('nextCursor from the previous page');
const Limit = (max: number, dflt: number) => z.coerce.number().int().min(1).max(max).default(dflt);
/**
 * The most one deposit, withdrawal, stake or unstake request moves: 10^15 minor units (1,000,000,000.0).
 * Balances and ledger totals are bounded separately, at 2^53 − 1 minor units per asset network-wide.
 */
export const MAX_REQUEST_AMOUNT = 1_000_000_000_000_000;
const RequestAmount = Amount.refine((n) => n > 0, 'must be more than 0').refine((n) => n <= MAX_REQUEST_AMOUNT, `must be at most ${MAX_REQUEST_AMOUNT} minor units per request`);

// ---- wallet ----
export const Balance = z.object({
  asset: Asset,
  available: Amount.describe('Spendable: holds new jobs, pays stake, can be withdrawn'),
  inEscrow: Amount.describe('Held for your unfinished jobs'),
  pendingPayout: Amount.describe('Withdrawals the settlement adapter has not completed yet'),
  // Issue 11 (optional: coordinators before it do not send them).
  heldForVerification: Amount.optional().describe(
    "Pay you earned as a provider but not yet received: held until each job's verification passes or its dispute window closes (pending:<attempt>); forfeited back to the buyer on a confirmed wrong result",
  ),
  heldJobs: z.number().int().min(0).optional().describe('Jobs whose pay is in heldForVerification'),
  nextWindowClosesAt: z
    .number()
    .int()
    .nullable()
    .optional()
    .describe("The soonest dispute window among those jobs closes then (epoch ms): that job's pay is released by then unless disputed or found wrong; an audit that passes releases it sooner. null: no job's step has opened yet"),
});
export type Balance = z.infer<typeof Balance>;
export const WalletResponse = z.object({ accountId: z.string(), balances: z.array(Balance) });
export type WalletResponse = z.infer<typeof WalletResponse>;

export const WalletEntry = z.object({
  transferId: z.string(),
  at: z.number().int(),
  kind: z.string().describe('mint, deposit, escrow.hold, escrow.topup, escrow.release, settlement, stake.*, slash, payout.*, pay.release, pay.forfeit, penalty.fee, dispute.bond, dispute.return, dispute.forfeit'),
  asset: Asset,
  amount: SignedAmount.describe('Into (+) or out of (−) the wallet'),
  balanceAfter: Amount,
  jobId: z.string().nullable(),
  nodeId: z.string().nullable(),
  memo: z.string(),
});
export type WalletEntry = z.infer<typeof WalletEntry>;
export const WalletHistoryQuery = z.object({ asset: Asset.optional(), limit: Limit(500, 50), cursor: Cursor });
export type WalletHistoryQuery = z.input<typeof WalletHistoryQuery>;
export const WalletHistoryResponse = z.object({ entries: z.array(WalletEntry), nextCursor: z.string().nullable() });
export type WalletHistoryResponse = z.infer<typeof WalletHistoryResponse>;

export const DepositRequest = z
  .object({
    asset: Asset.default('usdc'),
    amount: RequestAmount,
    reference: z.string().min(1).max(256).optional().describe('The external payment this deposit records (required from operators)'),
    accountId: z.string().min(1).optional().describe('Operators only: the account to credit (default: your own); "treasury" funds the treasury and so its audit budget'),
  })
  .strict();
export type DepositRequest = z.input<typeof DepositRequest>;

export const TransferView = z.object({
  id: z.string(),
  kind: z.string(),
  at: z.number().int(),
  memo: z.string(),
  jobId: z.string().nullable(),
  attemptId: z.string().nullable(),
  nodeId: z.string().nullable(),
  reference: z.string().nullable(),
  postings: z.array(z.object({ account: z.string(), asset: Asset, amount: SignedAmount, balanceAfter: SignedAmount })),
});
export type TransferView = z.infer<typeof TransferView>;
export const TransferResponse = z.object({ transfer: TransferView });
export type TransferResponse = z.infer<typeof TransferResponse>;

// ---- payouts (withdrawals through a settlement adapter) ----
export const PayoutState = z.enum(['pending', 'completed', 'rejected']);
export const PayoutView = z.object({
  id: z.string(),
  accountId: z.string(),
  asset: Asset,
  amount: Amount,
  destination: z.string(),
  adapter: z.string().describe('The settlement adapter that pays it out, e.g. manual'),
  state: PayoutState,
  reference: z.string().nullable().describe('The adapter\'s external reference once completed'),
  reason: z.string().nullable().describe('Why it was rejected'),
  createdAt: z.number().int(),
  updatedAt: z.number().int(),
});
export type PayoutView = z.infer<typeof PayoutView>;
export const WithdrawRequest = z
  .object({
    asset: Asset.default('usdc'),
    amount: RequestAmount,
    destination: z.string().min(1).max(256).describe('Where the adapter pays out: a bank reference, an address'),
  })
  .strict();
export type WithdrawRequest = z.input<typeof WithdrawRequest>;
export const PayoutResponse = z.object({ payout: PayoutView });
export type PayoutResponse = z.infer<typeof PayoutResponse>;
export const ListPayoutsQuery = z.object({ state: PayoutState.optional(), limit: Limit(500, 100) });
export const ListPayoutsResponse = z.object({ payouts: z.array(PayoutView) });
export type ListPayoutsResponse = z.infer<typeof ListPayoutsResponse>;
export const CompletePayoutRequest = z.object({ reference: z.string().min(1).max(256).describe('The external payment id') }).strict();
export const RejectPayoutRequest = z.object({ reason: z.string().min(1).max(512) }).strict();

// ---- stake ----
export const StakeView = z.object({
  nodeId: z.string(),
  providerId: z.string().nullable(),
  asset: Asset,
  staked: Amount.describe('Bonded to the node'),
  locked: Amount.describe('Backing the node\'s active attempts (20× each attempt\'s longest charge)'),
  free: Amount.describe('staked − locked: what new jobs and withdrawals can use'),
  unbonding: z.array(z.object({ id: z.string(), amount: Amount, releaseAt: z.number().int() })),
});
export type StakeView = z.infer<typeof StakeView>;
export const StakeResponse = z.object({ stake: StakeView });
export type StakeResponse = z.infer<typeof StakeResponse>;
export const StakeRequest = z.object({ amount: RequestAmount }).strict();
export type StakeRequest = z.input<typeof StakeRequest>;

// ---- market ----
export const ClassPrice = z.object({
  class: z.string().describe('e.g. nvidia-h100-80gb, amd-mi300x-192gb, cpu'),
  asset: Asset,
  price: Amount.describe('Index price per GPU-hour (per job-hour for cpu)'),
  previous: Amount.nullable().describe('The price one epoch before'),
  changeBps: z.number().int().describe('Change since the previous epoch, basis points'),
  change24hBps: z.number().int().describe('Change over the last 24 h of epochs, basis points'),
  floor: Amount,
  utilizationBps: z.number().int().describe('Demand (busy + queued) over supply at the last epoch, basis points'),
  supplyUnits: z.number().int(),
  demandUnits: z.number().int(),
  epoch: z.number().int(),
  at: z.number().int(),
});
export type ClassPrice = z.infer<typeof ClassPrice>;
export const MarketPricesResponse = z.object({
  market: z.boolean().describe('false: this coordinator runs without a market (jobs are free)'),
  feeBps: z.number().int().describe('Treasury fee, basis points of each charge'),
  targetUtilizationBps: z.number().int(),
  maxStepBps: z.number().int(),
  epochMs: z.number().int(),
  classes: z.array(ClassPrice),
});
export type MarketPricesResponse = z.infer<typeof MarketPricesResponse>;
export const PriceHistoryQuery = z.object({ class: z.string().min(1).optional(), limit: Limit(5000, 500) });
export type PriceHistoryQuery = z.input<typeof PriceHistoryQuery>;
export const PricePoint = z.object({ class: z.string(), epoch: z.number().int(), at: z.number().int(), price: Amount, utilizationBps: z.number().int(), supplyUnits: z.number().int(), demandUnits: z.number().int() });
export type PricePoint = z.infer<typeof PricePoint>;
export const PriceHistoryResponse = z.object({ points: z.array(PricePoint).describe('Oldest first') });
export type PriceHistoryResponse = z.infer<typeof PriceHistoryResponse>;

export const AskView = z.object({ providerId: z.string(), class: z.string(), pricePerGpuHour: Amount.describe('The least the provider earns per GPU-hour after the fee'), updatedAt: z.number().int() });
export type AskView = z.infer<typeof AskView>;
export const SetAskRequest = z
  .object({
    class: z.string().regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be a class id like nvidia-h100-80gb or cpu'),
    pricePerGpuHour: Amount.max(1_000_000_000_000, 'must be at most 1000000000000 minor units (1,000,000.0 per GPU-hour, the largest cap a job may name)')
      .nullable()
      .describe('null removes the ask'),
  })
  .strict();
export type SetAskRequest = z.input<typeof SetAskRequest>;
export const AsksResponse = z.object({ asks: z.array(AskView) });
export type AsksResponse = z.infer<typeof AsksResponse>;

// ---- bills, treasury, ledger ----
export const BillLine = z.object({
  at: z.number().int(),
  kind: z.string(),
  transferId: z.string(),
  attemptId: z.string().nullable(),
  nodeId: z.string().nullable(),
  account: z.string().describe('The other side of the money: escrow, the provider wallet, the treasury, the buyer wallet'),
  amount: SignedAmount.describe('From the buyer\'s point of view: a charge is negative'),
  memo: z.string(),
});
export type BillLine = z.infer<typeof BillLine>;
export const BillResponse = z.object({
  jobId: z.string(),
  asset: Asset,
  market: z.boolean().describe('false: the job ran free (no market)'),
  capPerUnitHour: Amount.describe('Most the job pays per GPU-hour (per job-hour when CPU-only)'),
  held: Amount.describe('Total moved into escrow (hold and top-ups)'),
  charged: Amount.describe('Paid for runtime: provider + treasury'),
  toProviders: Amount,
  fee: Amount.describe('To the treasury'),
  refunded: Amount.describe('Returned from escrow to the buyer'),
  inEscrow: Amount.describe('Still held (a job not yet finished)'),
  verification: z
    .object({
      payHeld: Amount.describe("Part of `toProviders` still held until the job's verification passes or its dispute window closes"),
      payReleased: Amount.describe('Part of `toProviders` released to the providers (verification passed, window closed)'),
      payForfeited: Amount.describe('Pay a node forfeited for a wrong result, returned to you'),
      compensation: Amount.describe("Your share of a wrong-result node's slashed stake (in the stake's asset, USDC)"),
      bondHeld: Amount.describe('Your dispute bond, held until the referee decides'),
      bondReturned: Amount.describe('Bond returned (the dispute was right, or void)'),
      bondForfeited: Amount.describe("Bond paid to the node's provider and the referee run (the dispute was false)"),
    })
    .optional()
    .describe("Issue 11: pay held for the job's verification, and what a wrong result or a dispute moved"),
  lines: z.array(BillLine),
});
export type BillResponse = z.infer<typeof BillResponse>;

export const AssetTotals = z.object({
  asset: Asset,
  minted: SignedAmount.describe('Net money brought into the network (mints + deposits − completed payouts)'),
  treasury: Amount,
  wallets: Amount,
  escrow: Amount,
  stake: Amount.describe('Bonded and unbonding'),
  pendingPayouts: Amount,
  balanced: z.boolean().describe('The accounts sum to what was minted, and none but the world is negative'),
  // Issue 11 (optional: coordinators before it do not send them).
  pendingPay: Amount.optional().describe("Providers' pay held until verification (pending:<attempt>), all providers"),
  bonds: Amount.optional().describe("Buyers' dispute bonds held until the referee decides (bond:<job>)"),
  auditBudget: z
    .object({
      feeIncome: Amount.describe("Every settlement fee the treasury received (check runs' fees included)"),
      funded: Amount.describe('Money put straight into the treasury (mints and recorded deposits)'),
      spent: SignedAmount.describe('Held from the treasury for audits, referee runs and canaries, minus the unspent rest that came back; a running check run counts with its whole hold'),
      allowance: Amount.describe('auditBudgetBps × feeIncome / 10000 + funded: what verification may spend in all'),
      left: Amount.describe('max(0, allowance − spent): a check run is funded only while its hold fits here (and the treasury balance covers it); otherwise the job is labelled unaudited, reason audit-budget'),
    })
    .optional()
    .describe("The audit budget (TRUST.md \"Who pays for verification\")"),
  flows: z
    .array(z.object({ kind: z.string(), in: Amount, out: Amount }))
    .optional()
    .describe('Lifetime money into and out of the treasury per transfer kind; Σ(in − out) is the treasury balance'),
});
export const TreasuryResponse = z.object({
  feeBps: z.number().int(),
  auditBudgetBps: z.number().int().optional().describe('GPUX_AUDIT_BUDGET_BPS: the share of the fee income audits, referee runs and canaries may spend'),
  assets: z.array(AssetTotals),
  canaries: z
    .object({
      catalog: z.number().int().describe('Known answers kept'),
      issued: z.number().int(),
      open: z.number().int().describe('Running, or waiting for a referee'),
      passed: z.number().int(),
      failed: z.number().int().describe('Confirmed by a referee: the node was penalized'),
      dropped: z.number().int().describe('The referee sided with the node: the catalog entry was dropped'),
      noResult: z.number().int().describe('Ended without a result: nothing decided'),
    })
    .optional()
    .describe('Known-answer jobs paid from the audit budget'),
});
export type TreasuryResponse = z.infer<typeof TreasuryResponse>;
export const LedgerQuery = z.object({ limit: Limit(500, 100), cursor: Cursor, jobId: z.string().optional(), account: z.string().optional() });
export type LedgerQuery = z.input<typeof LedgerQuery>;
export const LedgerResponse = z.object({ transfers: z.array(TransferView).describe('Newest first'), nextCursor: z.string().nullable() });
export type LedgerResponse = z.infer<typeof LedgerResponse>;
