/**
 * `gpux wallet …`: balance, deposit, withdraw, history, payouts. People type decimals ("12.5"); the API
 * speaks integer minor units; --json prints the API's minor units. Amount helpers: ../money-format.ts.
 */
import { ASSET_SYMBOL, type PayoutView, type TransferView, type WalletEntry, type WalletResponse } from '@gpux/protocol';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io, intArg, jsonOption } from '../context.js';
import { usageError } from '../errors.js';
import { formatTable, formatTime, outputOption, render, toJson } from '../output.js';
import { ASSET_OPTION_HELP, money, parseAmountArg, parseAssetOption, signedMoney } from '../money-format.js';

interface Flags {
  json?: boolean;
  coordinator?: string;
  token?: string;
}

// ---- formatting ----

export function formatBalances(w: WalletResponse): string {
  if (w.balances.length === 0) return `account ${w.accountId} has no balances yet\n`;
  const table = formatTable(w.balances, [
    { header: 'ASSET', value: (b) => ASSET_SYMBOL[b.asset] },
    { header: 'AVAILABLE', value: (b) => money(b.available, b.asset, false), align: 'right' },
    { header: 'IN ESCROW', value: (b) => money(b.inEscrow, b.asset, false), align: 'right' },
    { header: 'PENDING PAYOUT', value: (b) => money(b.pendingPayout, b.asset, false), align: 'right' },
  ]);
  return table + formatHeld(w);
}

/** A provider's pay held until verification (issue 11), one line per asset with some; nothing otherwise. */
export function formatHeld(w: WalletResponse): string {
  return w.balances
    .filter((b) => (b.heldForVerification ?? 0) > 0)
    .map((b) => {
      const n = b.heldJobs ?? 0;
      const jobs = `${n} job${n === 1 ? '' : 's'}`;
      const when =
        b.nextWindowClosesAt === null || b.nextWindowClosesAt === undefined
          ? 'released once their verification passes or their dispute windows close'
          : `the soonest dispute window closes ${formatTime(b.nextWindowClosesAt)} (that pay is released by then unless disputed; a passed audit releases it sooner)`;
      return `held until verification: ${money(b.heldForVerification ?? 0, b.asset)} for ${jobs}; ${when}\n`;
    })
    .join('');
}

export function formatWalletHistory(entries: readonly WalletEntry[], wide = false): string {
  if (entries.length === 0) return 'no wallet entries\n';
  return formatTable(entries, [
    { header: 'TIME', value: (e) => formatTime(e.at) },
    { header: 'KIND', value: (e) => e.kind },
    { header: 'AMOUNT', value: (e) => signedMoney(e.amount, e.asset), align: 'right' },
    { header: 'BALANCE', value: (e) => money(e.balanceAfter, e.asset, false), align: 'right' },
    { header: 'ASSET', value: (e) => ASSET_SYMBOL[e.asset] },
    { header: 'JOB', value: (e) => e.jobId },
    { header: 'MEMO', value: (e) => e.memo },
    ...(wide ? [{ header: 'NODE', value: (e: WalletEntry) => e.nodeId }, { header: 'TRANSFER', value: (e: WalletEntry) => e.transferId }] : []),
  ]);
}

/** One line for a deposit or mint: how much, to whom, the balance after. */
export function formatDeposit(t: TransferView): string {
  const credit = t.postings.find((p) => p.account.startsWith('wallet:') && p.amount > 0);
  const verb = t.kind === 'mint' ? 'minted' : 'deposited';
  if (!credit) return `${verb}: transfer ${t.id}\n`;
  const ref = t.reference ? `, reference ${t.reference}` : '';
  return `${verb} ${money(credit.amount, credit.asset)} to account ${credit.account.slice('wallet:'.length)}; balance now ${money(credit.balanceAfter, credit.asset)} (transfer ${t.id}${ref})\n`;
}

export function formatPayouts(payouts: readonly PayoutView[], opts: { account?: boolean; wide?: boolean } = {}): string {
  if (payouts.length === 0) return 'no payouts\n';
  return formatTable(payouts, [
    { header: 'ID', value: (p) => p.id },
    { header: 'STATE', value: (p) => p.state },
    { header: 'AMOUNT', value: (p) => money(p.amount, p.asset), align: 'right' },
    { header: 'DESTINATION', value: (p) => p.destination },
    ...(opts.account ? [{ header: 'ACCOUNT', value: (p: PayoutView) => p.accountId }] : []),
    { header: 'ADAPTER', value: (p) => p.adapter },
    { header: 'CREATED', value: (p) => formatTime(p.createdAt) },
    { header: 'REFERENCE / REASON', value: (p) => p.reference ?? p.reason },
    ...(opts.wide ? [{ header: 'UPDATED', value: (p: PayoutView) => formatTime(p.updatedAt) }] : []),
  ]);
}

export function formatWithdrawal(p: PayoutView): string {
  return [
    `payout ${p.id} ${p.state}: ${money(p.amount, p.asset)} to ${p.destination} through the ${p.adapter} adapter`,
    p.state === 'pending' ? `it has left your available balance; follow it with \`gpux wallet payouts\`` : null,
  ]
    .filter(Boolean)
    .map((l) => `${l}\n`)
    .join('');
}

// ---- commands ----

export function registerWallet(program: Command, io: Io): void {
  const wallet = program.command('wallet').description('your balances, deposits, withdrawals and statement (buyer or provider token)');

  outputOption(connectionOptions(wallet.command('balance').description('balances per asset: available, in escrow, pending payout'))).action(async (flags: Flags) => {
    const res = await clientFor(io, flags, 'buyer').wallet();
    render(io, flags, res, () => formatBalances(res));
  });

  jsonOption(
    connectionOptions(
      wallet
        .command('deposit')
        .description('record a deposit (operators, with --reference) or mint test funds to yourself (dev networks)')
        .argument('<amount>', 'a decimal amount, e.g. 12.5')
        .option('--asset <asset>', ASSET_OPTION_HELP)
        .option('--reference <ref>', 'the external payment this deposit records (operator token)')
        .option('--account <id>', 'the account to credit (operator token; default: your own)'),
    ),
  ).action(async (amountText: string, flags: Flags & { asset?: string; reference?: string; account?: string }) => {
    const asset = parseAssetOption(flags.asset);
    const amount = parseAmountArg('AMOUNT', amountText, asset);
    // Recording a real deposit, or crediting someone else, is operator work: use the operator token.
    const role = flags.reference !== undefined || flags.account !== undefined ? 'operator' : 'buyer';
    const res = await clientFor(io, flags, role).deposit({
      asset,
      amount,
      ...(flags.reference !== undefined ? { reference: flags.reference } : {}),
      ...(flags.account !== undefined ? { accountId: flags.account } : {}),
    });
    io.out.write(flags.json ? toJson(res) : formatDeposit(res.transfer));
  });

  jsonOption(
    connectionOptions(
      wallet
        .command('withdraw')
        .description('withdraw through the settlement adapter: the amount becomes a pending payout')
        .argument('<amount>', 'a decimal amount, e.g. 12.5')
        .requiredOption('--to <destination>', 'where the payout goes: a bank reference, an address')
        .option('--asset <asset>', ASSET_OPTION_HELP),
    ),
  ).action(async (amountText: string, flags: Flags & { to: string; asset?: string }) => {
    const asset = parseAssetOption(flags.asset);
    const amount = parseAmountArg('AMOUNT', amountText, asset);
    if (flags.to.trim() === '') throw usageError('--to must name a destination, e.g. a bank reference or an address');
    const res = await clientFor(io, flags, 'buyer').withdraw({ asset, amount, destination: flags.to });
    io.out.write(flags.json ? toJson(res) : formatWithdrawal(res.payout));
  });

  outputOption(
    connectionOptions(
      wallet
        .command('history')
        .description('your wallet statement, newest first')
        .option('--asset <asset>', 'only this asset: usdc or credit')
        .option('--limit <n>', 'at most this many entries (1-500)', intArg('--limit', 1, 500), 50)
        .option('--cursor <cursor>', 'continue from an earlier page'),
    ),
  ).action(async (flags: Flags & { asset?: string; limit: number; cursor?: string }) => {
    const asset = flags.asset === undefined ? undefined : parseAssetOption(flags.asset);
    const res = await clientFor(io, flags, 'buyer').walletHistory({ asset, limit: flags.limit, cursor: flags.cursor });
    render(io, flags, res, (wide) => formatWalletHistory(res.entries, wide) + (res.nextCursor ? `more: gpux wallet history --cursor ${res.nextCursor}${asset ? ` --asset ${asset}` : ''}\n` : ''));
  });

  outputOption(
    connectionOptions(
      wallet
        .command('payouts')
        .description('your payouts (withdrawals), newest first')
        .option('--state <state>', 'pending, completed or rejected')
        .option('--limit <n>', 'at most this many payouts (1-500)', intArg('--limit', 1, 500), 100),
    ),
  ).action(async (flags: Flags & { state?: string; limit: number }) => {
    const res = await clientFor(io, flags, 'buyer').myPayouts({ state: parsePayoutState(flags.state), limit: flags.limit });
    render(io, flags, res, (wide) => formatPayouts(res.payouts, { wide }));
  });
}

const PAYOUT_STATES = ['pending', 'completed', 'rejected'] as const;

/** --state of the payout listings. */
export function parsePayoutState(raw: string | undefined): (typeof PAYOUT_STATES)[number] | undefined {
  if (raw === undefined) return undefined;
  if (!(PAYOUT_STATES as readonly string[]).includes(raw)) throw usageError(`--state must be pending, completed or rejected, got "${raw}"`);
  return raw as (typeof PAYOUT_STATES)[number];
}
