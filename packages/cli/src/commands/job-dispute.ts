/**
 * `gpux job dispute ID --reason TEXT`: dispute an ended job's result within its dispute window. A bond is
 * taken from the buyer's wallet and referee runs on independent operators decide (2 must agree): the bond returns if
 * the result was wrong (and the job's pay with it), and goes to the node's provider if it was not.
 */
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io, jsonOption } from '../context.js';
import { usageError } from '../errors.js';
import { verificationLine } from '../job-format.js';
import { money } from '../money-format.js';
import { formatKeyValues, toJson } from '../output.js';

const MAX_REASON = 2000;

export function registerDispute(job: Command, io: Io): void {
  jsonOption(
    connectionOptions(
      job
        .command('dispute')
        .description("dispute a job's result within its window: a bond is held, referee runs on other operators decide (2 must agree)")
        .argument('<id>', 'job id')
        .requiredOption('--reason <text>', `what is wrong with the result, for the record (1-${MAX_REASON} characters)`),
    ),
  ).action(async (id: string, flags: { json?: boolean; coordinator?: string; token?: string; reason: string }) => {
    const reason = flags.reason.trim();
    if (reason.length === 0 || reason.length > MAX_REASON) throw usageError(`--reason must be 1-${MAX_REASON} characters (it has ${reason.length})`);
    const res = await clientFor(io, flags, 'buyer').disputeJob(id, reason);
    if (flags.json) return void io.out.write(toJson(res));
    io.out.write(
      formatKeyValues([
        ['job', id],
        ['bond held', `${money(res.bond, res.asset)} (returned if the result was wrong; paid to the node if not)`],
        ['verification', verificationLine(res.verification)],
        ['next', `referee runs decide (2 must agree); follow it with gpux job get ${id}`],
      ]),
    );
  });
}
