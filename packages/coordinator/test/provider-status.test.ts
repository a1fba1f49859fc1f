/**
 * GET /v1/provider/status (issue 16) on a real coordinator over SQLite and PostgreSQL: the caller's live nodes
 * with their stake and pay, its asks, and earnings per asset: paid counts only pay kinds that reached the wallet
 * (settlement, pay.release), per node; another account's status is for operators only; stake before any deposit
 * is refused with the way out (deposit first).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ACCOUNTS, move } from '@gpux/core';
import type { ProviderStatusResponse } from '@gpux/protocol';
import { requirePostgres, startPostgres } from '@gpux/testing';
import { call, gpuAd, type Harness, startHarness, TestAgent } from './helpers.js';

interface Database {
  db?: string;
  stop(): Promise<void>;
}

function providerStatusSuite(name: string, database: () => Promise<Database>, opts: { skip: string | false } = { skip: false }): void {
  describe(`provider status: ${name}`, opts, () => {
    let h: Harness;
    let dbHandle: Database | undefined;
    let nodeA: TestAgent;
    let nodeB: TestAgent;

    before(async () => {
      dbHandle = await database();
      h = await startHarness({ ...(dbHandle.db ? { db: dbHandle.db } : {}), market: true, devMint: true });
      nodeA = new TestAgent(h.url, gpuAd('rig-a'));
      nodeB = new TestAgent(h.url, gpuAd('rig-b'));
      assert.equal((await nodeA.register()).status, 200);
      assert.equal((await nodeB.register()).status, 200);
    });
    after(async () => {
      await h?.close();
      await dbHandle?.stop();
    });

    const status = (token: string, accountId?: string) => call(h.url, 'GET', `/v1/provider/status${accountId ? `?accountId=${accountId}` : ''}`, { token });

    test('stake before a deposit: 402 saying to deposit first; after one, the stake is shown per node', async () => {
      const early = await call(h.url, 'POST', `/v1/nodes/${nodeA.nodeId}/stake`, { token: h.provider, body: { amount: 5_000_000 } });
      assert.equal(early.status, 402);
      assert.match(early.body.error.message, /stake is paid from your wallet: insufficient funds .* deposit first: gpux wallet deposit AMOUNT/);
      assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: h.provider, body: { amount: 10_000_000 } })).status, 201);
      assert.equal((await call(h.url, 'POST', `/v1/nodes/${nodeA.nodeId}/stake`, { token: h.provider, body: { amount: 5_000_000 } })).status, 200);
      assert.equal((await call(h.url, 'POST', '/v1/market/asks', { token: h.provider, body: { class: 'cpu', pricePerGpuHour: 300_000 } })).status, 200);
    });

    test('nodes, asks and earnings: only pay that reached the wallet counts as paid, per node', async () => {
      const store = h.coord.store;
      const wallet = ACCOUNTS.wallet(h.providerId);
      const pay = (kind: 'settlement' | 'pay.release' | 'mint', amount: number, nodeId: string | null) =>
        store.postTransfer({ kind, postings: move('usdc', ACCOUNTS.world, [{ account: wallet, amount }]), at: Date.now(), memo: 'test pay', nodeId });
      await pay('settlement', 1_000, nodeA.nodeId);
      await pay('pay.release', 20, nodeA.nodeId);
      await pay('settlement', 300, nodeB.nodeId);
      await pay('mint', 999_999, nodeB.nodeId); // not pay

      const res = await status(h.provider);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const body = res.body as ProviderStatusResponse;
      assert.equal(body.accountId, h.providerId);
      assert.equal(body.market, true);
      assert.equal(body.truncated, false);
      assert.deepEqual(body.nodes.map((n) => n.node.id).sort(), [nodeA.nodeId, nodeB.nodeId].sort());
      const byId = new Map(body.nodes.map((n) => [n.node.id, n]));
      assert.equal(byId.get(nodeA.nodeId)?.stake.staked, 5_000_000);
      assert.equal(byId.get(nodeA.nodeId)?.stake.free, 5_000_000);
      assert.equal(byId.get(nodeB.nodeId)?.stake.staked, 0);
      assert.deepEqual(byId.get(nodeA.nodeId)?.paid, [{ asset: 'usdc', amount: 1_020 }]);
      assert.deepEqual(byId.get(nodeB.nodeId)?.paid, [{ asset: 'usdc', amount: 300 }]);
      assert.equal(byId.get(nodeA.nodeId)?.node.advertisement.hostname, 'rig-a');
      assert.deepEqual(body.asks.map((x) => [x.class, x.pricePerGpuHour]), [['cpu', 300_000]]);
      const usdc = body.earnings.find((e) => e.asset === 'usdc');
      assert.equal(usdc?.paid, 1_320);
      assert.equal(usdc?.held, 0);
      assert.equal(usdc?.available, 10_000_000 - 5_000_000 + 1_320 + 999_999);
      assert.equal(body.earnings.find((e) => e.asset === 'credit')?.paid, 0);
    });

    test("another account's status: 403 for a buyer, answered for an operator; a newcomer has nothing", async () => {
      const buyer = await h.buyer();
      assert.equal((await status(buyer, h.providerId)).status, 403);
      const mine = await status(buyer);
      assert.equal(mine.status, 200);
      assert.deepEqual((mine.body as ProviderStatusResponse).nodes, []);
      const op = await status(h.operator, h.providerId);
      assert.equal(op.status, 200);
      assert.equal((op.body as ProviderStatusResponse).nodes.length, 2);
    });
  });
}

providerStatusSuite('SQLite', async () => ({ stop: async () => {} }));
providerStatusSuite(
  'PostgreSQL',
  async () => {
    const pg = await startPostgres();
    return { db: pg.url, stop: () => pg.stop() };
  },
  requirePostgres(),
);
