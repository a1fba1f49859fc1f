/**
 * POST /v1/jobs/quote (issue 16, `gpux job submit --dry-run`): a submit that writes nothing. The spec passes the
 * same checks as submit (the route's schema, replicas against verification, the market cap against the class
 * floors: services/jobs.ts submitJob), then the answer says what a submit would hold, what the job would pay on
 * the cheapest and the dearest node that fits, how many fit now and how long it would likely wait. Reads the
 * capacity index and the price book in memory, and one balance from the store.
 */
import { ACCOUNTS, estimateWait, explainPlacement, GpuxError, type JobRecord, quotePlacement, requirementsOf } from '@gpux/core';
import { type JobSpec, priceUnit, type QuoteJobResponse } from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';
import { paymentFor } from './market.js';
import { type RegionAdviceDeps, regionAdvice } from './region-advice.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type QuoteDeps = Needs<'book' | 'clock' | 'config' | 'index' | 'scheduling' | 'store'> & RegionAdviceDeps;

export async function quoteJob(rt: QuoteDeps, p: Principal, spec: JobSpec): Promise<QuoteJobResponse> {
  const replicated = spec.replicas === 2;
  // The same refusals as submitJob, in its order, so a dry run fails where a submit would.
  if (replicated && !rt.config.verify) {
    throw new GpuxError('SPEC_INVALID', 'replicas: 2 needs result verification, and this coordinator runs with it off', {
      problems: [{ path: 'replicas', message: 'drop replicas, or ask the operator to turn verification on (GPUX_VERIFY=on)' }],
    });
  }
  const payment = paymentFor(rt, spec) ?? null;
  const runs = replicated ? 2 : 1;
  const req = requirementsOf({ spec, avoidNodeIds: [], payment });
  const q = quotePlacement(req, rt.index);
  const needed = req.nodes;
  const now = rt.clock.now();
  const wait = estimateWait(q, needed, rt.scheduling.waits.recent(now), rt.config.schedulePassIntervalMs);
  // What to change comes from explain (the same filters); it reads only the spec of the job it is given.
  const suggestions = wait.kind === 'never' ? explainPlacement({ spec, avoidNodeIds: [], payment } as unknown as JobRecord, rt.index).suggestions : [];
  const available = payment ? await rt.store.getBalance(ACCOUNTS.wallet(p.accountId), payment.asset) : null;
  const holdTotal = payment ? payment.held * runs : null;
  const local = { nodesFitting: q.nodesFitting, nodesBusy: q.nodesBusy, nodesNeeded: needed, wait };
  const regions = await regionAdvice(rt, p, req, local, { queueTimeoutSeconds: spec.queueTimeoutSeconds, asset: payment?.asset ?? spec.asset ?? 'usdc', spec });
  return {
    name: spec.name,
    market: rt.config.market,
    payment,
    runs,
    holdTotal,
    available,
    enoughFunds: available === null || holdTotal === null ? null : available >= holdTotal,
    unit: priceUnit(spec.resources.gpu.count) as 'GPU-hour' | 'job-hour',
    priceLow: q.priceLow,
    priceHigh: q.priceHigh,
    nodesNeeded: needed,
    nodesTotal: q.nodesTotal,
    nodesFitting: q.nodesFitting,
    nodesBusy: q.nodesBusy,
    wait,
    suggestions,
    ...(regions ? { regions } : {}),
  };
}
