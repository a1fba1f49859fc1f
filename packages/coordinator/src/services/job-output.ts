/**
 * Reading what a job produced: its logs (cursor + long-poll) and its result. Log pages are bounded by rows
 * and bytes; the readers of one job at one cursor share one store read per wake (kept a moment for those
 * arriving a little later, within a memory budget); long-polls are capped per token.
 */
import { performance } from 'node:perf_hooks';
import { GpuxError, type StoredLogEntry } from '@gpux/core';
import { type JobLogsResponse, type JobResultResponse, LOG_ENTRY_MAX_BYTES, TERMINAL_JOB_STATES } from '@gpux/protocol';
import { canSeeBuyer, type Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { PollSlots, SharedReads } from '../waiters.js';
import { visibleJob } from './jobs.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type JobOutputDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'logger' | 'logs' | 'random' | 'signals' | 'store' | 'work'>;

/** What one read of a job's logs saw. */
interface LogSnapshot {
  terminal: boolean;
  rows: StoredLogEntry[];
}

/** A read of one cursor is reused until the job's next wake, at most this long, within a memory budget. */
const KEEP_MS = 1000;
const KEEP_BYTES = 16 * 1024 * 1024;
const weigh = (snap: LogSnapshot) => 256 + snap.rows.reduce((n, r) => n + 128 + r.data.length * 2, 0);

/** Per-runtime reader state, kept beside the runtime rather than in it. */
const readers = new WeakMap<object, { slots: PollSlots; reads: SharedReads<LogSnapshot>; owners: Map<string, string> }>();
function readerState(rt: JobOutputDeps) {
  let s = readers.get(rt);
  if (!s) {
    s = { slots: new PollSlots(), reads: new SharedReads<LogSnapshot>({ keepMs: KEEP_MS, maxWeight: KEEP_BYTES, weigh }), owners: new Map() };
    readers.set(rt, s);
  }
  return s;
}

/** The job's buyer (it never changes, so it is remembered): a re-poll checks visibility without the store. */
async function ownerOf(rt: JobOutputDeps, owners: Map<string, string>, id: string): Promise<string | undefined> {
  const known = owners.get(id);
  if (known !== undefined) return known;
  const job = await rt.store.getJob(id);
  if (!job) return undefined;
  if (owners.size >= 10_000) owners.clear();
  owners.set(id, job.buyerId);
  return job.buyerId;
}

/** Log long-polls (waitMs > 0) this token holds now (tests, metrics). */
export function logPollsHeld(rt: JobOutputDeps, tokenId: string): number {
  return readerState(rt).slots.count(tokenId);
}

/**
 * One page of a job's logs, waiting up to waitMs for the first new entry. `gone` aborts when the client
 * hangs up: a long-poll nobody waits for gives its slot back at once.
 */
export async function readJobLogs(rt: JobOutputDeps, p: Principal, id: string, q: { after: number; limit: number; waitMs: number }, gone?: AbortSignal): Promise<JobLogsResponse> {
  const state = readerState(rt);
  const owner = await ownerOf(rt, state.owners, id);
  // Someone else's job is reported missing, not forbidden (as visibleJob does).
  if (owner === undefined || !canSeeBuyer(p, owner)) throw new GpuxError('JOB_NOT_FOUND', `no job ${id}`);
  let release: (() => void) | undefined;
  if (q.waitMs > 0) {
    const max = rt.config.logPollsPerToken;
    release = state.slots.take(p.tokenId, max);
    if (!release) {
      throw new GpuxError('LIMIT_EXCEEDED', `this token already holds ${max} log long-polls (the limit); wait for one to return, or read without waitMs`, {
        problems: [{ path: 'waitMs', message: `at most ${max} concurrent long-polls per token` }],
      });
    }
  }
  const maxBytes = rt.config.logPageMaxBytes;
  const key = `${id}|${q.after}|${q.limit}`;
  // The job is read before its logs: if it was finished then, every entry it will get is already stored.
  const snapshot = async (): Promise<LogSnapshot> => {
    const job = await rt.store.getJob(id);
    const terminal = job !== undefined && TERMINAL_JOB_STATES.includes(job.state);
    return { terminal, rows: await rt.store.readLogs(id, q.after, q.limit, maxBytes) };
  };
  // Shutting down: answer from the store now; otherwise share the read of everyone at this cursor.
  const read = (): Promise<LogSnapshot> => (rt.logs.isClosed ? snapshot() : state.reads.read(key, rt.logs.generation(id), snapshot));
  const hangUp = gone ? new Promise<void>((resolve) => gone.addEventListener('abort', () => resolve(), { once: true })) : undefined;
  const begin = performance.now();
  try {
    for (;;) {
      const sub = rt.logs.subscribe(id);
      try {
        const { terminal, rows } = await read();
        const remaining = q.waitMs - (performance.now() - begin);
        if (rows.length > 0 || terminal || remaining <= 0 || rt.logs.isClosed || gone?.aborted) {
          const bytes = rows.reduce((n, r) => n + Buffer.byteLength(r.data), 0);
          // A page cut by rows or bytes may have more behind it; done only when it ends short of both.
          const full = rows.length >= q.limit || bytes + LOG_ENTRY_MAX_BYTES > maxBytes;
          return {
            entries: rows.map((r) => ({ attemptId: r.attemptId, cursor: r.cursor, seq: r.seq, stream: r.stream, data: r.data, at: r.at })),
            next: rows.at(-1)?.cursor ?? q.after,
            done: terminal && !full,
          };
        }
        await (hangUp ? Promise.race([sub.wait(remaining), hangUp]) : sub.wait(remaining));
      } finally {
        sub.dispose();
      }
    }
  } finally {
    release?.();
  }
}

export async function jobResult(rt: JobOutputDeps, p: Principal, id: string): Promise<JobResultResponse> {
  const job = await visibleJob(rt, p, id);
  if (!TERMINAL_JOB_STATES.includes(job.state)) throw new GpuxError('RESULT_NOT_READY', `job ${id} is ${job.state}; its result is not ready`);
  const attempts = await rt.store.listAttempts(id);
  const last = job.currentAttemptId ? (attempts.find((a) => a.id === job.currentAttemptId) ?? attempts.at(-1)) : attempts.at(-1);
  if (!last) throw new GpuxError('CONFLICT', `job ${id} was ${job.state} before any attempt ran; it has no result`);
  return {
    jobId: id,
    attemptId: last.id,
    state: job.state,
    exitCode: job.exitCode,
    error: job.error,
    outputDigest: last.outputDigest,
    outputs: await rt.store.getOutputs(last.id),
    // What the node signed, with its key, so a buyer can check it without trusting this coordinator's word.
    nodeId: last.nodeId,
    commitment: last.commitment ? JSON.parse(last.commitment) : null,
    commitmentSignature: last.commitmentSignature ?? null,
    nodePublicKey: (await rt.store.getNode(last.nodeId))?.publicKey ?? null,
  };
}
