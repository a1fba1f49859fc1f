/** The audit budget (core trust/audit-budget.ts): fee share + funded, spent net of what came back. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { auditBudgetAllows, auditBudgetOf, type TreasuryFlow } from '../src/index.js';

const flows: TreasuryFlow[] = [
  { asset: 'usdc', kind: 'settlement', in: 1_000, out: 0 },
  { asset: 'usdc', kind: 'mint', in: 200, out: 0 },
  { asset: 'usdc', kind: 'slash', in: 50_000, out: 0 },
  { asset: 'usdc', kind: 'escrow.hold', in: 0, out: 900 },
  { asset: 'usdc', kind: 'escrow.release', in: 300, out: 0 },
  { asset: 'credit', kind: 'settlement', in: 7, out: 0 },
];

test('allowance = ⌊fees × share⌋ + funded; slashes are not budget; spent = holds − returns; other assets ignored', () => {
  assert.deepEqual(auditBudgetOf('usdc', flows, 10_000), { asset: 'usdc', shareBps: 10_000, feeIncome: 1_000, funded: 200, spent: 600, allowance: 1_200, left: 600 });
  const half = auditBudgetOf('usdc', flows, 5_000);
  assert.deepEqual([half.allowance, half.left], [700, 100]);
  assert.ok(auditBudgetAllows(half, 100));
  assert.ok(!auditBudgetAllows(half, 101));
  const none = auditBudgetOf('usdc', flows, 0);
  assert.deepEqual([none.allowance, none.left], [200, 0], 'over budget: nothing left, never negative');
  assert.ok(auditBudgetAllows(none, 0));
  assert.equal(auditBudgetOf('credit', flows, 3_333).allowance, 2, 'rounded down');
  assert.throws(() => auditBudgetOf('usdc', flows, 10_001), /share/);
});
