/** How jobs, attempts, events and log entries look in a terminal. */
import { type AttemptView, type EventView, formatAmount, type GetJobResponse, type JobLogEntry, type JobView, type VerificationView } from '@gpux/protocol';
import type { Io } from './context.js';
import { predictionRows } from './prediction-format.js';
import { type Column, escapeControl, formatAge, formatDuration, formatKeyValues, formatTable, formatTime } from './output.js';

const gpus = (job: JobView) => {
  const g = job.spec.resources.gpu;
  if (g.count === 0) return 'cpu';
  return `${g.count}${g.models ? ` ${g.models.join('|')}` : g.vendor ? ` ${g.vendor}` : ''}`;
};

const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);

const took = (start: number | null, end: number | null) => (start !== null && end !== null ? formatDuration(end - start) : null);

/**
 * The job's verification label as the coordinator states it (TRUST.md wording: what was audited, with which
 * probability, disputable until when); '-' when the job has no verification step (not ended, or none).
 */
export const verificationLabel = (job: JobView) => job.verification?.label ?? '-';

/** "label: summary", the line `job get` and `job submit --wait` print. */
export function verificationLine(v: VerificationView): string {
  return `${v.label}: ${escapeControl(v.summary)}`;
}

/** Key-value rows about the verification step: the label, until when it is disputable, the dispute and the verdict. */
function verificationRows(jobId: string, v: VerificationView): Array<[string, string | null]> {
  return [
    ['verification', verificationLine(v)],
    ['disputable until', v.state === 'window' && !v.dispute ? `${formatTime(v.windowClosesAt)} (gpux job dispute ${jobId} --reason TEXT)` : null],
    ['disputed', v.dispute ? `${formatTime(v.dispute.at)}, bond ${formatAmount(v.dispute.bond, v.dispute.asset)}: ${escapeControl(v.dispute.reason)}` : null],
    ['checks', v.checks.length ? v.checks.map((c) => `${c.kind} ${c.state}${c.agreed === null ? '' : c.agreed ? ' (agreed)' : ' (disagreed)'}`).join(', ') : null],
    ['verdict', v.verdict ? escapeControl(v.verdict) : null],
  ];
}

/** `wide` (-o wide) adds the image, priority, kind, buyer and error. */
export function jobColumns(now: number, wide = false): Column<JobView>[] {
  const columns: Column<JobView>[] = [
    { header: 'ID', value: (j) => j.id },
    { header: 'NAME', value: (j) => j.name },
    { header: 'STATE', value: (j) => (j.cancelRequested && j.state !== 'cancelled' ? `${j.state} (cancelling)` : j.state) },
    { header: 'GPUS', value: gpus },
    { header: 'ATTEMPTS', value: (j) => j.attemptCount, align: 'right' },
    { header: 'EXIT', value: (j) => j.exitCode, align: 'right' },
    { header: 'CREATED', value: (j) => formatAge(j.createdAt, now) },
    { header: 'DURATION', value: (j) => took(j.startedAt, j.finishedAt) },
    { header: 'VERIFICATION', value: verificationLabel },
  ];
  if (!wide) return columns;
  return [
    ...columns,
    { header: 'IMAGE', value: (j) => j.spec.image },
    { header: 'PRIORITY', value: (j) => j.spec.priority ?? 'normal' },
    { header: 'NODES', value: (j) => j.spec.nodes ?? 1, align: 'right' },
    { header: 'KIND', value: (j) => j.kind ?? 'buyer' },
    { header: 'BUYER', value: (j) => j.buyerId },
    { header: 'ERROR', value: (j) => (j.error === null ? null : clip(j.error, 80)) },
  ];
}

const attemptColumns: Column<AttemptView>[] = [
  { header: 'ATTEMPT', value: (a) => a.id },
  { header: 'NODE', value: (a) => a.nodeId },
  { header: 'STATE', value: (a) => a.state },
  { header: 'GPUS', value: (a) => a.gpuIndices.join(',') },
  { header: 'EXIT', value: (a) => a.exitCode, align: 'right' },
  { header: 'STARTED', value: (a) => formatTime(a.startedAt) },
  { header: 'DURATION', value: (a) => took(a.startedAt, a.finishedAt) },
  { header: 'ERROR', value: (a) => a.error },
];

const eventColumns: Column<EventView>[] = [
  { header: 'SEQ', value: (e) => e.seq, align: 'right' },
  { header: 'TIME', value: (e) => formatTime(e.at) },
  { header: 'EVENT', value: (e) => e.type },
  { header: 'DATA', value: (e) => (Object.keys(e.data).length ? JSON.stringify(e.data) : null) },
];

export function formatJobDetail({ job, attempts, events, moreEventsBefore, nodeEventsElided, prediction }: GetJobResponse): string {
  const spec = job.spec;
  const parts = [
    formatKeyValues([
      ['id', job.id],
      ['name', job.name],
      ['state', job.cancelRequested && job.state !== 'cancelled' ? `${job.state} (cancel requested)` : job.state],
      ['image', spec.image],
      ['command', clip([...spec.command, ...spec.args].map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(' '), 160)],
      ['gpus', gpus(job)],
      ['attempts', `${job.attemptCount} (max retries ${spec.maxRetries})`],
      ['timeout', formatDuration(spec.timeoutSeconds * 1000)],
      ['created', formatTime(job.createdAt)],
      ['started', formatTime(job.startedAt)],
      ['finished', formatTime(job.finishedAt)],
      ['exit code', job.exitCode],
      ['error', job.error],
      ...(job.verification ? verificationRows(job.id, job.verification).filter(([, v]) => v !== null) : []),
      ...(prediction ? predictionRows(prediction).filter(([, v]) => v !== null) : []),
    ]),
  ];
  if (attempts.length) parts.push(formatTable(attempts, attemptColumns));
  if (events.length) parts.push(formatTable(events, eventColumns));
  const notes: string[] = [];
  if (nodeEventsElided) notes.push(`${nodeEventsElided} image-pull event(s) left out`);
  if (moreEventsBefore !== null && moreEventsBefore !== undefined) notes.push(`older events: gpux job get ${job.id} --events-before ${moreEventsBefore}`);
  if (notes.length) parts.push(`${notes.join('\n')}\n`);
  return parts.join('\n');
}

/**
 * stdout entries to stdout, stderr entries to stderr, as raw chunks (they are the job's own output, for a
 * file or a pipe); system messages come from the node or the coordinator, not the job: whole lines, marked,
 * control characters escaped.
 */
export function writeLogEntry(io: Io, entry: JobLogEntry): void {
  if (entry.stream === 'stdout') io.out.write(entry.data);
  else if (entry.stream === 'stderr') io.err.write(entry.data);
  else {
    const text = escapeControl(entry.data.replace(/\n$/, ''));
    io.err.write(text.startsWith('[gpux] ') ? `${text}\n` : `[gpux] ${text}\n`);
  }
}

export function summarizeJob(job: JobView): string {
  const duration = took(job.startedAt, job.finishedAt);
  const tail = [duration ? `in ${duration}` : null, job.exitCode !== null ? `exit code ${job.exitCode}` : null, job.error ? `error: ${escapeControl(job.error)}` : null].filter(Boolean);
  const head = `job ${job.id} ${job.state}${tail.length ? ` (${tail.join(', ')})` : ''}`;
  return job.verification ? `${head}\nverification: ${verificationLine(job.verification)}` : head;
}
