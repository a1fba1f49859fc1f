/** `gpux job …`: submit, list, get, logs, result, verify, dispute, cancel, bill. */
import { ASSET_SYMBOL, type BillResponse, JOB_STATES } from '@gpux/protocol';
import { blobsOf, downloadEncryptedOutputs, EncryptedLogReader, loadBuyerKeys } from '@gpux/sdk';
import type { Command } from 'commander';
import { choiceListArg, clientFor, connectionOptions, type Io, intArg, jsonOption } from '../context.js';
import { CliError } from '../errors.js';
import { formatJobDetail, jobColumns, writeLogEntry } from '../job-format.js';
import { verifyOutputDigest, writeBlobOutputs, writeOutputs } from '../job-outputs.js';
import { escapeControl, formatBytes, formatKeyValues, formatTable, formatTime, outputOption, render, toJson } from '../output.js';
import { registerDispute } from './job-dispute.js';
import { registerExplain } from './job-explain.js';
import { registerSubmit, watchUntilInterrupted } from './job-submit.js';
import { registerJobKeys } from './keys.js';
import { gpuxHome } from '../profile.js';
import { registerVerify } from './job-verify.js';
import { money, signedMoney } from '../money-format.js';

interface Flags {
  json?: boolean;
  coordinator?: string;
  token?: string;
}

export function registerJob(program: Command, io: Io): void {
  const job = program.command('job').description('submit and inspect jobs (buyer token)');
  registerSubmit(job, io);
  registerJobKeys(job, io);

  outputOption(
    connectionOptions(
      job
        .command('list')
        .description('list jobs, newest first')
        .option('--state <state>', 'only jobs in this state (or a comma-separated list): queued, assigned, running, succeeded, failed, cancelled', choiceListArg('--state', JOB_STATES))
        .option('--limit <n>', 'at most this many jobs (1-500)', intArg('--limit', 1, 500), 50)
        .option('--cursor <cursor>', 'continue from an earlier page'),
    ),
  ).action(async (flags: Flags & { state?: string; limit: number; cursor?: string }) => {
    const res = await clientFor(io, flags, 'buyer').listJobs({ state: flags.state, limit: flags.limit, cursor: flags.cursor });
    render(io, flags, res, (wide) =>
      res.jobs.length === 0 ? 'no jobs\n' : formatTable(res.jobs, jobColumns(Date.now(), wide)) + (res.nextCursor ? `more: gpux job list --cursor ${res.nextCursor}\n` : ''),
    );
  });

  outputOption(
    connectionOptions(
      job
        .command('get')
        .description('a job with its attempts and its newest events')
        .argument('<id>', 'job id')
        .option('--events-before <seq>', 'older events: those before this seq (printed under the events)', intArg('--events-before', 0, Number.MAX_SAFE_INTEGER))
        .option('--events-limit <n>', 'state and money events per page (1-1000)', intArg('--events-limit', 1, 1000)),
    ),
  ).action(async (id: string, flags: Flags & { eventsBefore?: number; eventsLimit?: number }) => {
    const res = await clientFor(io, flags, 'buyer').getJob(id, { eventsBefore: flags.eventsBefore, eventsLimit: flags.eventsLimit });
    render(io, flags, res, () => formatJobDetail(res));
  });

  jsonOption(
    connectionOptions(
      job
        .command('logs')
        .description('print the logs of every attempt (stdout to stdout, the rest to stderr)')
        .argument('<id>', 'job id')
        .option('-f, --follow', 'keep following until the job is finished'),
    ),
  ).action(async (id: string, flags: Flags & { follow?: boolean }) => {
    const client = clientFor(io, flags, 'buyer');
    const write = flags.json ? (e: object) => io.out.write(`${JSON.stringify(e)}\n`) : (e: Parameters<typeof writeLogEntry>[1]) => writeLogEntry(io, e);
    const { job: current } = await client.getJob(id, { eventsLimit: 1 });
    // An encrypted job's entries are decrypted with your key (issue 13); one that does not authenticate is flagged.
    const reader = current.spec.encryption ? new EncryptedLogReader(client, id, await loadBuyerKeys(gpuxHome(io.env))) : null;
    const emit = async (e: Parameters<typeof writeLogEntry>[1]) => write(reader ? await reader.decrypt(e) : e);
    const notStarted = current.state === 'queued' || current.state === 'assigned';
    if (flags.follow) {
      await watchUntilInterrupted(io, id, current.state, async (signal, seen) => {
        // Said once Ctrl-C is ours (inside the watch), so an interrupt right after it is answered, not fatal.
        if (notStarted && !flags.json) io.err.write(`job ${id} is ${current.state}; it has not started yet: waiting for its logs (Ctrl-C stops waiting, not the job)\n`);
        for await (const entry of client.followLogs(id, { signal })) {
          if (entry.stream !== 'system') seen.state = 'running';
          await emit(entry);
        }
        return current;
      });
      return;
    }
    let after = -1;
    let printed = 0;
    for (;;) {
      const page = await client.jobLogs(id, { after, limit: 1000 });
      for (const entry of page.entries) await emit(entry);
      printed += page.entries.length;
      if (page.entries.length === 0 || page.done) break;
      after = page.next;
    }
    // Nothing printed from a job that has not run is not an empty log: say why (on stderr, stdout stays the job's).
    if (printed === 0 && notStarted && !flags.json) io.err.write(`job ${id} is ${current.state}; it has not started yet — follow with -f: gpux job logs ${id} -f\n`);
  });

  jsonOption(
    connectionOptions(
      job
        .command('result')
        .description('exit code and outputs of a finished job')
        .argument('<id>', 'job id')
        .option('--out <dir>', 'write the output files into this directory (sha256-checked)'),
    ),
  ).action(async (id: string, flags: Flags & { out?: string }) => {
    const client = clientFor(io, flags, 'buyer');
    const res = await client.jobResult(id);
    // An encrypted job's outputs are ciphertext: decrypted with your key, each plaintext digest checked (issue 13).
    if (flags.out && res.outputs.some((o) => o.encrypted)) {
      const got = await downloadEncryptedOutputs(client, id, flags.out, await loadBuyerKeys(gpuxHome(io.env)));
      io.out.write(flags.json ? toJson({ ...res, written: got.written, skipped: got.missing }) : `decrypted ${got.written.length} file(s) into ${flags.out}\n`);
      if (got.missing.length) io.err.write(`not written (the node could not upload them): ${got.missing.join(', ')}\n`);
      return;
    }
    if (!verifyOutputDigest(res.outputs, res.outputDigest)) {
      throw new CliError(`the output list of job ${id} does not match its output digest ${res.outputDigest}`);
    }
    // Inline files first, then the ones in the blob store, streamed with their digests checked (issue 13).
    const written = flags.out ? await writeBlobOutputs(flags.out, res.outputs, writeOutputs(flags.out, res.outputs), blobsOf(client)) : null;
    if (flags.json) io.out.write(toJson(written ? { ...res, written: written.written, skipped: written.skipped } : res));
    else {
      io.out.write(
        formatKeyValues([
          ['job', res.jobId],
          ['attempt', res.attemptId],
          ['state', res.state],
          ['exit code', res.exitCode],
          ['error', res.error],
          ['output digest', res.outputDigest],
          ['committed by', res.commitment ? `node ${res.commitment.nodeId} (signed; check: gpux job verify ${id})` : '- (no signed commitment)'],
        ]),
      );
      if (res.outputs.length) {
        io.out.write(`\n${formatTable(res.outputs, [
          { header: 'PATH', value: (o) => o.path },
          { header: 'SIZE', value: (o) => formatBytes(o.size), align: 'right' },
          { header: 'SHA256', value: (o) => o.sha256 },
          { header: 'BYTES', value: (o) => (o.content !== undefined ? 'inline' : o.blob ? 'blob' : 'missing') },
        ])}`);
      }
      if (written) io.out.write(`wrote ${written.written.length} file(s) to ${flags.out}\n`);
    }
    if (written?.skipped.length) {
      throw new CliError(
        `${written.skipped.length} output file(s) were neither returned inline nor stored as blobs (the node could not upload them) and were not written: ${written.skipped.map(escapeControl).join(', ')}`,
      );
    }
  });

  registerExplain(job, io);
  registerVerify(job, io);
  registerDispute(job, io);

  outputOption(connectionOptions(job.command('bill').description('what the job cost: held, charged, fee, refunded, line by line').argument('<id>', 'job id'))).action(
    async (id: string, flags: Flags) => {
      const res = await clientFor(io, flags, 'buyer').jobBill(id);
      render(io, flags, res, () => formatBill(res));
    },
  );

  jsonOption(connectionOptions(job.command('cancel').description('cancel a job; a running attempt stops within one heartbeat').argument('<id>', 'job id'))).action(
    async (id: string, flags: Flags) => {
      const res = await clientFor(io, flags, 'buyer').cancelJob(id);
      if (flags.json) io.out.write(toJson(res));
      else io.out.write(res.job.state === 'cancelled' ? `job ${id} cancelled\n` : `job ${id}: cancel requested (${res.job.state})\n`);
    },
  );
}

/** The bill: totals, then each ledger line signed from the buyer's point of view (a charge is negative). */
export function formatBill(b: BillResponse): string {
  if (!b.market) return `job ${b.jobId} ran free: this coordinator runs without a market\n`;
  const m = (n: number) => money(n, b.asset);
  let out = formatKeyValues([
    ['job', b.jobId],
    ['asset', ASSET_SYMBOL[b.asset]],
    ['cap per unit-hour', `${m(b.capPerUnitHour)} (per GPU-hour; per job-hour when CPU-only)`],
    ['held', m(b.held)],
    ['charged', m(b.charged)],
    ['  to providers', m(b.toProviders)],
    ['  fee', m(b.fee)],
    ['refunded', m(b.refunded)],
    ['in escrow', m(b.inEscrow)],
  ]);
  if (b.lines.length === 0) return out;
  out += `\n${formatTable(b.lines, [
    { header: 'TIME', value: (l) => formatTime(l.at) },
    { header: 'KIND', value: (l) => l.kind },
    { header: 'ATTEMPT', value: (l) => l.attemptId },
    { header: 'AMOUNT', value: (l) => signedMoney(l.amount, b.asset), align: 'right' },
    { header: 'MEMO', value: (l) => l.memo },
  ])}`;
  return out;
}
