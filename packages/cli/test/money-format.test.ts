/** Money in the terminal: amount and asset parsing, signed amounts, percentages, and the wallet/price/stake/bill views. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { BillResponse, MarketPricesResponse, StakeView, TransferView } from '@gpux/protocol';
import { formatBill } from '../src/commands/job.js';
import { formatPriceHistory, formatPrices, NO_MARKET } from '../src/commands/market.js';
import { formatAsks, formatStake, formatUnbond, parseAskArgs } from '../src/commands/node.js';
import { formatPayoutOutcome } from '../src/commands/payout.js';
import { formatBalances, formatDeposit, formatPayouts, formatWalletHistory, parsePayoutState } from '../src/commands/wallet.js';
import { formatBps, parseAmountArg, parseAssetOption, signedMoney } from '../src/money-format.js';
import { CliError, EXIT_USAGE } from '../src/errors.js';
import { AT, payout } from './money-fixtures.js';


/** Asserts a usage error (exit 2) whose message matches. */
function usage(fn: () => unknown, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => e instanceof CliError && e.exitCode === EXIT_USAGE && pattern.test(e.message));
}

describe('parsing amounts typed by people', () => {
  test('decimals become exact minor units', () => {
    assert.equal(parseAmountArg('AMOUNT', '12.5', 'usdc'), 12_500_000);
    assert.equal(parseAmountArg('AMOUNT', '0.000001', 'usdc'), 1);
    assert.equal(parseAmountArg('AMOUNT', '100', 'credit'), 100_000_000);
    assert.equal(parseAmountArg('AMOUNT', ' 7.', 'usdc'), 7_000_000);
    assert.equal(parseAmountArg('AMOUNT', '.25', 'usdc'), 250_000);
    assert.equal(parseAmountArg('AMOUNT', '0.1', 'usdc') + parseAmountArg('AMOUNT', '0.2', 'usdc'), parseAmountArg('AMOUNT', '0.3', 'usdc'), 'no float drift');
    assert.equal(parseAmountArg('PRICE', '0', 'usdc', { allowZero: true }), 0);
  });

  test('bad input is a usage error that says what is wrong and how to write it', () => {
    usage(() => parseAmountArg('AMOUNT', '1.2345678', 'usdc'), /^AMOUNT "1\.2345678" has 7 decimals but USDC has 6: round it to at most 6 decimals$/);
    usage(() => parseAmountArg('AMOUNT', '-5', 'usdc'), /^AMOUNT must not be negative, got "-5": write a positive amount like 12\.5/);
    usage(() => parseAmountArg('AMOUNT', 'abc', 'usdc'), /^AMOUNT "abc" is not a number: write a decimal amount like 12\.5 \(USDC, at most 6 decimals\)/);
    usage(() => parseAmountArg('AMOUNT', '12,5', 'credit'), /"12,5" is not a number.*CREDIT.*use a dot for decimals/);
    usage(() => parseAmountArg('AMOUNT', '1e3', 'usdc'), /not a number/);
    usage(() => parseAmountArg('AMOUNT', '5 USDC', 'usdc'), /no thousands separators or units/);
    usage(() => parseAmountArg('AMOUNT', '', 'usdc'), /not a number/);
    usage(() => parseAmountArg('AMOUNT', '0', 'usdc'), /^AMOUNT must be more than 0, got "0"/);
    usage(() => parseAmountArg('AMOUNT', '9999999999999', 'usdc'), /too large/);
  });

  test('assets and payout states', () => {
    assert.equal(parseAssetOption(undefined), 'usdc');
    assert.equal(parseAssetOption('CREDIT'), 'credit');
    usage(() => parseAssetOption('eur'), /^--asset must be usdc or credit, got "eur"$/);
    assert.equal(parsePayoutState(undefined), undefined);
    assert.equal(parsePayoutState('pending'), 'pending');
    usage(() => parsePayoutState('paid'), /--state must be pending, completed or rejected/);
  });

  test('asks: a class id and a decimal price, or none', () => {
    assert.deepEqual(parseAskArgs('nvidia-h100-80gb', '2.5'), { class: 'nvidia-h100-80gb', pricePerGpuHour: 2_500_000 });
    assert.deepEqual(parseAskArgs('cpu', 'None'), { class: 'cpu', pricePerGpuHour: null });
    assert.deepEqual(parseAskArgs('cpu', '0'), { class: 'cpu', pricePerGpuHour: 0 });
    usage(() => parseAskArgs('H100', '2'), /^CLASS "H100" must be a class id like nvidia-h100-80gb or cpu/);
    usage(() => parseAskArgs('cpu', '-1'), /^PRICE must not be negative/);
    usage(() => parseAskArgs('cpu', '0.0000001'), /^PRICE "0\.0000001" has 7 decimals/);
  });
});

describe('small formatters', () => {
  test('signed amounts and basis points are exact', () => {
    assert.equal(signedMoney(12_500_000, 'usdc'), '+12.500000');
    assert.equal(signedMoney(-250_000, 'usdc', true), '-0.250000 USDC');
    assert.equal(signedMoney(0, 'credit'), '0.000000');
    assert.equal(formatBps(8_250), '82.50%');
    assert.equal(formatBps(7), '0.07%');
    assert.equal(formatBps(500, { signed: true }), '+5.00%');
    assert.equal(formatBps(-120, { signed: true }), '-1.20%');
    assert.equal(formatBps(0, { signed: true }), '0.00%');
    assert.equal(formatBps(-5), '-0.05%');
  });
});


describe('wallet views', () => {
  test('balance table', () => {
    const out = formatBalances({
      accountId: 'acc-1',
      balances: [
        { asset: 'usdc', available: 87_500_000, inEscrow: 10_000_000, pendingPayout: 2_500_000, heldForVerification: 0, heldJobs: 0, nextWindowClosesAt: null },
        { asset: 'credit', available: 0, inEscrow: 0, pendingPayout: 0, heldForVerification: 0, heldJobs: 0, nextWindowClosesAt: null },
      ],
    });
    assert.equal(
      out,
      ['ASSET   AVAILABLE  IN ESCROW  PENDING PAYOUT', 'USDC    87.500000  10.000000        2.500000', 'CREDIT   0.000000   0.000000        0.000000', ''].join('\n'),
    );
    assert.equal(formatBalances({ accountId: 'acc-9', balances: [] }), 'account acc-9 has no balances yet\n');
  });

  test('balance: pay held until verification, one line per asset with some', () => {
    const usdc = { asset: 'usdc' as const, available: 1_000_000, inEscrow: 0, pendingPayout: 0 };
    const held = formatBalances({
      accountId: 'prov-1',
      balances: [
        { ...usdc, heldForVerification: 3_200_000, heldJobs: 2, nextWindowClosesAt: AT },
        { asset: 'credit', available: 0, inEscrow: 0, pendingPayout: 0, heldForVerification: 0, heldJobs: 0, nextWindowClosesAt: null },
      ],
    });
    const lines = held.split('\n');
    assert.equal(lines.length, 5, held);
    assert.match(lines[3] ?? '', /^held until verification: 3\.200000 USDC for 2 jobs; the soonest dispute window closes .*Z \(that pay is released by then/);
    const running = formatBalances({ accountId: 'prov-1', balances: [{ ...usdc, heldForVerification: 5, heldJobs: 1, nextWindowClosesAt: null }] });
    assert.match(running, /held until verification: 0\.000005 USDC for 1 job; released once their verification passes/);
  });

  test('history: signed amounts, balance after, job and memo', () => {
    const out = formatWalletHistory([
      { transferId: 't2', at: AT, kind: 'escrow.hold', asset: 'usdc', amount: -10_000_000, balanceAfter: 90_000_000, jobId: 'job-1', nodeId: null, memo: 'hold for job-1' },
      { transferId: 't1', at: AT, kind: 'mint', asset: 'usdc', amount: 100_000_000, balanceAfter: 100_000_000, jobId: null, nodeId: null, memo: '' },
    ]);
    assert.equal(
      out,
      [
        'TIME                  KIND              AMOUNT     BALANCE  ASSET  JOB    MEMO',
        '2024-01-02 03:04:05Z  escrow.hold   -10.000000   90.000000  USDC   job-1  hold for job-1',
        '2024-01-02 03:04:05Z  mint         +100.000000  100.000000  USDC   -      -',
        '',
      ].join('\n'),
    );
    assert.equal(formatWalletHistory([]), 'no wallet entries\n');
  });

  test('deposit and mint lines name the account and the balance after', () => {
    const t: TransferView = {
      id: 'tr-1',
      kind: 'deposit',
      at: AT,
      memo: '',
      jobId: null,
      attemptId: null,
      nodeId: null,
      reference: 'wire-1',
      postings: [
        { account: 'world', asset: 'usdc', amount: -25_000_000, balanceAfter: -125_000_000 },
        { account: 'wallet:acc-2', asset: 'usdc', amount: 25_000_000, balanceAfter: 30_000_000 },
      ],
    };
    assert.equal(formatDeposit(t), 'deposited 25.000000 USDC to account acc-2; balance now 30.000000 USDC (transfer tr-1, reference wire-1)\n');
    assert.match(formatDeposit({ ...t, kind: 'mint', reference: null }), /^minted 25\.000000 USDC to account acc-2; .*\(transfer tr-1\)\n$/);
  });

  test('payout tables and outcomes', () => {
    const rows = [payout(), payout({ id: 'pay-2', accountId: 'acc-2', state: 'completed', reference: 'wire-7' })];
    assert.equal(
      formatPayouts(rows),
      [
        'ID     STATE              AMOUNT  DESTINATION  ADAPTER  CREATED               REFERENCE / REASON',
        'pay-1  pending    12.500000 USDC  iban:DE00    manual   2024-01-02 03:04:05Z  -',
        'pay-2  completed  12.500000 USDC  iban:DE00    manual   2024-01-02 03:04:05Z  wire-7',
        '',
      ].join('\n'),
    );
    assert.match(formatPayouts(rows, { account: true }), /DESTINATION {2}ACCOUNT {2}ADAPTER/);
    assert.equal(formatPayouts([]), 'no payouts\n');
    assert.equal(formatPayoutOutcome(payout({ state: 'completed', reference: 'wire-7' })), 'payout pay-1 (12.500000 USDC to iban:DE00, account acc-1) completed, reference wire-7\n');
    assert.match(formatPayoutOutcome(payout({ state: 'rejected', reason: 'bad iban' })), /rejected: bad iban; the amount is back in the account's wallet\n$/);
  });
});

describe('market views', () => {
  const prices: MarketPricesResponse = {
    market: true,
    feeBps: 250,
    targetUtilizationBps: 7_000,
    maxStepBps: 500,
    epochMs: 60_000,
    classes: [
      { class: 'nvidia-h100-80gb', asset: 'usdc', price: 2_100_000, previous: 2_000_000, changeBps: 500, change24hBps: -120, floor: 500_000, utilizationBps: 8_250, supplyUnits: 8, demandUnits: 7, epoch: 42, at: AT },
      { class: 'cpu', asset: 'usdc', price: 50_000, previous: null, changeBps: 0, change24hBps: 0, floor: 10_000, utilizationBps: 0, supplyUnits: 2, demandUnits: 0, epoch: 42, at: AT },
    ],
  };

  test('prices: header with fee and target, signed changes, utilization', () => {
    assert.equal(
      formatPrices(prices),
      [
        'fee 2.50% of each charge, target utilization 70.00%, prices move at most 5.00% per 1m00s epoch',
        'CLASS             PRICE/GPU-HOUR  CHANGE  CHANGE 24H  UTILIZATION  SUPPLY  DEMAND          FLOOR',
        'nvidia-h100-80gb   2.100000 USDC  +5.00%      -1.20%       82.50%       8       7  0.500000 USDC',
        'cpu                0.050000 USDC     new       0.00%        0.00%       2       0  0.010000 USDC',
        'cpu is priced per job-hour',
        '',
      ].join('\n'),
    );
  });

  test('no market, and a market with no prices yet', () => {
    assert.equal(formatPrices({ ...prices, market: false }), NO_MARKET);
    assert.equal(NO_MARKET, 'this coordinator runs without a market: jobs are free\n');
    assert.match(formatPrices({ ...prices, classes: [] }), /\nno prices yet: /);
  });

  test('history and asks', () => {
    assert.equal(
      formatPriceHistory([{ class: 'cpu', epoch: 3, at: AT, price: 1_234_567, utilizationBps: 10_500, supplyUnits: 2, demandUnits: 3 }]),
      'TIME                  CLASS  EPOCH  PRICE/GPU-HOUR  UTILIZATION  SUPPLY  DEMAND\n2024-01-02 03:04:05Z  cpu        3        1.234567      105.00%       2       3\n',
    );
    assert.equal(formatPriceHistory([]), 'no price history yet\n');
    assert.equal(
      formatAsks([{ providerId: 'acc-1', class: 'nvidia-h100-80gb', pricePerGpuHour: 1_750_000, updatedAt: AT }]),
      'CLASS             ASK/GPU-HOUR  UPDATED\nnvidia-h100-80gb      1.750000  2024-01-02 03:04:05Z\n',
    );
    assert.match(formatAsks([]), /^no asks: set one with `gpux node price set CLASS PRICE`\n$/);
    assert.match(formatAsks([{ providerId: 'acc-1', class: 'cpu', pricePerGpuHour: 50_000, updatedAt: AT }]), /0\.050000 .*\ncpu is priced per job-hour\n$/);
  });
});

describe('stake views', () => {
  const stake: StakeView = {
    nodeId: 'node-1',
    providerId: 'acc-1',
    asset: 'usdc',
    staked: 50_000_000,
    locked: 10_000_000,
    free: 35_000_000,
    unbonding: [
      { id: 'unb-1', amount: 5_000_000, releaseAt: AT + 3_600_000 },
      { id: 'unb-2', amount: 5_000_000, releaseAt: AT + 7 * 86_400_000 },
    ],
  };

  test('show: totals, then each unbonding with its release time', () => {
    const out = formatStake(stake, AT);
    assert.match(out, /^node: {7}node-1\n/);
    assert.match(out, /\nlocked: {5}10\.000000 USDC \(backs active attempts\)\n/);
    assert.match(out, /\nunbonding: {2}10\.000000 USDC\n/);
    assert.match(out, /\nunb-1 {6}5\.000000 USDC {2}2024-01-02 04:04:05Z \(in 1h00m\)\n/);
    assert.match(out, /\nunb-2 .*\(in 168h00m\)\n$/);
    assert.equal(formatStake({ ...stake, unbonding: [] }, AT).includes('UNBONDING'), false);
  });

  test('withdraw prints when the newest matching unbonding releases', () => {
    assert.equal(
      formatUnbond(stake, 5_000_000, AT),
      'unbonding 5.000000 USDC from node node-1: it returns to your wallet at 2024-01-09 03:04:05Z (in 168h00m); 35.000000 USDC stays free\n',
    );
    assert.match(formatUnbond({ ...stake, unbonding: [] }, 5_000_000, AT), /after the unbonding delay/);
  });
});

describe('job bill', () => {
  const bill: BillResponse = {
    jobId: 'job-1',
    asset: 'usdc',
    market: true,
    capPerUnitHour: 3_000_000,
    held: 10_000_000,
    charged: 2_000_000,
    toProviders: 1_950_000,
    fee: 50_000,
    refunded: 8_000_000,
    inEscrow: 0,
    lines: [
      { at: AT, kind: 'escrow.hold', transferId: 't1', attemptId: null, nodeId: null, account: 'escrow:job-1', amount: -10_000_000, memo: 'hold' },
      { at: AT, kind: 'settlement', transferId: 't2', attemptId: 'att-1', nodeId: 'node-1', account: 'wallet:acc-2', amount: -2_000_000, memo: '1h of 2 GPUs' },
      { at: AT, kind: 'escrow.release', transferId: 't3', attemptId: null, nodeId: null, account: 'wallet:acc-1', amount: 8_000_000, memo: 'unspent' },
    ],
  };

  test('header totals, then lines signed from the buyer’s view', () => {
    assert.equal(
      formatBill(bill),
      [
        'job:                job-1',
        'asset:              USDC',
        'cap per unit-hour:  3.000000 USDC (per GPU-hour; per job-hour when CPU-only)',
        'held:               10.000000 USDC',
        'charged:            2.000000 USDC',
        '  to providers:     1.950000 USDC',
        '  fee:              0.050000 USDC',
        'refunded:           8.000000 USDC',
        'in escrow:          0.000000 USDC',
        '',
        'TIME                  KIND            ATTEMPT      AMOUNT  MEMO',
        '2024-01-02 03:04:05Z  escrow.hold     -        -10.000000  hold',
        '2024-01-02 03:04:05Z  settlement      att-1     -2.000000  1h of 2 GPUs',
        '2024-01-02 03:04:05Z  escrow.release  -         +8.000000  unspent',
        '',
      ].join('\n'),
    );
  });

  test('a job without a market ran free', () => {
    assert.equal(formatBill({ ...bill, market: false, lines: [] }), 'job job-1 ran free: this coordinator runs without a market\n');
  });
});
