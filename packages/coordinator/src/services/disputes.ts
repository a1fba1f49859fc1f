/**
 * A buyer's dispute of a job's result (issue 11, TRUST.md "buyer's dispute found false"): within the job's
 * dispute window the buyer posts a bond (never 0) and referee runs on independent operators decide (2 must agree). The store's
 * openDispute is the authority (it rechecks everything in one transaction); the checks here only turn the
 * common refusals into messages that say what was wrong and what to do.
 */
import { ACCOUNTS, BPS, GpuxError, isGpuxError, mulDiv, newId, type VerificationRecord } from '@gpux/core';
import { type Asset, type DisputeRequest, type DisputeResponse, formatAmount } from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { verificationView } from '../views.js';
import { visibleJob } from './jobs.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type DisputesDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'logger' | 'logs' | 'random' | 'signals' | 'store' | 'work'>;

/**
 * The bond: `bps` of what the job was charged, rounded up, and never under `min`. Why a floor: a referee
 * run costs compute whatever the job cost, so a dispute of a cheap (or free) job is not free either.
 */
export function disputeBond(charged: number, bps: number, min: number): number {
  return Math.max(mulDiv(charged, bps, BPS, 'up'), min, 1);
}

const iso = (ms: number) => new Date(ms).toISOString();

/** Why the step cannot be disputed now, in words; null when it can (as far as a read outside the transaction knows). */
function refusal(id: string, v: VerificationRecord, now: number): string | null {
  if (v.dispute) return `job ${id} was already disputed at ${iso(v.dispute.at)}; one dispute per job (its referee runs decide)`;
  if (v.state === 'auditing' || v.state === 'refereeing') {
    return `job ${id} is still being audited (an independent re-run is under way) and may settle the question; dispute after its verdict, while the window is open (until ${iso(v.windowClosesAt)})`;
  }
  if (now >= v.windowClosesAt) return `the dispute window of job ${id} closed at ${iso(v.windowClosesAt)}; a result can only be disputed before then`;
  if (v.state === 'failed') return `job ${id} was already found wrong (${v.verdict ?? v.label}); its pay went back to you`;
  if (v.state !== 'window') return `job ${id} cannot be disputed: its verification is already decided (${v.label}${v.verdict ? `: ${v.verdict}` : ''})`;
  if (v.reason === 'not-deterministic') return `job ${id} declared deterministic: false, so no re-run can check its output and it cannot be disputed`;
  return null;
}

export async function disputeJob(rt: DisputesDeps, p: Principal, id: string, body: DisputeRequest): Promise<DisputeResponse> {
  const job = await visibleJob(rt, p, id);
  // The bond comes out of the job buyer's wallet: only that account may post it, operators included.
  if (job.buyerId !== p.accountId) throw new GpuxError('FORBIDDEN', `only the buyer of job ${id} may dispute it (the bond comes from their wallet)`);
  const now = rt.clock.now();
  const v = await rt.store.getVerification(id);
  if (!v) {
    const why = ['succeeded', 'failed'].includes(job.state) ? 'it has no verification step (verification is off, or it ended without a result)' : `it is ${job.state}; only a job that ended with a result can be disputed`;
    throw new GpuxError('CONFLICT', `job ${id} cannot be disputed: ${why}`);
  }
  const refused = refusal(id, v, now);
  if (refused) throw new GpuxError('CONFLICT', refused);

  const asset: Asset = job.payment?.asset ?? job.spec.asset ?? 'usdc';
  let charged = 0;
  for (const a of await rt.store.listAttempts(id)) if (a.price?.asset === asset) charged += a.settlement.charged;
  const bond = disputeBond(charged, rt.config.disputeBondBps, rt.config.disputeBondMin);
  const record = await rt.store.openDispute({ jobId: id, buyerId: p.accountId, reason: body.reason, bond, refereeJobId: newId('job', now, rt.random), now }).catch(async (err: unknown) => {
    if (isGpuxError(err) && err.code === 'INSUFFICIENT_FUNDS') {
      const available = await rt.store.getBalance(ACCOUNTS.wallet(p.accountId), asset);
      throw new GpuxError(
        'INSUFFICIENT_FUNDS',
        `the dispute bond of job ${id} is ${formatAmount(bond, asset)} (${rt.config.disputeBondBps / 100}% of the ${formatAmount(charged, asset)} it was charged, at least ${formatAmount(rt.config.disputeBondMin, asset)}); your wallet has ${formatAmount(available, asset)} available — deposit funds (gpux wallet deposit) and dispute again before ${iso(v.windowClosesAt)}`,
        { cause: err },
      );
    }
    throw err;
  });
  rt.logger.info({ jobId: id, buyerId: p.accountId, bond, asset }, 'job disputed');
  rt.signals.kick(); // the referee run waits in the queue
  return { verification: verificationView(record), bond, asset };
}
