/**
 * Queue timeouts (issue 10 item 4): a job that waited queued past its queue timeout (spec
 * queueTimeoutSeconds, else GPUX_QUEUE_TIMEOUT_S) fails, with the reason explain gives for it now — no
 * node fits it, no node accepted its price, no node had the stake, or the nodes that fit stayed busy — and
 * its escrow returns to the buyer (store failQueueTimeouts, one transaction per job). Run by the expiry pass.
 */
import { explainPlacement, type JobRecord, requirementsOf } from '@gpux/core';
import { formatAmount } from '@gpux/protocol';
import type { Needs } from '../runtime.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type QueueTimeoutsDeps = Needs<'config' | 'index' | 'logger' | 'logs' | 'store'>;

const BATCH = 200;
/** Jobs failed per expiry pass at most: a flood of timeouts is worked off over passes, not in one. */
const MAX_PER_PASS = 2000;

/** Why the job never left the queue, in words the buyer can act on (what follows "waited N s in the queue: "). */
export function queueTimeoutWhy(rt: QueueTimeoutsDeps, job: JobRecord): string {
  const p = explainPlacement(job, rt.index);
  const req = requirementsOf(job);
  const rejected = (name: string) => p.filters.find((f) => f.name === name)?.rejected ?? 0;
  const per = req.gpuCount > 0 ? 'GPU-hour' : 'job-hour';
  let why: string;
  if (p.nodesFitting + p.nodesBusy + rejected('failedBefore') >= req.nodes) why = 'the nodes that fit it stayed busy';
  else if (rejected('price') > 0) {
    const cap = job.payment ? formatAmount(job.payment.capPerUnitHour, job.payment.asset) : String(req.maxPrice);
    why = `no node accepted its price (cap ${cap} per ${per}; raise maxPricePerGpuHour)`;
  } else if (rejected('stake') > 0) why = 'no node that fits it had the free stake its price needs';
  else why = `no node fits it (${p.suggestions[0] ?? 'see GET /v1/jobs/:id/explain'})`;
  return why;
}

/**
 * Fail every queued job past its deadline, in batches (each job in its own store transaction). Explain looks
 * at every node, so its verdict is worked out once per job shape (and payment cap) per pass.
 */
export async function expireQueuedJobs(rt: QueueTimeoutsDeps, now: number): Promise<number> {
  let done = 0;
  const why = new Map<string, string>();
  const reason = (job: JobRecord, waited: number) => {
    const key = `${requirementsOf(job).shape}|${job.payment?.capPerUnitHour ?? ''}|${job.payment?.asset ?? ''}`;
    let r = why.get(key);
    if (r === undefined) {
      r = queueTimeoutWhy(rt, job);
      why.set(key, r);
    }
    return `waited ${waited} s in the queue: ${r}`;
  };
  while (done < MAX_PER_PASS) {
    const failed = await rt.store.failQueueTimeouts({ now, defaultTimeoutSeconds: rt.config.queueTimeoutSeconds, limit: BATCH, reason });
    for (const j of failed) {
      rt.logs.wake(j.id);
      rt.logger.info({ jobId: j.id, buyerId: j.buyerId, error: j.error }, 'queue timeout: job failed');
    }
    done += failed.length;
    if (failed.length < BATCH) break;
  }
  return done;
}
