/**
 * Checked money arithmetic (issue 10 items 13, 15): exact products through BigInt, holds that would pass
 * 2^53 refused with the largest cap that fits, the stake multiple bounded, and the fee carry: over any
 * sequence of charges a provider's fees are exactly floor(Σ charge × fee), and it keeps at least
 * Σ charge × (1 − fee).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import {
  amountFromDb,
  BPS,
  checkedAdd,
  feeOf,
  feeWithCarry,
  GpuxError,
  holdFor,
  MAX_AMOUNT,
  maxCapFor,
  mulDivMany,
  STAKE_MULTIPLE,
  settlementStep,
  stakeToLock,
} from '../src/index.js';

describe('checked integer money math', () => {
  it('multiplies exactly beyond 2^53 before dividing, and refuses results beyond it', () => {
    // a × 11 is not a float: a float product rounds it, and the quotient comes out wrong.
    const a = 9_007_199_254_739_992;
    assert.notEqual(Math.floor((a * 11) / 11), a);
    assert.equal(mulDivMany([a, 11], 11), a);
    assert.equal(mulDivMany([MAX_AMOUNT, 10_000], 10_000), MAX_AMOUNT);
    assert.equal(mulDivMany([3, 7], 2, 'up'), 11);
    assert.throws(() => mulDivMany([MAX_AMOUNT, 2], 1), /exceeds 2\^53/);
    assert.throws(() => mulDivMany([0.5, 2], 1), /not a safe integer/);
    assert.throws(() => checkedAdd(MAX_AMOUNT, 1), /exceeds 2\^53/);
  });

  it('reads database sums exactly or throws, never as a wrong number', () => {
    assert.equal(amountFromDb('9007199254740991', 'x'), MAX_AMOUNT);
    assert.equal(amountFromDb(null, 'x'), 0);
    assert.equal(amountFromDb(-5, 'x'), -5);
    assert.throws(() => amountFromDb('9007199254740993', 'total'), /beyond 2\^53/);
    assert.throws(() => amountFromDb(2 ** 53, 'total'), /not a safe integer/);
    assert.throws(() => amountFromDb('12.5', 'total'), /not an integer/);
  });

  it('an oversized hold is SPEC_INVALID on maxPricePerGpuHour, naming the largest cap that fits', () => {
    const spec = { resources: { gpu: { count: 64 } }, nodes: 64, timeoutSeconds: 7 * 24 * 3600 } as const;
    const most = maxCapFor(spec);
    assert.ok(most > 0);
    assert.ok(holdFor(spec, most) <= MAX_AMOUNT);
    assert.ok(stakeToLock(most, 64, spec.timeoutSeconds) <= MAX_AMOUNT);
    let err: unknown;
    try {
      holdFor(spec, most + 1);
    } catch (e) {
      err = e;
    }
    assert.ok(err instanceof GpuxError && err.code === 'SPEC_INVALID', String(err));
    assert.equal(err.problems?.[0]?.path, 'maxPricePerGpuHour');
    assert.match(err.problems?.[0]?.message ?? '', new RegExp(`at most ${most}\\b`));
    assert.throws(() => holdFor(spec, 1_000_000_000_000), (e: unknown) => e instanceof GpuxError && e.code === 'SPEC_INVALID');
  });

  it('maxCapFor is the exact bound, for any job shape', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 64 }), fc.integer({ min: 1, max: 64 }), fc.integer({ min: 1, max: 7 * 24 * 3600 }), (gpus, nodes, timeoutSeconds) => {
        const spec = { resources: { gpu: { count: gpus } }, nodes, timeoutSeconds };
        const most = maxCapFor(spec);
        holdFor(spec, most);
        assert.ok(stakeToLock(most, Math.max(1, gpus), timeoutSeconds) <= MAX_AMOUNT);
        if (most < MAX_AMOUNT) assert.throws(() => holdFor(spec, most + 1), (e: unknown) => e instanceof GpuxError && e.code === 'SPEC_INVALID');
      }),
    );
  });

  it('the stake multiple is an integer from 1 to 1000', () => {
    assert.equal(stakeToLock(1_000_000, 1, 3600, 1), 1_000_000);
    assert.equal(stakeToLock(1_000_000, 1, 3600), STAKE_MULTIPLE * 1_000_000);
    for (const bad of [0, -1, 1.5, 1001, Number.NaN]) assert.throws(() => stakeToLock(1_000_000, 1, 3600, bad), /stake multiple/);
    assert.throws(() => stakeToLock(10 ** 12, 64, 7 * 24 * 3600, 1000), /exceeds 2\^53/);
  });
});

describe('the fee carries its remainder', () => {
  it('2,000 tiny charges pay the fee of their sum, not 0', () => {
    let carry = 0;
    let fees = 0;
    for (let i = 0; i < 2000; i++) {
      const f = feeWithCarry(13, 500, carry);
      fees += f.fee;
      carry = f.carry;
      assert.equal(feeOf(13, 500), 0, 'alone, each fee rounds to 0');
    }
    assert.equal(fees, feeOf(13 * 2000, 500));
    assert.equal(fees, 1300);
  });

  it('over any sequence of charges and fee rates: fees = floor(Σ c × f / 10000), provider ≥ Σ c × (1 − f)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 10 ** 9 }), fc.integer({ min: 0, max: 5000 })), { maxLength: 200 }), (charges) => {
        let carry = 0;
        let fees = 0;
        let basis = 0n;
        let gross = 0;
        for (const [c, bps] of charges) {
          const f = feeWithCarry(c, bps, carry);
          assert.ok(f.fee <= c || c === 0, 'a fee is never more than its charge');
          assert.ok(f.carry >= 0 && f.carry < BPS);
          fees += f.fee;
          carry = f.carry;
          basis += BigInt(c) * BigInt(bps);
          gross += c;
        }
        assert.equal(BigInt(fees), basis / BigInt(BPS), 'exactly floor of the sum');
        assert.ok(BigInt(gross - fees) * BigInt(BPS) >= BigInt(gross) * BigInt(BPS) - basis, 'the provider keeps at least Σ c × (1 − f)');
      }),
    );
  });

  it('settlementStep threads the carry and never charges the fee on nothing', () => {
    const q = { pricePerUnitHour: 3600, units: 1, timeoutSeconds: 3600, feeBps: 500 };
    const a = settlementStep(q, { charged: 0, fee: 0 }, 10_000, MAX_AMOUNT, 9_999);
    assert.deepEqual(a, { charge: 10, fee: 1, provider: 9, carry: 4_999 });
    const none = settlementStep(q, { charged: 10, fee: 1 }, 10_000, MAX_AMOUNT, 4_999);
    assert.deepEqual(none, { charge: 0, fee: 0, provider: 0, carry: 4_999 });
    assert.throws(() => feeWithCarry(10, 500, BPS), /fee carry/);
  });
});
