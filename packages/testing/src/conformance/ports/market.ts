/** Conformance, market port: provider asks per class and the price index (latest, history). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { PricePointRecord } from '@gpux/core';
import { type OpenStore, T0, withStore } from '../fixtures.js';

const USDC = 1_000_000; // one USDC in minor units

export function marketTests(open: OpenStore): void {
  test('asks: set, replace and remove a provider’s ask per class; list all or one provider’s', () =>
    withStore(open, async (store) => {
      assert.deepEqual(await store.listAsks(), []);
      assert.deepEqual(await store.setAsk('prov-1', 'h100-80g', 2 * USDC, T0), [
        { providerId: 'prov-1', marketClass: 'h100-80g', pricePerGpuHour: 2 * USDC, updatedAt: T0 },
      ]);
      await store.setAsk('prov-1', 'a100-40g', 1 * USDC, T0 + 1);
      await store.setAsk('prov-2', 'h100-80g', 3 * USDC, T0 + 2);
      const replaced = await store.setAsk('prov-1', 'h100-80g', 2_500_000, T0 + 3);
      assert.deepEqual(replaced, [
        { providerId: 'prov-1', marketClass: 'a100-40g', pricePerGpuHour: 1 * USDC, updatedAt: T0 + 1 },
        { providerId: 'prov-1', marketClass: 'h100-80g', pricePerGpuHour: 2_500_000, updatedAt: T0 + 3 },
      ]);
      assert.deepEqual(await store.listAsks('prov-1'), replaced);
      assert.deepEqual(
        (await store.listAsks()).map((a) => [a.providerId, a.marketClass, a.pricePerGpuHour]),
        [
          ['prov-1', 'a100-40g', 1 * USDC],
          ['prov-1', 'h100-80g', 2_500_000],
          ['prov-2', 'h100-80g', 3 * USDC],
        ],
      );
      assert.deepEqual(await store.setAsk('prov-1', 'h100-80g', null, T0 + 4), [
        { providerId: 'prov-1', marketClass: 'a100-40g', pricePerGpuHour: 1 * USDC, updatedAt: T0 + 1 },
      ]);
      assert.deepEqual(await store.setAsk('prov-1', 'never-set', null, T0 + 5), await store.listAsks('prov-1'), 'removing a missing ask is a no-op');
      assert.deepEqual(await store.listAsks('nobody'), []);
      assert.equal((await store.listAsks()).length, 2);
    }));

  test('prices: record epochs, read the latest per class and the history oldest first (class, since, newest `limit`)', () =>
    withStore(open, async (store) => {
      assert.deepEqual(await store.latestPrices(), []);
      assert.deepEqual(await store.priceHistory({ limit: 10 }), []);
      const point = (marketClass: string, epoch: number, price: number): PricePointRecord => ({
        marketClass,
        epoch,
        at: T0 + epoch * 60_000,
        price,
        utilizationBps: 5_000 + epoch,
        supplyUnits: 8,
        demandUnits: epoch,
      });
      await store.recordPrices([]);
      for (let epoch = 1; epoch <= 5; epoch++) {
        await store.recordPrices([point('h100-80g', epoch, 2 * USDC + epoch), ...(epoch <= 3 ? [point('a100-40g', epoch, USDC + epoch)] : [])]);
      }
      assert.deepEqual(await store.latestPrices(), [point('a100-40g', 3, USDC + 3), point('h100-80g', 5, 2 * USDC + 5)]);

      const h100 = await store.priceHistory({ marketClass: 'h100-80g', limit: 3 });
      assert.deepEqual(
        h100.map((p) => p.epoch),
        [3, 4, 5],
      );
      assert.deepEqual(h100[0], point('h100-80g', 3, 2 * USDC + 3));
      assert.deepEqual(
        (await store.priceHistory({ marketClass: 'h100-80g', sinceAt: T0 + 2 * 60_000, limit: 100 })).map((p) => p.epoch),
        [2, 3, 4, 5],
      );
      assert.deepEqual(
        (await store.priceHistory({ sinceAt: T0 + 3 * 60_000, limit: 100 })).map((p) => [p.marketClass, p.epoch]),
        [
          ['a100-40g', 3],
          ['h100-80g', 3],
          ['h100-80g', 4],
          ['h100-80g', 5],
        ],
      );
      assert.deepEqual(
        (await store.priceHistory({ limit: 2 })).map((p) => [p.marketClass, p.epoch]),
        [
          ['h100-80g', 4],
          ['h100-80g', 5],
        ],
      );
      assert.deepEqual(await store.priceHistory({ marketClass: 'unknown', limit: 10 }), []);
    }));
}
