/**
 * Explain: why a pending job waits. Runs the placement filters (filters.ts) over every node in funnel order
 * and counts, per filter, the nodes it rejected (explain-tally.ts); then says, in final sentences with amounts
 * written as the CLI writes them (explain-text.ts), what rules nodes out and what to change. The CLI and the
 * dashboard print these sentences as they are. This is the one place that looks at every node: it runs on
 * demand for one buyer's question, never in the scheduling pass (50,000 nodes take a few milliseconds).
 */
import { type ExplainFilter, type ExplainJobResponse, plural } from '@gpux/protocol';
import type { JobRecord } from '../records.js';
import type { CapacityIndex } from './capacity-index.js';
import { tally } from './explain-tally.js';
import { type Facts, messageOf, poolOf, priceLine, suggest } from './explain-text.js';
import { FILTER_ORDER } from './filters.js';
import { requirementsOf } from './requirements.js';

export interface PlacementExplanation {
  nodesTotal: number;
  nodesFitting: number;
  nodesBusy: number;
  filters: ExplainFilter[];
  /** Lowest price (minor units per unit-hour) among the nodes that take the job now; null when none has one. */
  cheapestFittingAsk: number | null;
  /** What the job pays at most and what the nodes that fit ask, in words (amounts with their asset). */
  price: string;
  suggestions: string[];
}

/** What the scores (scores.ts) rank fitting nodes by, named for buyers: reliability is the node's reputation. */
const RANKED_BY =
  'reputation (audits and canaries passed or failed, completed jobs, lost leases) and uptime, price, speed (measured runtimes and the proof-of-hardware score), latency and packing';

function factsOf(job: JobRecord, index: CapacityIndex): Facts {
  const req = requirementsOf(job);
  const t = tally(req, index);
  return { req, job, t, fitting: t.rejected.get('fit') ?? 0, busy: t.rejected.get('busy') ?? 0, total: index.size };
}

export function explainPlacement(job: JobRecord, index: CapacityIndex): PlacementExplanation {
  return placementOf(factsOf(job, index));
}

function placementOf(f: Facts): PlacementExplanation {
  const filters = FILTER_ORDER.filter((name) => (f.t.rejected.get(name) ?? 0) > 0).map((name) => ({ name, rejected: f.t.rejected.get(name) ?? 0, message: messageOf(name, f) }));
  return {
    nodesTotal: f.total,
    nodesFitting: f.fitting,
    nodesBusy: f.busy,
    filters,
    cheapestFittingAsk: f.t.minFittingPrice,
    price: priceLine(f),
    suggestions: suggest(f),
  };
}

/** The whole answer of GET /v1/jobs/:id/explain. `queue`: from the store's standing (fairQueuePosition). */
export function explainJob(job: JobRecord, index: CapacityIndex, now: number, queue: { ahead: number; total: number } | null): ExplainJobResponse {
  const pending = job.state === 'queued';
  const f = factsOf(job, index);
  const p = placementOf(f);
  const n = f.req.nodes;
  let summary: string;
  if (!pending) summary = `the job ${job.state === 'succeeded' || job.state === 'failed' ? 'has' : 'is'} ${job.state}; only queued jobs wait for placement`;
  else if (job.cancelRequested) summary = 'the job has a cancel request; it will not be placed';
  else if (job.runAfter !== null && job.runAfter > now) summary = `waiting out a retry backoff until ${new Date(job.runAfter).toISOString()}; then it is placed like any queued job`;
  else if (p.nodesFitting >= n)
    summary = `${plural(p.nodesFitting, 'node')} can run it now; it should be placed within the next scheduling pass${queue ? ` (${plural(queue.ahead, 'job')} ahead)` : ''}, on the best of them by ${RANKED_BY}`;
  else if (p.nodesFitting + f.t.failedFree >= n)
    summary = `${plural(p.nodesFitting + f.t.failedFree, 'node')} can run it now, ${f.t.failedFree} of them where it failed before (used only when no other node fits); it should be placed within the next scheduling pass`;
  else if (poolOf(f) >= n) summary = `every node that can run it is busy; it waits for capacity${queue ? ` behind ${plural(queue.ahead, 'job')}` : ''}`;
  else summary = 'no node can run this job as specified; see what to change';
  return {
    jobId: job.id,
    state: job.state,
    pending,
    summary,
    queuePosition: pending && queue ? queue.ahead : null,
    queuedTotal: pending && queue ? queue.total : null,
    runAfter: job.runAfter,
    nodesTotal: p.nodesTotal,
    nodesFitting: p.nodesFitting,
    nodesBusy: p.nodesBusy,
    filters: p.filters,
    cheapestFittingAsk: p.cheapestFittingAsk,
    price: p.price,
    suggestions: pending ? p.suggestions : [],
  };
}
