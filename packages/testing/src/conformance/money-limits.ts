/**
 * Conformance: money limits (issue 10 item 13). No balance passes 2^53 − 1 minor units and the world not
 * below −(2^53 − 1), so no wallet or ledger total can either: a transfer that would is REQUEST_INVALID with
 * the limit and writes nothing; totals at the limit read back exactly (PostgreSQL sums bigints as numeric).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS, MAX_AMOUNT, move, type Store } from '@gpux/core';
import { code, type OpenStore, T0, withStore } from './fixtures.js';

const mint = (store: Store, account: string, amount: number) =>
  store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account, amount }]), at: T0, memo: `test funds for ${account}` });

export function moneyLimitTests(open: OpenStore): void {
  test('no balance and no total passes 2^53 − 1: the transfer that would is REQUEST_INVALID and writes nothing; totals at the limit are exact', () =>
    withStore(open, async (store) => {
      await mint(store, ACCOUNTS.wallet('a'), MAX_AMOUNT - 1);
      const before = (await store.listTransfers({ limit: 10 })).items.length;
      await assert.rejects(mint(store, ACCOUNTS.wallet('b'), 2), (err: unknown) => {
        code('REQUEST_INVALID')(err);
        assert.match((err as Error).message, /largest amount/);
        return true;
      });
      await assert.rejects(mint(store, ACCOUNTS.wallet('a'), 2), code('REQUEST_INVALID'));
      assert.equal((await store.listTransfers({ limit: 10 })).items.length, before, 'nothing written');
      assert.equal(await store.getBalance(ACCOUNTS.wallet('b'), 'usdc'), 0);
      await mint(store, ACCOUNTS.wallet('b'), 1);
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
}
