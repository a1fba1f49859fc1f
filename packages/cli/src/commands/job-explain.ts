/**
 * `gpux job explain ID`: why a pending job waits — per-filter rejections, queue position, what to change. The
 * coordinator writes every sentence (amounts with their asset), so this prints them as they are, as the dashboard does.
 */
import type { ExplainJobResponse, RegionAdvice } from '@gpux/protocol';
import type { Command } from 'commander';
import { clientFor, connectionOptions, type Io } from '../context.js';
import { formatKeyValues, formatTable, outputOption, render } from '../output.js';
import { predictionRows } from '../prediction-format.js';

/** Issue 15: the regions that could run the job and the routing verdict, as the coordinator words them (advice only). */
export function formatRegionAdvice(r: RegionAdvice | undefined): string {
  if (!r) return '';
  const lines = r.options.map((o) => `  - ${o.why}${o.url ? ` [${o.url}]` : ''}\n`).join('');
  const skipped = r.skipped.map((s) => `  - left out: ${s}\n`).join('');
  return `regions:\n${lines}${skipped}  region choice: ${r.verdict.sentence}\n`;
}

export function formatExplain(e: ExplainJobResponse): string {
  let out = formatKeyValues([
    ['job', e.jobId],
    ['state', e.state],
    ['summary', e.summary],
    ['queue position', e.queuePosition === null ? '-' : `${e.queuePosition} ahead of ${e.queuedTotal ?? '?'} queued`],
    ['retry not before', e.runAfter === null ? '-' : new Date(e.runAfter).toISOString()],
    ['nodes', `${e.nodesTotal} in all, ${e.nodesFitting} fit now, ${e.nodesBusy} fit but busy`],
    ['price', e.price],
    ...(e.prediction ? predictionRows(e.prediction).filter(([, v]) => v !== null) : []),
  ]);
  if (e.filters.length > 0) {
    out += `\nnodes rejected, by the first filter each failed:\n`;
    out += formatTable(e.filters, [
      { header: 'FILTER', value: (f) => f.name },
      { header: 'NODES', value: (f) => f.rejected, align: 'right' },
      { header: 'WHY', value: (f) => f.message },
    ]);
  }
  if (e.suggestions.length > 0) out += `\nwhat to change:\n${e.suggestions.map((s) => `  - ${s}\n`).join('')}`;
  if (e.regions) out += `\n${formatRegionAdvice(e.regions)}`;
  return out;
}

export function registerExplain(job: Command, io: Io): void {
  outputOption(connectionOptions(job.command('explain').description('why a pending job waits, and what to change').argument('<id>', 'job id'))).action(
    async (id: string, flags: { json?: boolean; coordinator?: string; token?: string }) => {
      const res = await clientFor(io, flags, 'buyer').explainJob(id);
      render(io, flags, res, () => formatExplain(res));
    },
  );
}
