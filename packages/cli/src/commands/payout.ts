/** `gpux payout …` (operator token): the manual settlement adapter's queue — list, complete, reject. */
import type { PayoutView } from '@gpux/protocol';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io, intArg, jsonOption } from '../context.js';
import { usageError } from '../errors.js';
import { outputOption, render, toJson } from '../output.js';
import { money } from '../money-format.js';
import { formatPayouts, parsePayoutState } from './wallet.js';

interface Flags {
  json?: boolean;
  coordinator?: string;
  token?: string;
}

/** What completing or rejecting did, in one line. */
export function formatPayoutOutcome(p: PayoutView): string {
  const what = `payout ${p.id} (${money(p.amount, p.asset)} to ${p.destination}, account ${p.accountId})`;
  if (p.state === 'completed') return `${what} completed, reference ${p.reference ?? '-'}\n`;
  if (p.state === 'rejected') return `${what} rejected: ${p.reason ?? '-'}; the amount is back in the account's wallet\n`;
  return `${what} is ${p.state}\n`;
}

export function registerPayout(program: Command, io: Io): void {
  const payout = program.command('payout').description("settle withdrawals by hand: the manual adapter's queue (operator token)");

  outputOption(
    connectionOptions(
      payout
        .command('list')
        .description('every payout, newest first (--state pending: what is waiting to be paid)')
        .option('--state <state>', 'pending, completed or rejected')
        .option('--limit <n>', 'at most this many payouts (1-500)', intArg('--limit', 1, 500), 100),
    ),
  ).action(async (flags: Flags & { state?: string; limit: number }) => {
    const res = await clientFor(io, flags, 'operator').listPayouts({ state: parsePayoutState(flags.state), limit: flags.limit });
    render(io, flags, res, (wide) => formatPayouts(res.payouts, { account: true, wide }));
  });

  jsonOption(
    connectionOptions(
      payout
        .command('complete')
        .description('the payout was paid outside gpux: record its external reference')
        .argument('<id>', 'payout id')
        .requiredOption('--reference <ref>', 'the external payment id (bank transfer, transaction hash)'),
    ),
  ).action(async (id: string, flags: Flags & { reference: string }) => {
    if (flags.reference.trim() === '') throw usageError('--reference must not be empty: give the external payment id');
    const res = await clientFor(io, flags, 'operator').completePayout(id, flags.reference);
    io.out.write(flags.json ? toJson(res) : formatPayoutOutcome(res.payout));
  });

  jsonOption(
    connectionOptions(
      payout
        .command('reject')
        .description("the payout failed: its amount returns to the account's wallet")
        .argument('<id>', 'payout id')
        .requiredOption('--reason <text>', 'why it failed (the account owner sees it)'),
    ),
  ).action(async (id: string, flags: Flags & { reason: string }) => {
    if (flags.reason.trim() === '') throw usageError('--reason must not be empty: say why the payout failed');
    const res = await clientFor(io, flags, 'operator').rejectPayout(id, flags.reason);
    io.out.write(flags.json ? toJson(res) : formatPayoutOutcome(res.payout));
  });
}
