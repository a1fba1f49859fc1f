/** Money routes: wallet, payouts (manual settlement adapter), stake, asks, prices, bills, treasury, ledger. */
import type { FastifyInstance } from 'fastify';
import type { Needs } from '../runtime.js';
import { jobBill } from '../services/bill.js';
import { marketPrices, myAsks, priceHistory, setAsk } from '../services/prices.js';
import { nodePenalties } from '../services/penalties.js';
import { providerStatus } from '../services/provider.js';
import { addStake, nodeStake, unstake } from '../services/stake.js';
import { deposit, ledger, listPayouts, settlePayout, treasury, wallet, walletHistory, withdraw } from '../services/wallet.js';
import { mountRoute } from './route-kit.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RoutesMarketDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'index' | 'logger' | 'logs' | 'nodeKeys' | 'nonces' | 'random' | 'settlementAdapter' | 'signals' | 'startedAt' | 'store' | 'work'>;

export function mountMarketRoutes(app: FastifyInstance, rt: RoutesMarketDeps): void {
  mountRoute(app, rt, 'wallet', ({ principal }) => wallet(rt, principal));
  mountRoute(app, rt, 'walletHistory', ({ principal, query }) => walletHistory(rt, principal, query));
  mountRoute(app, rt, 'deposit', async ({ principal, body, reply }) => {
    const transfer = await deposit(rt, principal, body);
    reply.code(201);
    return { transfer };
  });
  mountRoute(app, rt, 'withdraw', async ({ principal, body, reply }) => {
    const payout = await withdraw(rt, principal, body);
    reply.code(201);
    return { payout };
  });
  mountRoute(app, rt, 'myPayouts', ({ principal, query }) => listPayouts(rt, { accountId: principal.accountId, limit: query.limit, ...(query.state ? { state: query.state } : {}) }));
  mountRoute(app, rt, 'listPayouts', ({ query }) => listPayouts(rt, { limit: query.limit, ...(query.state ? { state: query.state } : {}) }));
  mountRoute(app, rt, 'completePayout', async ({ principal, id, body }) => ({ payout: await settlePayout(rt, principal, id, { reference: body.reference }) }));
  mountRoute(app, rt, 'rejectPayout', async ({ principal, id, body }) => ({ payout: await settlePayout(rt, principal, id, { reason: body.reason }) }));

  mountRoute(app, rt, 'nodePenalties', ({ principal, id }) => nodePenalties(rt, principal, id));
  mountRoute(app, rt, 'nodeStake', async ({ principal, id }) => ({ stake: await nodeStake(rt, principal, id) }));
  mountRoute(app, rt, 'addStake', async ({ principal, id, body }) => ({ stake: await addStake(rt, principal, id, body.amount) }));
  mountRoute(app, rt, 'unstake', async ({ principal, id, body }) => ({ stake: await unstake(rt, principal, id, body.amount) }));

  mountRoute(app, rt, 'marketPrices', async () => marketPrices(rt));
  mountRoute(app, rt, 'priceHistory', ({ query }) => priceHistory(rt, query));
  mountRoute(app, rt, 'myAsks', ({ principal }) => myAsks(rt, principal));
  mountRoute(app, rt, 'providerStatus', ({ principal, query }) => providerStatus(rt, principal, query.accountId));
  mountRoute(app, rt, 'setAsk', ({ principal, body }) => setAsk(rt, principal, body.class, body.pricePerGpuHour));

  mountRoute(app, rt, 'jobBill', ({ principal, id }) => jobBill(rt, principal, id));
  mountRoute(app, rt, 'treasury', () => treasury(rt));
  mountRoute(app, rt, 'ledger', ({ query }) => ledger(rt, query));
}
