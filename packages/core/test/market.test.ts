import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatAmount, parseAmount } from '@gpux/protocol';
import fc from 'fast-check';
import {
  assertBalanced,
  buyerDemandCap,
  chargeFor,
  clearAt,
  clearingPrice,
  DEFAULT_PRICE_POLICY,
  feeOf,
  grossAsk,
  holdFor,
  lowestPrice,
  marketCap,
  MAX_INDEX_PRICE,
  marketClassOf,
  move,
  mulDiv,
  nextPrice,
  settlementStep,
  stakeToLock,
  utilizationBps,
} from '../src/index.js';

describe('market classes', () => {
  it('names classes vendor-model-VRAM as the catalogue does', () => {
    assert.equal(marketClassOf({ vendor: 'nvidia', model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 }), 'nvidia-h100-80gb');
    assert.equal(marketClassOf({ vendor: 'nvidia', model: 'NVIDIA GeForce RTX 4090', vramMb: 24564 }), 'nvidia-rtx4090-24gb');
    assert.equal(marketClassOf({ vendor: 'amd', model: 'AMD Instinct MI300X', vramMb: 196592 }), 'amd-mi300x-192gb');
    assert.equal(marketClassOf({ vendor: 'nvidia', model: 'NVIDIA H200', vramMb: 143771 }), 'nvidia-h200-140gb');
    assert.equal(marketClassOf({ vendor: 'nvidia', model: 'NVIDIA A100-SXM4-80GB', vramMb: 81920 }), 'nvidia-a100-80gb');
  });
});

describe('amounts', () => {
  it('parses and formats exactly, refusing what is not an amount', () => {
    assert.equal(parseAmount('1.5', 'usdc'), 1_500_000);
    assert.equal(parseAmount('0.000001', 'usdc'), 1);
    assert.equal(parseAmount('12', 'credit'), 12_000_000);
    assert.equal(formatAmount(1_500_000, 'usdc'), '1.500000 USDC');
    assert.equal(formatAmount(-7, 'usdc', { symbol: false }), '-0.000007');
    assert.throws(() => parseAmount('1.0000001', 'usdc'), /7 decimals but USDC has 6/);
    assert.throws(() => parseAmount('-1', 'usdc'), /must not be negative/);
    assert.throws(() => parseAmount('1e3', 'usdc'), /not a number/);
  });
  it('mulDiv rounds as asked and never loses precision above 2^53 in the product', () => {
    assert.equal(mulDiv(7, 3, 2, 'down'), 10);
    assert.equal(mulDiv(7, 3, 2, 'up'), 11);
    assert.equal(mulDiv(2 ** 52, 1000, 1000), 2 ** 52);
    assert.throws(() => mulDiv(2 ** 52, 4, 1), /exceeds 2\^53/);
  });
});

describe('price index', () => {
  it('holds at the target, moves at most 12.5% an epoch, and keeps the floor', () => {
    assert.equal(nextPrice(1_000_000, 8000, 1), 1_000_000);
    assert.equal(nextPrice(1_000_000, 16_000, 1), 1_125_000);
    assert.equal(nextPrice(1_000_000, 50_000, 1), 1_125_000);
    assert.equal(nextPrice(1_000_000, 0, 1), 875_000);
    assert.equal(nextPrice(1_000_000, 0, 900_000), 900_000);
    assert.equal(nextPrice(1_000_000, 9000, 1), 1_015_625);
    assert.equal(nextPrice(3, 8001, 1), 4, 'a rise is at least one minor unit');
  });
  it('bounds one buyer\'s queued demand in a class to half its supply (at least one unit)', () => {
    assert.equal(buyerDemandCap(8), 4);
    assert.equal(buyerDemandCap(7), 4);
    assert.equal(buyerDemandCap(1), 1);
    assert.equal(buyerDemandCap(0), 1);
    assert.equal(buyerDemandCap(100, 2500), 25);
  });
  it('measures demand over supply, capped at twice the target', () => {
    assert.equal(utilizationBps(8, 10), 8000);
    assert.equal(utilizationBps(100, 10), 16_000);
    assert.equal(utilizationBps(0, 0), DEFAULT_PRICE_POLICY.targetUtilizationBps);
    assert.equal(utilizationBps(3, 0), 16_000);
  });
});

describe('clearing rule', () => {
  it('pays the index when both sides accept it, else the nearest bound', () => {
    const fee = 500;
    assert.equal(grossAsk(950_000, fee), 1_000_000);
    const floor = 400_000;
    assert.equal(clearingPrice({ index: 1_200_000, floor, ask: 950_000, cap: 2_000_000, feeBps: fee }), 1_200_000);
    assert.equal(clearingPrice({ index: 800_000, floor, ask: 950_000, cap: 2_000_000, feeBps: fee }), 1_000_000);
    assert.equal(clearingPrice({ index: 3_000_000, floor, ask: 950_000, cap: 2_000_000, feeBps: fee }), 2_000_000);
    assert.equal(clearingPrice({ index: 1_000_000, floor, ask: 1_950_000, cap: 2_000_000, feeBps: fee }), null);
  });

  it('never clears below the class floor: a cap of 0 or 1 runs nowhere, a low ask is lifted to the floor', () => {
    const fee = 500;
    const floor = 400_000;
    for (const cap of [0, 1, floor - 1]) {
      assert.equal(clearingPrice({ index: 1_000_000, floor, ask: 0, cap, feeBps: fee }), null, `cap ${cap}`);
      assert.equal(clearingPrice({ index: 0, floor, ask: undefined, cap, feeBps: fee }), null, `cap ${cap}, no ask`);
    }
    assert.equal(clearingPrice({ index: 100_000, floor, ask: 0, cap: 2_000_000, feeBps: fee }), floor, 'index and ask under the floor: the floor');
    assert.equal(clearingPrice({ index: 100_000, floor, ask: 0, cap: floor, feeBps: fee }), floor);
    assert.equal(lowestPrice({ index: 100_000, floor, grossAsk: 0 }), floor);
  });

  it('a node without an ask is paid at least the index: it takes a job only when the cap reaches the index', () => {
    const fee = 500;
    const floor = 400_000;
    assert.equal(clearingPrice({ index: 1_200_000, floor, ask: undefined, cap: 2_000_000, feeBps: fee }), 1_200_000);
    assert.equal(clearingPrice({ index: 1_200_000, floor, ask: undefined, cap: 1_199_999, feeBps: fee }), null);
    assert.equal(clearingPrice({ index: 1_200_000, floor, ask: undefined, cap: 1_200_000, feeBps: fee }), 1_200_000);
    assert.equal(clearAt({ index: 300_000, floor, grossAsk: undefined, cap: 2_000_000 }), floor, 'an index under the floor: the floor');
    assert.equal(marketCap([1_000_000, 2_000_000], 1250), 2_250_000);
    assert.equal(marketCap([], 1250), undefined);
  });

  it('a buyer never pays more than its cap and a provider never earns less than its ask (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 50_000_000 }), // index
        fc.integer({ min: 1, max: 5_000_000 }), // class floor (> 0 in every class)
        fc.option(fc.integer({ min: 0, max: 50_000_000 }), { nil: undefined }), // ask (none: the node asks nothing)
        fc.integer({ min: 0, max: 80_000_000 }), // cap
        fc.integer({ min: 0, max: 3000 }), // fee bps
        fc.integer({ min: 1, max: 64 }), // units
        fc.integer({ min: 0, max: 7 * 24 * 3600 * 1000 }), // runtime ms
        fc.array(fc.integer({ min: 1, max: 10 ** 6 }), { maxLength: 8 }), // chunk boundaries
        (index, floor, ask, cap, feeBps, units, ms, cuts) => {
          const price = clearingPrice({ index, floor, ask, cap, feeBps });
          const low = Math.max(floor, ask === undefined ? index : grossAsk(ask, feeBps));
          if (price === null) return low > cap;
          assert.ok(price <= cap && price >= floor && price > 0, 'within the cap, never below the floor, never free');
          assert.ok(price >= (ask === undefined ? index : grossAsk(ask, feeBps)), 'at least the gross ask, or the index without an ask');
          const timeout = 7 * 24 * 3600;
          const q = { pricePerUnitHour: price, units, timeoutSeconds: timeout, feeBps };
          // Chunked settlement equals one settlement.
          let done = { charged: 0, fee: 0 };
          let provider = 0;
          let t = 0;
          let carry = 0; // the provider's fee remainder, carried from chunk to chunk
          for (const c of [...cuts, ms]) {
            t = Math.min(ms, t + c);
            const s = settlementStep(q, done, t, Number.MAX_SAFE_INTEGER, carry);
            carry = s.carry;
            done = { charged: done.charged + s.charge, fee: done.fee + s.fee };
            provider += s.provider;
          }
          const once = settlementStep(q, { charged: 0, fee: 0 }, ms, Number.MAX_SAFE_INTEGER);
          assert.equal(done.charged, once.charge);
          assert.equal(done.fee, once.fee);
          assert.ok(done.charged <= mulDiv(cap * units, ms, 3_600_000), 'buyer pays at most cap × units × time');
          if (ask !== undefined) assert.ok(provider >= mulDiv(ask * units, ms, 3_600_000), 'provider earns at least ask × units × time');
          assert.equal(done.fee, feeOf(done.charged, feeBps));
          return true;
        },
      ),
    );
  });
});

describe('settlement', () => {
  const spec = { resources: { gpu: { count: 2 } }, nodes: 3, timeoutSeconds: 1800 } as const;
  it('holds cap × units × nodes × timeout, rounded up', () => {
    assert.equal(holdFor(spec, 1_000_000), 3_000_000);
    assert.equal(holdFor({ ...spec, timeoutSeconds: 1 }, 1), 1);
  });
  it('charges runtime, never beyond the timeout, and never more than the escrow holds', () => {
    assert.equal(chargeFor(1_000_000, 2, 90_000, 1800), 50_000);
    assert.equal(chargeFor(1_000_000, 2, 10 * 3_600_000, 1800), 1_000_000);
    const s = settlementStep({ pricePerUnitHour: 3_600_000, units: 1, timeoutSeconds: 3600, feeBps: 500 }, { charged: 0, fee: 0 }, 10_000, 4000);
    assert.deepEqual(s, { charge: 4000, fee: 200, provider: 3800, carry: 0 });
  });
  it('locks 20× the longest charge as stake', () => {
    assert.equal(stakeToLock(1_000_000, 2, 1800), 20_000_000);
  });
});

describe('ledger postings', () => {
  it('moves balance to zero and refuses an unbalanced transfer', () => {
    const p = move('usdc', 'escrow:j', [
      { account: 'wallet:p', amount: 95 },
      { account: 'treasury', amount: 5 },
      { account: 'wallet:x', amount: 0 },
    ]);
    assert.equal(p.length, 3);
    assertBalanced(p);
    assert.throws(() => assertBalanced([{ account: 'a', asset: 'usdc', amount: 1 }]), /sum to 1/);
    assert.throws(() => assertBalanced([{ account: 'a', asset: 'usdc', amount: 0.5 }, { account: 'b', asset: 'usdc', amount: -0.5 }]), /safe integer/);
  });
});

it('the index stops at MAX_INDEX_PRICE however long a class stays full', () => {
  let p = MAX_INDEX_PRICE - 5;
  for (let i = 0; i < 10; i++) p = nextPrice(p, 16_000, 1000);
  assert.equal(p, MAX_INDEX_PRICE);
});
