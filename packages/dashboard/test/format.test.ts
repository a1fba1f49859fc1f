/** The dashboard's money formatting: exact integer arithmetic, the same digits as the protocol's formatAmount. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatAmount } from '@gpux/protocol';
import { amount, bps, money, signedBps, signedMoney } from '../app/lib/format.js';

/** formatAmount's digits with trailing zeros dropped down to two decimals, and thousands grouped. */
function expected(minor: number): string {
  const [whole, frac] = formatAmount(Math.abs(minor), 'usdc', { symbol: false }).split('.') as [string, string];
  return `${minor < 0 ? '−' : ''}${BigInt(whole).toLocaleString('en')}.${frac.replace(/0+$/, '').padEnd(2, '0')}`;
}

describe('money formatting', () => {
  test('amounts are exact, with at least two decimals', () => {
    assert.equal(amount(0), '0.00');
    assert.equal(amount(1), '0.000001');
    assert.equal(amount(1_500_000), '1.50');
    assert.equal(amount(562_500), '0.5625');
    assert.equal(amount(-250_000), '−0.25');
    assert.equal(amount(12_345_678_901), '12,345.678901');
    assert.equal(amount(Number.MAX_SAFE_INTEGER), '9,007,199,254.740991');
    assert.equal(money(2_000_000, 'usdc'), '2.00 USDC');
    assert.equal(money(1, 'credit'), '0.000001 CREDIT');
    assert.equal(signedMoney(1_000_000, 'usdc'), '+1.00 USDC');
    assert.equal(signedMoney(-1, 'usdc'), '−0.000001 USDC');
    assert.equal(signedMoney(0, 'usdc'), '0.00 USDC');
  });

  test('the same digits as formatAmount over a sweep of values', () => {
    for (let i = 0; i < 2000; i++) {
      const minor = (i * 7_919_317 + i * i * 104_729) * (i % 3 === 0 ? -1 : 1);
      assert.equal(amount(minor), expected(minor), String(minor));
    }
  });

  test('basis points as exact percentages, changes with their sign', () => {
    assert.equal(bps(8000), '80.00%');
    assert.equal(bps(1), '0.01%');
    assert.equal(bps(16_000), '160.00%');
    assert.equal(signedBps(125), '+1.25%');
    assert.equal(signedBps(-50), '−0.50%');
    assert.equal(signedBps(0), '0.00%');
  });
});
