/** Submit the dev sample job, follow its logs, and print its result digest. */
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
  return true;
}
