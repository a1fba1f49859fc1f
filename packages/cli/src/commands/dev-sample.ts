/** Submit the dev sample job, follow its logs, and print its result digest. */
import { formatAmount } from '@gpux/protocol';
import type { GpuxClient } from '@gpux/sdk';
import type { Io } from '../context.js';
import { writeLogEntry } from '../job-format.js';
import { verifyOutputDigest } from '../job-outputs.js';
import { formatBytes } from '../output.js';
import { sampleJobSpec } from '../sample-job.js';

/** True when the sample job succeeded and its outputs match its digest. */
export async function runSampleJob(io: Io, client: GpuxClient, signal: AbortSignal): Promise<boolean> {
  const say = (line: string) => io.out.write(`${line}\n`);
  const { job } = await client.submitJob(sampleJobSpec(), { signal });
  say(`sample job ${job.id}: submitted; its logs follow`);
  for await (const entry of client.followLogs(job.id, { signal })) writeLogEntry(io, entry);
  const final = (await client.getJob(job.id, { signal })).job;
  if (final.state !== 'succeeded') {
    say(`sample job ${job.id} ${final.state}${final.error ? `: ${final.error}` : ''}${final.exitCode !== null ? ` (exit code ${final.exitCode})` : ''}`);
    return false;
  }
  const result = await client.jobResult(job.id, { signal });
  if (!verifyOutputDigest(result.outputs, result.outputDigest)) {
    say(`sample job ${job.id}: its outputs do not match the output digest ${result.outputDigest}`);
    return false;
  }
  say(`sample job ${job.id} succeeded (exit code ${result.exitCode}); output digest ${result.outputDigest}`);
  for (const o of result.outputs) say(`  ${o.path}  ${formatBytes(o.size)}  sha256 ${o.sha256}`);
  say(`  gpux job result ${job.id} --out ./outputs   # writes them here`);
  const bill = await client.jobBill(job.id, { signal });
  if (bill.market) {
    const m = (n: number) => formatAmount(n, bill.asset);
    say(`sample job ${job.id} cost ${m(bill.charged)} (${m(bill.toProviders)} to the provider, ${m(bill.fee)} treasury fee); ${m(bill.refunded)} of the ${m(bill.held)} hold returned`);
    say(`  gpux job bill ${job.id}   # line by line`);
  }
  return true;
}
