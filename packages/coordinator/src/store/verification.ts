/**
 * The verification step in the store (issue 11). STUB until the verification work lands: the attempt-end
 * path calls afterAttemptEndIn; the port's verbs are wired in kysely-store.ts.
 */
import type { AttemptRecord, JobRecord, Page, PenaltyRecord, VerificationRecord } from '@gpux/core';
import type { Kysely } from 'kysely';
import type { StoreContext } from './context.js';
import type { NewEvent } from './events.js';
import type { Database } from './schema.js';

/** What the attempt-end transaction tells the verification step (after the job moved). */
export interface AttemptEndedInput {
  /** The job as written by this attempt end (its new state). */
  job: JobRecord;
  /** The attempt as ended (state, commitment, output digest). */
  attempt: AttemptRecord;
  /** The job's state before this attempt end. */
  previousJobState: string;
  /** FinishAttemptInput.auditDraw (absent for ends the coordinator made: leases, gang stops). */
  auditDraw?: number;
  now: number;
}

/**
 * Called inside every transaction that ends an attempt (finishAttempt, expireLeases), after the job row is
 * written and before the events are inserted. Opens the job's verification step when a buyer's job ended
 * with a committed result, and advances the step when a check run (audit, referee) ended. Returns events.
 */
export async function afterAttemptEndIn(_trx: Kysely<Database>, _ctx: StoreContext, _e: AttemptEndedInput): Promise<NewEvent[]> {
  return [];
}

export async function getVerification(_ctx: StoreContext, _jobId: string): Promise<VerificationRecord | undefined> {
  return undefined;
}

export async function getVerifications(_ctx: StoreContext, _jobIds: readonly string[]): Promise<VerificationRecord[]> {
  return [];
}

export async function closeVerificationWindows(_ctx: StoreContext, _now: number, _limit: number): Promise<VerificationRecord[]> {
  return [];
}

export async function openDispute(_ctx: StoreContext, _q: { jobId: string; buyerId: string; reason: string; bond: number; refereeJobId: string; now: number }): Promise<VerificationRecord> {
  throw new Error('not implemented yet');
}

export async function listPenalties(_ctx: StoreContext, _nodeId: string, _q: { limit: number; cursor?: string }): Promise<Page<PenaltyRecord>> {
  return { items: [], nextCursor: null };
}
