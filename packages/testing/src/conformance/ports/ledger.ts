/**
 * Conformance, ledger port: transfers and balances, wallet statements, listings, escrow per buyer, the
 * per-asset totals, money limits (issue 10 item 13: no balance passes 2^53 − 1 minor units and the world
 * not below −(2^53 − 1); a transfer that would is REQUEST_INVALID and writes nothing; totals at the limit
 * read back exactly), payouts, stake (bond, unbond, release, slash). Job money is in flows/job-money.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS, auditBudgetOf, MAX_AMOUNT, type AttemptPriceRecord, type LedgerTotals, move, type Store, type TransferRecord, type WalletEntryRecord } from '@gpux/core';
import type { Asset } from '@gpux/protocol';
import { advertisement, code, eventTypes, type OpenStore, placement, submit, T0, withStore } from '../fixtures.js';

const USDC = 1_000_000; // one USDC in minor units

function mint(store: Store, accountId: string, asset: Asset, amount: number, at = T0): Promise<TransferRecord> {
  return store.postTransfer({ kind: 'mint', postings: move(asset, ACCOUNTS.world, [{ account: ACCOUNTS.wallet(accountId), amount }]), at, memo: 'test funds' });
}

/** A plain movement between two accounts (kind escrow.hold unless told). */
function pay(store: Store, from: string, to: string, asset: Asset, amount: number, at: number, over: { jobId?: string; kind?: 'settlement' } = {}) {
  return store.postTransfer({
    kind: over.kind ?? 'escrow.hold',
    postings: move(asset, from, [{ account: to, amount }]),
    at,
    memo: `${from} → ${to}`,
    jobId: over.jobId ?? null,
  });
}

function registerOwned(store: Store, nodeId: string, providerId: string | undefined, now = T0) {
  return store.registerNode({ id: nodeId, publicKey: `key-${nodeId}`, advertisement: advertisement(), now, ...(providerId ? { providerId } : {}) });
}

/** Every transfer, oldest first, through the paged listing. */
async function allTransfers(store: Store): Promise<TransferRecord[]> {
  const out: TransferRecord[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await store.listTransfers({ limit: 50, ...(cursor ? { cursor } : {}) });
    out.push(...page.items);
    if (!page.nextCursor) break;
    cursor = page.nextCursor;
  }
  return out.reverse();
}

function assertBalancedTotals(totals: LedgerTotals[]): void {
  for (const t of totals) {
    assert.equal(t.inside, t.minted, `${t.asset}: inside equals minted`);
    assert.equal(t.negativeAccounts, 0, `${t.asset}: no account below zero`);
  }
}

const PRICE: AttemptPriceRecord = {
  asset: 'usdc',
  pricePerUnitHour: 2 * USDC,
  units: 1,
  feeBps: 500,
  providerId: 'prov-1',
  stakeLock: 30 * USDC,
  marketClass: 'h100-80g',
};

/** A mint straight to `account` (any account, not only wallets). */
const mintTo = (store: Store, account: string, amount: number) =>
  store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account, amount }]), at: T0, memo: `test funds for ${account}` });

export function ledgerTests(open: OpenStore): void {
  test('postTransfer: a mint moves world → wallet; balances, postings and the wallet statement carry balanceAfter', () =>
    withStore(open, async (store) => {
      assert.equal(await store.getBalance(ACCOUNTS.wallet('alice'), 'usdc'), 0);
      const t1 = await mint(store, 'alice', 'usdc', 100 * USDC, T0);
      assert.equal(t1.kind, 'mint');
      assert.equal(t1.at, T0);
      assert.equal(t1.memo, 'test funds');
      assert.deepEqual([t1.jobId, t1.attemptId, t1.nodeId, t1.reference], [null, null, null, null]);
      assert.deepEqual(
        t1.postings.map((p) => [p.account, p.asset, p.amount, p.balanceAfter]).sort(),
        [
          ['wallet:alice', 'usdc', 100 * USDC, 100 * USDC],
          ['world', 'usdc', -100 * USDC, -100 * USDC],
        ],
      );
      const t2 = await mint(store, 'alice', 'credit', 7, T0 + 1);
      const t3 = await pay(store, ACCOUNTS.wallet('alice'), ACCOUNTS.wallet('bob'), 'usdc', 30 * USDC, T0 + 2);
      const t4 = await mint(store, 'alice', 'usdc', 5, T0 + 3);
      assert.ok(t1.seq < t2.seq && t2.seq < t3.seq && t3.seq < t4.seq, 'seq grows');
      assert.equal(await store.getBalance(ACCOUNTS.wallet('alice'), 'usdc'), 70 * USDC + 5);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('alice'), 'credit'), 7);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('bob'), 'usdc'), 30 * USDC);
      assert.equal(await store.getBalance(ACCOUNTS.world, 'usdc'), -100 * USDC - 5);

      // The statement: newest first, every asset, paged without gaps or duplicates.
      const seen: WalletEntryRecord[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 10; i++) {
        const page = await store.walletHistory('alice', { limit: 3, ...(cursor ? { cursor } : {}) });
        seen.push(...page.items);
        if (!page.nextCursor) break;
        cursor = page.nextCursor;
      }
      assert.deepEqual(
        seen.map((e) => [e.transferId, e.seq, e.kind, e.asset, e.amount, e.balanceAfter, e.at]),
        [
          [t4.id, t4.seq, 'mint', 'usdc', 5, 70 * USDC + 5, T0 + 3],
          [t3.id, t3.seq, 'escrow.hold', 'usdc', -30 * USDC, 70 * USDC, T0 + 2],
          [t2.id, t2.seq, 'mint', 'credit', 7, 7, T0 + 1],
          [t1.id, t1.seq, 'mint', 'usdc', 100 * USDC, 100 * USDC, T0],
        ],
      );
      assert.equal(seen[1]?.memo, 'wallet:alice → wallet:bob');
      assert.equal(seen[1]?.jobId, null);
      const credit = await store.walletHistory('alice', { asset: 'credit', limit: 10 });
      assert.deepEqual(
        credit.items.map((e) => e.transferId),
        [t2.id],
      );
      assert.equal(credit.nextCursor, null);
      assert.deepEqual((await store.walletHistory('nobody', { limit: 10 })).items, []);
      await assert.rejects(store.walletHistory('alice', { limit: 2, cursor: 'garbage' }), code('REQUEST_INVALID'));
    }));

  test('postTransfer: a transfer that would overdraw is refused with INSUFFICIENT_FUNDS and writes nothing; unbalanced postings are rejected', () =>
    withStore(open, async (store) => {
      await mint(store, 'alice', 'usdc', 10 * USDC);
      const before = { transfers: await allTransfers(store), totals: await store.ledgerTotals() };
      await assert.rejects(
        store.postTransfer({
          kind: 'escrow.hold',
          postings: move('usdc', ACCOUNTS.wallet('alice'), [
            { account: ACCOUNTS.escrow('job-1'), amount: 8 * USDC },
            { account: ACCOUNTS.treasury, amount: 4 * USDC },
          ]),
          at: T0 + 1,
          memo: 'too much',
        }),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'INSUFFICIENT_FUNDS');
          assert.match(err.message, /wallet:alice/);
          assert.match(err.message, /12\.000000/, 'what it needs');
          assert.match(err.message, /10\.000000/, 'what it has');
          assert.match(err.message, /2\.000000/, 'the shortfall');
          return true;
        },
      );
      // An account that never had money.
      await assert.rejects(pay(store, ACCOUNTS.wallet('bob'), ACCOUNTS.wallet('alice'), 'usdc', 1, T0 + 2), code('INSUFFICIENT_FUNDS'));
      // Same asset, other account: not covered by alice's usdc.
      await assert.rejects(pay(store, ACCOUNTS.wallet('alice'), ACCOUNTS.wallet('bob'), 'credit', 1, T0 + 2), code('INSUFFICIENT_FUNDS'));
      // Postings that do not sum to zero never reach the database.
      await assert.rejects(
        store.postTransfer({
          kind: 'mint',
          postings: [
            { account: ACCOUNTS.world, asset: 'usdc', amount: -5 },
            { account: ACCOUNTS.wallet('alice'), asset: 'usdc', amount: 6 },
          ],
          at: T0 + 3,
          memo: 'unbalanced',
        }),
        /sum to/,
      );
      await assert.rejects(
        store.postTransfer({
          kind: 'mint',
          postings: [
            { account: ACCOUNTS.world, asset: 'usdc', amount: -5 },
            { account: ACCOUNTS.wallet('alice'), asset: 'credit', amount: 5 },
          ],
          at: T0 + 3,
          memo: 'two assets',
        }),
        /sum to/,
      );
      assert.deepEqual(await allTransfers(store), before.transfers);
      assert.deepEqual(await store.ledgerTotals(), before.totals);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('alice'), 'usdc'), 10 * USDC);
      assert.equal(await store.getBalance(ACCOUNTS.escrow('job-1'), 'usdc'), 0);
      assert.equal(await store.getBalance(ACCOUNTS.treasury, 'usdc'), 0);
      // Spending exactly what is there is fine: balance 0 is not below zero.
      await pay(store, ACCOUNTS.wallet('alice'), ACCOUNTS.wallet('bob'), 'usdc', 10 * USDC, T0 + 4);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('alice'), 'usdc'), 0);
    }));

  test('listTransfers: newest first with their postings, paged by cursor, filtered by job or account; jobTransfers oldest first', () =>
    withStore(open, async (store) => {
      const posted: TransferRecord[] = [];
      posted.push(await mint(store, 'alice', 'usdc', 100 * USDC, T0));
      posted.push(await mint(store, 'bob', 'usdc', 50 * USDC, T0 + 1));
      posted.push(await pay(store, ACCOUNTS.wallet('alice'), ACCOUNTS.escrow('job-a'), 'usdc', 20 * USDC, T0 + 2, { jobId: 'job-a' }));
      posted.push(await pay(store, ACCOUNTS.wallet('bob'), ACCOUNTS.escrow('job-b'), 'usdc', 10 * USDC, T0 + 3, { jobId: 'job-b' }));
      posted.push(
        await store.postTransfer({
          kind: 'settlement',
          postings: move('usdc', ACCOUNTS.escrow('job-a'), [
            { account: ACCOUNTS.wallet('prov'), amount: 9 * USDC },
            { account: ACCOUNTS.treasury, amount: 1 * USDC },
          ]),
          at: T0 + 4,
          memo: 'chunk',
          jobId: 'job-a',
          attemptId: 'att-a',
          nodeId: 'node-a',
        }),
      );
      posted.push(await pay(store, ACCOUNTS.escrow('job-a'), ACCOUNTS.wallet('alice'), 'usdc', 10 * USDC, T0 + 5, { jobId: 'job-a' }));

      const all = await allTransfers(store);
      assert.deepEqual(all, posted, 'the listing returns exactly what postTransfer returned');
      const settlement = all[4];
      assert.deepEqual(
        [settlement?.jobId, settlement?.attemptId, settlement?.nodeId],
        ['job-a', 'att-a', 'node-a'],
      );
      assert.equal(settlement?.postings.length, 3);

      const first = await store.listTransfers({ limit: 4 });
      assert.deepEqual(
        first.items.map((t) => t.seq),
        posted
          .slice(2)
          .reverse()
          .map((t) => t.seq),
      );
      assert.ok(first.nextCursor);
      const second = await store.listTransfers({ limit: 4, cursor: first.nextCursor });
      assert.deepEqual(
        second.items.map((t) => t.seq),
        [posted[1]?.seq, posted[0]?.seq],
      );
      assert.equal(second.nextCursor, null);

      const jobA = await store.listTransfers({ limit: 10, jobId: 'job-a' });
      assert.deepEqual(
        jobA.items.map((t) => t.seq),
        [posted[5]?.seq, posted[4]?.seq, posted[2]?.seq],
      );
      const jobAPaged = await store.listTransfers({ limit: 2, jobId: 'job-a' });
      assert.equal(jobAPaged.items.length, 2);
      const jobARest = await store.listTransfers({ limit: 2, jobId: 'job-a', cursor: jobAPaged.nextCursor ?? undefined });
      assert.deepEqual(
        jobARest.items.map((t) => t.seq),
        [posted[2]?.seq],
      );
      assert.equal(jobARest.nextCursor, null);

      const treasury = await store.listTransfers({ limit: 10, account: ACCOUNTS.treasury });
      assert.deepEqual(
        treasury.items.map((t) => t.seq),
        [posted[4]?.seq],
      );
      assert.equal(treasury.items[0]?.postings.length, 3, 'a filtered transfer still carries all its postings');
      const bob = await store.listTransfers({ limit: 10, account: ACCOUNTS.wallet('bob') });
      assert.deepEqual(
        bob.items.map((t) => t.seq),
        [posted[3]?.seq, posted[1]?.seq],
      );
      assert.deepEqual((await store.listTransfers({ limit: 10, jobId: 'nope' })).items, []);

      assert.deepEqual(await store.jobTransfers('job-a'), [posted[2], posted[4], posted[5]]);
      assert.deepEqual(await store.jobTransfers('job-b'), [posted[3]]);
      assert.deepEqual(await store.jobTransfers('nope'), []);
    }));

  test('escrowOfBuyer sums the escrow of the buyer’s unfinished jobs per asset', () =>
    withStore(open, async (store) => {
      for (const [id, buyerId] of [
        ['job-1', 'buyer-1'],
        ['job-2', 'buyer-1'],
        ['job-3', 'buyer-1'],
        ['job-4', 'buyer-2'],
      ] as const) {
        await submit(store, id, T0, { buyerId });
      }
      await mint(store, 'buyer-1', 'usdc', 100 * USDC);
      await mint(store, 'buyer-1', 'credit', 100);
      await mint(store, 'buyer-2', 'usdc', 100 * USDC);
      await pay(store, ACCOUNTS.wallet('buyer-1'), ACCOUNTS.escrow('job-1'), 'usdc', 10 * USDC, T0 + 1, { jobId: 'job-1' });
      await pay(store, ACCOUNTS.wallet('buyer-1'), ACCOUNTS.escrow('job-2'), 'usdc', 5 * USDC, T0 + 1, { jobId: 'job-2' });
      await pay(store, ACCOUNTS.wallet('buyer-1'), ACCOUNTS.escrow('job-2'), 'credit', 40, T0 + 1, { jobId: 'job-2' });
      await pay(store, ACCOUNTS.wallet('buyer-2'), ACCOUNTS.escrow('job-4'), 'usdc', 7 * USDC, T0 + 1, { jobId: 'job-4' });
      assert.deepEqual(await store.escrowOfBuyer('buyer-1'), { usdc: 15 * USDC, credit: 40 });
      assert.deepEqual(await store.escrowOfBuyer('buyer-2'), { usdc: 7 * USDC });
      assert.deepEqual(await store.escrowOfBuyer('nobody'), {});
      // A finished job no longer counts (whatever its escrow account still shows).
      await store.requestCancel('job-1', T0 + 2);
      assert.deepEqual(await store.escrowOfBuyer('buyer-1'), { usdc: 5 * USDC, credit: 40 });
      // An emptied escrow is absent, not 0.
      await pay(store, ACCOUNTS.escrow('job-2'), ACCOUNTS.wallet('buyer-1'), 'credit', 40, T0 + 3, { jobId: 'job-2' });
      assert.deepEqual(await store.escrowOfBuyer('buyer-1'), { usdc: 5 * USDC });
    }));

  test('ledgerTotals: per asset, every account class summed; inside equals minted and nothing is negative', () =>
    withStore(open, async (store) => {
      assert.deepEqual(await store.ledgerTotals(), []);
      await registerOwned(store, 'node-1', 'prov');
      await mint(store, 'alice', 'usdc', 100 * USDC);
      await mint(store, 'prov', 'usdc', 50 * USDC);
      await mint(store, 'alice', 'credit', 1_000);
      await pay(store, ACCOUNTS.wallet('alice'), ACCOUNTS.escrow('job-1'), 'usdc', 20 * USDC, T0 + 1, { jobId: 'job-1' });
      await store.postTransfer({
        kind: 'settlement',
        postings: move('usdc', ACCOUNTS.escrow('job-1'), [
          { account: ACCOUNTS.wallet('prov'), amount: 9 * USDC },
          { account: ACCOUNTS.treasury, amount: 1 * USDC },
        ]),
        at: T0 + 2,
        memo: 'chunk',
        jobId: 'job-1',
      });
      await store.addStake({ nodeId: 'node-1', providerId: 'prov', amount: 30 * USDC, now: T0 + 3 });
      await store.unbondStake({ id: 'ub-1', nodeId: 'node-1', providerId: 'prov', amount: 5 * USDC, releaseAt: T0 + 100, now: T0 + 4 });
      await store.requestPayout({ id: 'po-1', accountId: 'prov', asset: 'usdc', amount: 4 * USDC, destination: '0xabc', adapter: 'manual', now: T0 + 5 });
      await store.requestPayout({ id: 'po-2', accountId: 'prov', asset: 'usdc', amount: 3 * USDC, destination: '0xabc', adapter: 'manual', now: T0 + 6 });
      await store.completePayout('po-2', 'receipt-2', T0 + 7);
      await store.requestPayout({ id: 'po-3', accountId: 'alice', asset: 'credit', amount: 100, destination: 'x', adapter: 'manual', now: T0 + 8 });
      await store.rejectPayout('po-3', 'no credit payouts', T0 + 9);

      const totals = await store.ledgerTotals();
      const usdc = totals.find((t) => t.asset === 'usdc');
      const credit = totals.find((t) => t.asset === 'credit');
      assert.deepEqual(totals.map((t) => t.asset).sort(), ['credit', 'usdc']);
      // usdc: 150 minted, 3 paid out; wallets alice 80, prov 50+9−30−4−3 = 22; escrow 10; stake 25 + 5 unbonding; payout 4; treasury 1.
      assert.deepEqual(usdc, {
        asset: 'usdc',
        minted: 147 * USDC,
        inside: 147 * USDC,
        treasury: 1 * USDC,
        wallets: 102 * USDC,
        escrow: 10 * USDC,
        stake: 30 * USDC,
        pendingPayouts: 4 * USDC,
        pendingPay: 0,
        bonds: 0,
        negativeAccounts: 0,
      });
      assert.deepEqual(credit, { asset: 'credit', minted: 1_000, inside: 1_000, treasury: 0, wallets: 1_000, escrow: 0, stake: 0, pendingPayouts: 0, pendingPay: 0, bonds: 0, negativeAccounts: 0 });
      assertBalancedTotals(totals);
    }));

  test('no balance and no total passes 2^53 − 1: the transfer that would is REQUEST_INVALID and writes nothing; totals at the limit are exact', () =>
    withStore(open, async (store) => {
      await mintTo(store, ACCOUNTS.wallet('a'), MAX_AMOUNT - 1);
      const before = (await store.listTransfers({ limit: 10 })).items.length;
      await assert.rejects(mintTo(store, ACCOUNTS.wallet('b'), 2), (err: unknown) => {
        code('REQUEST_INVALID')(err);
        assert.match((err as Error).message, /largest amount/);
        return true;
      });
      await assert.rejects(mintTo(store, ACCOUNTS.wallet('a'), 2), code('REQUEST_INVALID'));
      assert.equal((await store.listTransfers({ limit: 10 })).items.length, before, 'nothing written');
      assert.equal(await store.getBalance(ACCOUNTS.wallet('b'), 'usdc'), 0);
      await mintTo(store, ACCOUNTS.wallet('b'), 1);
      await store.postTransfer({ kind: 'escrow.hold', postings: move('usdc', ACCOUNTS.wallet('a'), [{ account: ACCOUNTS.escrow('j'), amount: 5 }]), at: T0, memo: 'hold' });
      const [t] = await store.ledgerTotals();
      assert.deepEqual(
        t && [t.minted, t.inside, t.wallets, t.escrow, t.negativeAccounts],
        [MAX_AMOUNT, MAX_AMOUNT, MAX_AMOUNT - 5, 5, 0],
      );
      assert.equal(await store.getBalance(ACCOUNTS.world, 'usdc'), -MAX_AMOUNT);
      // Money moving inside the network is never refused for the limit.
      await store.postTransfer({ kind: 'escrow.release', postings: move('usdc', ACCOUNTS.escrow('j'), [{ account: ACCOUNTS.wallet('b'), amount: 5 }]), at: T0, memo: 'release' });
      assert.equal(await store.getBalance(ACCOUNTS.wallet('b'), 'usdc'), 6);
    }));

  test('payouts: request holds the amount, complete pays it to the world with its reference, reject returns it; NOT_FOUND and CONFLICT', () =>
    withStore(open, async (store) => {
      await mint(store, 'prov', 'usdc', 10 * USDC);
      const base = { accountId: 'prov', asset: 'usdc' as const, destination: '0xdest', adapter: 'manual' };
      await assert.rejects(store.requestPayout({ ...base, id: 'po-big', amount: 11 * USDC, now: T0 + 1 }), code('INSUFFICIENT_FUNDS'));
      assert.equal(await store.getPayout('po-big'), undefined, 'a refused request writes no payout');
      assert.deepEqual(await store.listTransfers({ limit: 10, account: ACCOUNTS.payout('po-big') }), { items: [], nextCursor: null });

      const p1 = await store.requestPayout({ ...base, id: 'po-1', amount: 4 * USDC, now: T0 + 1 });
      assert.deepEqual(p1, {
        id: 'po-1',
        accountId: 'prov',
        asset: 'usdc',
        amount: 4 * USDC,
        destination: '0xdest',
        adapter: 'manual',
        state: 'pending',
        reference: null,
        reason: null,
        createdAt: T0 + 1,
        updatedAt: T0 + 1,
      });
      assert.deepEqual(await store.getPayout('po-1'), p1);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov'), 'usdc'), 6 * USDC);
      assert.equal(await store.getBalance(ACCOUNTS.payout('po-1'), 'usdc'), 4 * USDC);
      await assert.rejects(store.requestPayout({ ...base, id: 'po-1', amount: 1, now: T0 + 2 }), code('CONFLICT'));
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov'), 'usdc'), 6 * USDC, 'a duplicate id moves nothing');

      const done = await store.completePayout('po-1', 'receipt-1', T0 + 3);
      assert.deepEqual(done, { ...p1, state: 'completed', reference: 'receipt-1', updatedAt: T0 + 3 });
      assert.equal(await store.getBalance(ACCOUNTS.payout('po-1'), 'usdc'), 0);
      assert.equal(await store.getBalance(ACCOUNTS.world, 'usdc'), -6 * USDC);
      const [complete, request] = (await store.listTransfers({ limit: 10, account: ACCOUNTS.payout('po-1') })).items;
      assert.equal(request?.kind, 'payout.request');
      assert.equal(complete?.kind, 'payout.complete');
      assert.equal(complete?.reference, 'receipt-1');
      await assert.rejects(store.completePayout('po-1', 'receipt-again', T0 + 4), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'CONFLICT');
        assert.match(err.message, /po-1.*completed/);
        return true;
      });
      await assert.rejects(store.rejectPayout('po-1', 'too late', T0 + 4), code('CONFLICT'));
      assert.equal(await store.getBalance(ACCOUNTS.world, 'usdc'), -6 * USDC, 'a refused completion moves nothing');
      await assert.rejects(store.completePayout('nope', 'r', T0 + 4), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'NOT_FOUND');
        assert.match(err.message, /nope/);
        return true;
      });
      await assert.rejects(store.rejectPayout('nope', 'r', T0 + 4), code('NOT_FOUND'));

      await store.requestPayout({ ...base, id: 'po-2', amount: 5 * USDC, now: T0 + 5 });
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov'), 'usdc'), 1 * USDC);
      const rejected = await store.rejectPayout('po-2', 'destination unreachable', T0 + 6);
      assert.equal(rejected.state, 'rejected');
      assert.equal(rejected.reason, 'destination unreachable');
      assert.equal(rejected.reference, null);
      assert.equal(rejected.updatedAt, T0 + 6);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov'), 'usdc'), 6 * USDC);
      assert.equal(await store.getBalance(ACCOUNTS.payout('po-2'), 'usdc'), 0);
      await assert.rejects(store.completePayout('po-2', 'r', T0 + 7), code('CONFLICT'));

      await mint(store, 'other', 'credit', 10);
      await store.requestPayout({ ...base, id: 'po-3', accountId: 'other', asset: 'credit', amount: 10, now: T0 + 8 });
      const ids = async (q: Parameters<Store['listPayouts']>[0]) => (await store.listPayouts(q)).map((p) => p.id);
      assert.deepEqual(await ids({ limit: 10 }), ['po-3', 'po-2', 'po-1']);
      assert.deepEqual(await ids({ limit: 2 }), ['po-3', 'po-2']);
      assert.deepEqual(await ids({ limit: 10, accountId: 'prov' }), ['po-2', 'po-1']);
      assert.deepEqual(await ids({ limit: 10, state: 'pending' }), ['po-3']);
      assert.deepEqual(await ids({ limit: 10, accountId: 'prov', state: 'completed' }), ['po-1']);
      assertBalancedTotals(await store.ledgerTotals());
    }));

  test('stake: add and unbond check the node and its owner; only free stake unbonds; due unbondings return to the wallet once', () =>
    withStore(open, async (store) => {
      await registerOwned(store, 'node-1', 'prov');
      await registerOwned(store, 'node-2', 'other');
      await registerOwned(store, 'node-3', undefined);
      await mint(store, 'prov', 'usdc', 100 * USDC);
      await mint(store, 'prov', 'credit', 100 * USDC);

      const add = (nodeId: string, providerId: string, amount: number) => store.addStake({ nodeId, providerId, amount, now: T0 + 1 });
      await assert.rejects(add('node-x', 'prov', USDC), code('NODE_NOT_FOUND'));
      await assert.rejects(add('node-2', 'prov', USDC), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'FORBIDDEN');
        assert.match(err.message, /node-2 belongs to another provider/);
        return true;
      });
      await assert.rejects(add('node-3', 'prov', USDC), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'FORBIDDEN');
        assert.match(err.message, /node-3 has no provider/);
        return true;
      });
      await assert.rejects(add('node-1', 'prov', 101 * USDC), code('INSUFFICIENT_FUNDS'));
      assert.deepEqual(await store.listStakes(), []);
      await assert.rejects(store.getStake('node-x'), code('NODE_NOT_FOUND'));
      assert.deepEqual(await store.getStake('node-3'), { nodeId: 'node-3', providerId: null, asset: 'usdc', staked: 0, locked: 0, unbonding: [] });

      const staked = await add('node-1', 'prov', 60 * USDC);
      assert.deepEqual(staked, { nodeId: 'node-1', providerId: 'prov', asset: 'usdc', staked: 60 * USDC, locked: 0, unbonding: [] });
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov'), 'usdc'), 40 * USDC);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov'), 'credit'), 100 * USDC, 'stake is always usdc');
      const [deposit] = (await store.listTransfers({ limit: 1 })).items;
      assert.equal(deposit?.kind, 'stake.deposit');
      assert.equal(deposit?.nodeId, 'node-1');

      const unbond = (id: string, amount: number, releaseAt: number, providerId = 'prov', nodeId = 'node-1') =>
        store.unbondStake({ id, nodeId, providerId, amount, releaseAt, now: T0 + 2 });
      await assert.rejects(unbond('ub-x', USDC, T0 + 10, 'other'), code('FORBIDDEN'));
      await assert.rejects(unbond('ub-x', USDC, T0 + 10, 'prov', 'node-x'), code('NODE_NOT_FOUND'));
      await assert.rejects(unbond('ub-x', 61 * USDC, T0 + 10), (err: Error & { code?: string }) => {
        assert.equal(err.code, 'INSUFFICIENT_FUNDS');
        assert.match(err.message, /60\.000000/, 'what is staked');
        assert.match(err.message, /61\.000000/, 'what was asked');
        return true;
      });
      const u1 = await unbond('ub-1', 10 * USDC, T0 + 1_000);
      assert.equal(u1.staked, 50 * USDC);
      assert.deepEqual(u1.unbonding, [{ id: 'ub-1', nodeId: 'node-1', providerId: 'prov', amount: 10 * USDC, releaseAt: T0 + 1_000 }]);
      const u2 = await unbond('ub-2', 15 * USDC, T0 + 500);
      assert.deepEqual(
        u2.unbonding.map((u) => u.id),
        ['ub-2', 'ub-1'],
        'by release time',
      );
      assert.equal(await store.getBalance(ACCOUNTS.unbonding('node-1'), 'usdc'), 25 * USDC);
      assert.deepEqual(await store.listStakes(), [{ nodeId: 'node-1', staked: 35 * USDC, locked: 0 }]);

      assert.equal(await store.releaseUnbonded(T0 + 499, 10), 0, 'nothing due yet');
      assert.equal(await store.releaseUnbonded(T0 + 500, 10), 1);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov'), 'usdc'), 55 * USDC);
      assert.deepEqual(
        (await store.getStake('node-1')).unbonding.map((u) => u.id),
        ['ub-1'],
      );
      assert.equal(await store.releaseUnbonded(T0 + 600, 10), 0, 'a released unbonding is not paid twice');
      assert.equal(await store.releaseUnbonded(T0 + 5_000, 10), 1);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov'), 'usdc'), 65 * USDC);
      assert.equal(await store.getBalance(ACCOUNTS.unbonding('node-1'), 'usdc'), 0);
      const [release] = (await store.listTransfers({ limit: 1 })).items;
      assert.equal(release?.kind, 'stake.release');
      assert.equal(release?.nodeId, 'node-1');
      assert.deepEqual(await store.getStake('node-1'), { nodeId: 'node-1', providerId: 'prov', asset: 'usdc', staked: 35 * USDC, locked: 0, unbonding: [] });
      assert.equal(await store.releaseUnbonded(T0 + 10_000, 10), 0);

      // Unbonding all that is free is allowed.
      await unbond('ub-3', 35 * USDC, T0 + 20_000);
      assert.equal((await store.getStake('node-1')).staked, 0);
      assert.deepEqual(await store.listStakes(), []);
      assertBalancedTotals(await store.ledgerTotals());
    }));

  test('stake: releaseUnbonded pays at most `limit` per call', () =>
    withStore(open, async (store) => {
      await registerOwned(store, 'node-1', 'prov');
      await mint(store, 'prov', 'usdc', 10 * USDC);
      await store.addStake({ nodeId: 'node-1', providerId: 'prov', amount: 10 * USDC, now: T0 });
      for (let i = 0; i < 3; i++) {
        await store.unbondStake({ id: `ub-${i}`, nodeId: 'node-1', providerId: 'prov', amount: USDC, releaseAt: T0 + i, now: T0 });
      }
      assert.equal(await store.releaseUnbonded(T0 + 10, 2), 2);
      assert.equal(await store.releaseUnbonded(T0 + 10, 2), 1);
      assert.equal(await store.releaseUnbonded(T0 + 10, 2), 0);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('prov'), 'usdc'), 3 * USDC);
    }));

  test('stake: the stake locks of active priced attempts are locked, not free to unbond', () =>
    withStore(open, async (store) => {
      await registerOwned(store, 'node-1', 'prov-1');
      await mint(store, 'prov-1', 'usdc', 100 * USDC);
      await store.addStake({ nodeId: 'node-1', providerId: 'prov-1', amount: 50 * USDC, now: T0 });
      await submit(store, 'job-1', T0);
      const [attempt] = await store.assign([{ ...placement('job-1', 'att-1', 'node-1', T0 + 60_000), price: PRICE }], T0 + 1);
      assert.equal(attempt?.id, 'att-1');
      const stake = await store.getStake('node-1');
      assert.equal(stake.staked, 50 * USDC);
      assert.equal(stake.locked, 30 * USDC);
      assert.deepEqual(await store.listStakes(), [{ nodeId: 'node-1', staked: 50 * USDC, locked: 30 * USDC }]);
      await assert.rejects(
        store.unbondStake({ id: 'ub-1', nodeId: 'node-1', providerId: 'prov-1', amount: 21 * USDC, releaseAt: T0 + 10, now: T0 + 2 }),
        (err: Error & { code?: string }) => {
          assert.equal(err.code, 'INSUFFICIENT_FUNDS');
          for (const n of ['50.000000', '30.000000', '20.000000', '21.000000']) assert.ok(err.message.includes(n), `${err.message} names ${n}`);
          return true;
        },
      );
      const after = await store.unbondStake({ id: 'ub-1', nodeId: 'node-1', providerId: 'prov-1', amount: 20 * USDC, releaseAt: T0 + 10, now: T0 + 2 });
      assert.deepEqual([after.staked, after.locked], [30 * USDC, 30 * USDC]);
    }));

  test('slash: pays the legs in order out of the node’s stake, cut where the stake runs out; recorded with a node event', () =>
    withStore(open, async (store) => {
      await registerOwned(store, 'node-1', 'prov');
      await registerOwned(store, 'node-2', 'prov');
      await mint(store, 'prov', 'usdc', 100 * USDC);
      await store.addStake({ nodeId: 'node-1', providerId: 'prov', amount: 10 * USDC, now: T0 });

      const full = await store.slash({
        nodeId: 'node-1',
        to: [
          { account: ACCOUNTS.wallet('buyer'), amount: 3 * USDC },
          { account: ACCOUNTS.treasury, amount: 1 * USDC },
        ],
        reason: 'wrong output',
        jobId: 'job-1',
        now: T0 + 1,
      });
      assert.equal(full.kind, 'slash');
      assert.equal(full.memo, 'wrong output');
      assert.deepEqual([full.jobId, full.nodeId], ['job-1', 'node-1']);
      assert.equal(await store.getBalance(ACCOUNTS.stake('node-1'), 'usdc'), 6 * USDC);
      assert.equal(await store.getBalance(ACCOUNTS.wallet('buyer'), 'usdc'), 3 * USDC);
      assert.equal(await store.getBalance(ACCOUNTS.treasury, 'usdc'), 1 * USDC);

      const cut = await store.slash({
        nodeId: 'node-1',
        to: [
          { account: ACCOUNTS.wallet('buyer'), amount: 4 * USDC },
          { account: ACCOUNTS.wallet('reporter'), amount: 5 * USDC },
          { account: ACCOUNTS.treasury, amount: 2 * USDC },
        ],
        reason: 'again',
        now: T0 + 2,
      });
      assert.equal(cut.jobId, null);
      assert.deepEqual(
        cut.postings.map((p) => [p.account, p.amount]).sort(),
        [
          ['stake:node-1', -6 * USDC],
          ['wallet:buyer', 4 * USDC],
          ['wallet:reporter', 2 * USDC],
        ],
      );
      assert.equal(await store.getBalance(ACCOUNTS.stake('node-1'), 'usdc'), 0);
      assert.equal(await store.getBalance(ACCOUNTS.treasury, 'usdc'), 1 * USDC, 'the leg past the stake is dropped');

      const empty = await store.slash({ nodeId: 'node-2', to: [{ account: ACCOUNTS.treasury, amount: USDC }], reason: 'no stake', now: T0 + 3 });
      assert.deepEqual(empty.postings, []);
      assert.equal(empty.kind, 'slash');
      assert.deepEqual(
        (await store.listTransfers({ limit: 10, account: ACCOUNTS.stake('node-1') })).items.map((t) => t.kind),
        ['slash', 'slash', 'stake.deposit'],
      );
      await assert.rejects(store.slash({ nodeId: 'node-x', to: [], reason: 'x', now: T0 }), code('NODE_NOT_FOUND'));

      const slashed = (await store.listEvents('node', 'node-1', 100)).filter((e) => e.type === 'node.slashed');
      assert.deepEqual(
        slashed.map((e) => [e.at, e.data.amount, e.data.reason]),
        [
          [T0 + 1, 4 * USDC, 'wrong output'],
          [T0 + 2, 6 * USDC, 'again'],
        ],
      );
      assert.ok((await eventTypes(store, 'node', 'node-2')).includes('node.slashed'));
      assertBalancedTotals(await store.ledgerTotals());
    }));

  test('pendingPayOf: per asset, the positive pending:<attempt> balances of the provider’s attempts, with their jobs', () =>
    withStore(open, async (store) => {
      for (const [node, prov] of [
        ['node-1a', 'prov-1'],
        ['node-1b', 'prov-1'],
        ['node-2', 'prov-2'],
      ] as const) {
        await registerOwned(store, node, prov);
        await mint(store, prov, 'usdc', 100 * USDC);
        await store.addStake({ nodeId: node, providerId: prov, amount: 50 * USDC, now: T0 });
      }
      for (const id of ['job-1', 'job-2', 'job-3']) await submit(store, id, T0);
      await store.assign(
        [
          { ...placement('job-1', 'att-1', 'node-1a', T0 + 60_000), price: PRICE },
          { ...placement('job-2', 'att-2', 'node-1b', T0 + 60_000), price: PRICE },
          { ...placement('job-3', 'att-3', 'node-2', T0 + 60_000), price: { ...PRICE, providerId: 'prov-2' } },
        ],
        T0 + 1,
      );
      assert.deepEqual(await store.pendingPayOf('prov-1'), [], 'nothing held yet');
      await mintTo(store, ACCOUNTS.pending('att-1'), 3 * USDC);
      await mintTo(store, ACCOUNTS.pending('att-2'), 2 * USDC);
      await mintTo(store, ACCOUNTS.pending('att-3'), 7 * USDC);
      await store.postTransfer({ kind: 'mint', postings: move('credit', ACCOUNTS.world, [{ account: ACCOUNTS.pending('att-1'), amount: 40 }]), at: T0, memo: 'credit held' });
      assert.deepEqual(await store.pendingPayOf('prov-1'), [
        { asset: 'credit', amount: 40, jobs: 1, nextWindowClosesAt: null },
        { asset: 'usdc', amount: 5 * USDC, jobs: 2, nextWindowClosesAt: null },
      ]);
      assert.deepEqual(await store.pendingPayOf('prov-2'), [{ asset: 'usdc', amount: 7 * USDC, jobs: 1, nextWindowClosesAt: null }]);
      assert.deepEqual(await store.pendingPayOf('nobody'), []);
      // Released pay (a balance back at 0) is no longer held.
      await store.postTransfer({ kind: 'pay.release', postings: move('usdc', ACCOUNTS.pending('att-1'), [{ account: ACCOUNTS.wallet('prov-1'), amount: 3 * USDC }]), at: T0 + 2, memo: 'released' });
      assert.deepEqual(await store.pendingPayOf('prov-1'), [
        { asset: 'credit', amount: 40, jobs: 1, nextWindowClosesAt: null },
        { asset: 'usdc', amount: 2 * USDC, jobs: 1, nextWindowClosesAt: null },
      ]);
      assertBalancedTotals(await store.ledgerTotals());
    }));

  test('treasuryFlows: every posting to the treasury counted per (asset, kind), in the transfer; a refused transfer counts nothing', () =>
    withStore(open, async (store) => {
      assert.deepEqual(await store.treasuryFlows(), []);
      await mintTo(store, ACCOUNTS.treasury, 100 * USDC);
      await pay(store, ACCOUNTS.treasury, ACCOUNTS.escrow('check-1'), 'usdc', 30 * USDC, T0 + 1, { jobId: 'check-1' });
      await pay(store, ACCOUNTS.escrow('check-1'), ACCOUNTS.treasury, 'usdc', 1 * USDC, T0 + 2, { jobId: 'check-1', kind: 'settlement' });
      await store.postTransfer({ kind: 'escrow.release', postings: move('usdc', ACCOUNTS.escrow('check-1'), [{ account: ACCOUNTS.treasury, amount: 20 * USDC }]), at: T0 + 3, memo: 'unspent back' });
      await mint(store, 'alice', 'usdc', 5 * USDC);
      await pay(store, ACCOUNTS.wallet('alice'), ACCOUNTS.escrow('job-9'), 'usdc', 5 * USDC, T0 + 4, { jobId: 'job-9' }); // no treasury leg: not counted
      await assert.rejects(pay(store, ACCOUNTS.treasury, ACCOUNTS.escrow('check-2'), 'usdc', 1000 * USDC, T0 + 5), code('INSUFFICIENT_FUNDS'));
      const flows = await store.treasuryFlows();
      assert.deepEqual(flows, [
        { asset: 'usdc', kind: 'escrow.hold', in: 0, out: 30 * USDC },
        { asset: 'usdc', kind: 'escrow.release', in: 20 * USDC, out: 0 },
        { asset: 'usdc', kind: 'mint', in: 100 * USDC, out: 0 },
        { asset: 'usdc', kind: 'settlement', in: 1 * USDC, out: 0 },
      ]);
      assert.equal(
        flows.reduce((s, f) => s + f.in - f.out, 0),
        await store.getBalance(ACCOUNTS.treasury, 'usdc'),
        'the flows add up to the treasury balance',
      );
      // The audit budget read from them (core trust/audit-budget.ts).
      assert.deepEqual(auditBudgetOf('usdc', flows, 10_000), { asset: 'usdc', shareBps: 10_000, feeIncome: USDC, funded: 100 * USDC, spent: 10 * USDC, allowance: 101 * USDC, left: 91 * USDC });
      assert.equal(auditBudgetOf('usdc', flows, 2_500).allowance, 100 * USDC + USDC / 4);
    }));
}
