/**
 * The money routes of GpuxClient: wallet, payouts, stake, asks, prices, bills, treasury and ledger. Every
 * amount sent or received is integer minor units (6 decimals: 1_000_000 = 1.0); convert user input with
 * parseAmount and show amounts with formatAmount from @gpux/protocol.
 */
import type { Asset, DepositRequest, WithdrawRequest } from '@gpux/protocol';
import { GpuxClientError } from './errors.js';
import { type CallOptions, callRoute, type RouteResponse, type TransportConfig } from './transport.js';

export interface MoneyRequestOptions {
  signal?: AbortSignal;
}
export type PayoutStateFilter = 'pending' | 'completed' | 'rejected';
export interface WalletHistoryParams {
  asset?: Asset;
  limit?: number;
  cursor?: string;
}
export interface ListPayoutsParams {
  state?: PayoutStateFilter;
  limit?: number;
}
export interface PriceHistoryParams {
  /** A market class, e.g. nvidia-h100-80gb or cpu; all classes when absent. */
  class?: string;
  limit?: number;
}
export interface OffersParams {
  /** A GPU class or model, e.g. H100 or nvidia-h100-80gb; cpu for CPU-only nodes. */
  gpu?: string;
  /** At least this many GPUs per node. */
  count?: number;
  /** Price at most this, minor units per GPU-hour (parseAmount('3', 'usdc') for 3 USDC). */
  maxPrice?: number;
  region?: string;
  /** Only nodes proven by the proof-of-hardware challenge. */
  proven?: boolean;
  /** Also nodes that cannot take a job now, with the reason. */
  all?: boolean;
  limit?: number;
}
export interface LedgerParams {
  limit?: number;
  cursor?: string;
  jobId?: string;
  account?: string;
}
export type DepositBody = DepositRequest;
export type WithdrawBody = WithdrawRequest;

/** Base class of GpuxClient holding the money routes, so client.ts stays about jobs and nodes. */
export class GpuxMoneyRoutes {
  protected readonly cfg: TransportConfig;

  protected constructor(cfg: TransportConfig) {
    this.cfg = cfg;
  }

  // ---- wallet (buyers and providers) ----

  /** Your balances per asset: available, in escrow, pending payout. */
  wallet(opts: MoneyRequestOptions = {}): Promise<RouteResponse<'wallet'>> {
    return callRoute(this.cfg, 'wallet', sig(opts));
  }

  /** Your wallet statement, newest first; page on with nextCursor. */
  walletHistory(query: WalletHistoryParams = {}, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'walletHistory'>> {
    return callRoute(this.cfg, 'walletHistory', { query: { asset: query.asset, limit: query.limit, cursor: query.cursor }, ...sig(opts) });
  }

  /**
   * Record a deposit (operators: with its external reference, optionally for another account) or mint test
   * funds to yourself (dev networks). Not retried: a deposit has no idempotency key.
   */
  async deposit(body: DepositBody, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'deposit'>> {
    minorUnits('amount', body.amount);
    return callRoute(this.cfg, 'deposit', { body, ...sig(opts) });
  }

  /** Withdraw through the settlement adapter: the amount leaves the wallet as a pending payout. */
  async withdraw(body: WithdrawBody, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'withdraw'>> {
    minorUnits('amount', body.amount);
    return callRoute(this.cfg, 'withdraw', { body, ...sig(opts) });
  }

  /** Your own payouts, newest first. */
  myPayouts(query: ListPayoutsParams = {}, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'myPayouts'>> {
    return callRoute(this.cfg, 'myPayouts', { query: { state: query.state, limit: query.limit }, ...sig(opts) });
  }

  // ---- payouts (operators: the manual settlement adapter) ----

  /** Every payout, newest first; state 'pending' is the manual adapter's work queue. */
  listPayouts(query: ListPayoutsParams = {}, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'listPayouts'>> {
    return callRoute(this.cfg, 'listPayouts', { query: { state: query.state, limit: query.limit }, ...sig(opts) });
  }

  /** The payout was paid outside gpux; `reference` is the external payment id. */
  completePayout(id: string, reference: string, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'completePayout'>> {
    return callRoute(this.cfg, 'completePayout', { params: { id }, body: { reference }, ...sig(opts) });
  }

  /** The payout failed; its amount returns to the account's wallet. */
  rejectPayout(id: string, reason: string, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'rejectPayout'>> {
    return callRoute(this.cfg, 'rejectPayout', { params: { id }, body: { reason }, ...sig(opts) });
  }

  // ---- stake (providers; always USDC) ----

  /** A node's stake: bonded, locked by active attempts, free, unbonding. */
  nodeStake(nodeId: string, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'nodeStake'>> {
    return callRoute(this.cfg, 'nodeStake', { params: { id: nodeId }, ...sig(opts) });
  }

  /** Move `amount` USDC minor units from your wallet to the node's stake. */
  async addStake(nodeId: string, amount: number, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'addStake'>> {
    return callRoute(this.cfg, 'addStake', { params: { id: nodeId }, body: { amount: minorUnits('amount', amount) }, ...sig(opts) });
  }

  /** Unbond `amount` of the node's free stake; it returns to your wallet after the unbonding delay. */
  async unstake(nodeId: string, amount: number, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'unstake'>> {
    return callRoute(this.cfg, 'unstake', { params: { id: nodeId }, body: { amount: minorUnits('amount', amount) }, ...sig(opts) });
  }

  // ---- market ----

  /** Index price per class with its recent change, utilization, supply and demand; `market: false` when jobs are free. */
  marketPrices(opts: MoneyRequestOptions = {}): Promise<RouteResponse<'marketPrices'>> {
    return callRoute(this.cfg, 'marketPrices', sig(opts));
  }

  /** Index prices per epoch, oldest first. */
  priceHistory(query: PriceHistoryParams = {}, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'priceHistory'>> {
    return callRoute(this.cfg, 'priceHistory', { query: { class: query.class, limit: query.limit }, ...sig(opts) });
  }

  /** What the network offers now: live nodes grouped by class, GPUs per node, price, region, reliability and proof, cheapest first. */
  offers(query: OffersParams = {}, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'offers'>> {
    const flag = (v: boolean | undefined) => (v === undefined ? undefined : String(v));
    return callRoute(this.cfg, 'offers', {
      query: { gpu: query.gpu, count: query.count, maxPrice: query.maxPrice, region: query.region, proven: flag(query.proven), all: flag(query.all), limit: query.limit },
      ...sig(opts),
    });
  }

  /** Your asks (the least you earn per GPU-hour after the fee), per class. */
  myAsks(opts: MoneyRequestOptions = {}): Promise<RouteResponse<'myAsks'>> {
    return callRoute(this.cfg, 'myAsks', sig(opts));
  }

  /** Your provider side in one answer: your nodes (status, proof, GPUs, stake, pay), your asks, your earnings paid and held (operators: any account's). */
  providerStatus(query: { accountId?: string } = {}, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'providerStatus'>> {
    return callRoute(this.cfg, 'providerStatus', { query: { accountId: query.accountId }, ...sig(opts) });
  }

  /** Set your ask for a class in minor units per GPU-hour, or remove it with null. Returns all your asks. */
  async setAsk(marketClass: string, pricePerGpuHour: number | null, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'setAsk'>> {
    if (pricePerGpuHour !== null) minorUnits('pricePerGpuHour', pricePerGpuHour);
    return callRoute(this.cfg, 'setAsk', { body: { class: marketClass, pricePerGpuHour }, ...sig(opts) });
  }

  /** The job's bill: totals and each ledger line, signed from the buyer's point of view. */
  jobBill(jobId: string, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'jobBill'>> {
    return callRoute(this.cfg, 'jobBill', { params: { id: jobId }, ...sig(opts) });
  }

  // ---- operators: treasury and ledger ----

  /** Treasury balance and ledger totals per asset, with the invariant check. */
  treasury(opts: MoneyRequestOptions = {}): Promise<RouteResponse<'treasury'>> {
    return callRoute(this.cfg, 'treasury', sig(opts));
  }

  /** Ledger transfers with their postings, newest first. */
  ledger(query: LedgerParams = {}, opts: MoneyRequestOptions = {}): Promise<RouteResponse<'ledger'>> {
    return callRoute(this.cfg, 'ledger', { query: { limit: query.limit, cursor: query.cursor, jobId: query.jobId, account: query.account }, ...sig(opts) });
  }
}

/**
 * Fail before the request when an amount is not integer minor units: 12.5 meant as 12.5 USDC would otherwise
 * reach the coordinator as a confusing validation error. Its callers are async, so this rejects their promise.
 */
function minorUnits(name: string, n: number): number {
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new GpuxClientError(`${name} must be a non-negative integer count of minor units (6 decimals: 1000000 = 1.0), got ${n}; convert a decimal like "12.5" with parseAmount('12.5', 'usdc')`);
  }
  return n;
}

function sig(opts: MoneyRequestOptions): Pick<CallOptions, 'signal'> {
  return opts.signal ? { signal: opts.signal } : {};
}
