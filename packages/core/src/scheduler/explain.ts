/**
 * Explain: why a pending job waits. Runs the placement filters (filters.ts) over every node in funnel order
 * and counts, per filter, the nodes it rejected; then says what to change. This is the one place that looks
 * at every node: it runs on demand for one buyer's question, never in the scheduling pass (50,000 nodes take
 * a few milliseconds).
 */
import type { ExplainFilter, ExplainJobResponse } from '@gpux/protocol';
import type { JobRecord } from '../records.js';
import type { CapacityIndex, NodeCapacity } from './capacity-index.js';
import { lowestPrice } from '../market/clearing.js';
import { acceptableSlots, askFor, FILTER_ORDER, type FilterName, quoteFor, rejectNode } from './filters.js';
import { type JobRequirements, jobMinTier, requirementsOf } from './requirements.js';

export interface PlacementExplanation {
  nodesTotal: number;
  nodesFitting: number;
  nodesBusy: number;
  filters: ExplainFilter[];
  cheapestFittingAsk: number | null;
  suggestions: string[];
}

interface Tally {
  rejected: Map<FilterName, number>;
  classes: Map<string, number>;
  /** Among nodes with an accepted class: most accepted GPUs on one node, and how many nodes have that many. */
  mostGpus: number;
  mostGpusNodes: number;
  /** Among busy nodes: most accepted GPUs free now. */
  mostFree: number;
  mostFreeNodes: number;
  regions: Map<string, number>;
  offline: number;
  minAsk: number | null;
  minRejectedAsk: number | null;
  /** The most free stake among nodes the stake filter rejected. */
  maxFreeStake: number;
  mostCpu: number;
  mostMemoryMb: number;
}

function tally(req: JobRequirements, index: CapacityIndex): Tally {
  const t: Tally = {
    rejected: new Map(),
    classes: new Map(),
    mostGpus: 0,
    mostGpusNodes: 0,
    mostFree: 0,
    mostFreeNodes: 0,
    regions: new Map(),
    offline: 0,
    minAsk: null,
    minRejectedAsk: null,
    maxFreeStake: 0,
    mostCpu: 0,
    mostMemoryMb: 0,
  };
  for (const n of index.allNodes()) {
    const why = rejectNode(req, n);
    t.rejected.set(why ?? ('fit' as FilterName), (t.rejected.get(why ?? ('fit' as FilterName)) ?? 0) + 1);
    if (why === 'state' || why === 'proof') {
      if (n.status === 'offline') t.offline++;
      continue;
    }
    for (const s of n.slots) t.classes.set(label(s.pool.cls), (t.classes.get(label(s.pool.cls)) ?? 0) + 1);
    if (req.gpuCount > 0) noteGpus(req, n, t, why);
    if (why === 'region' || why === null || order(why) > order('region')) t.regions.set(n.region ?? '(none)', (t.regions.get(n.region ?? '(none)') ?? 0) + 1);
    if (why === 'cpu' || why === 'memory' || (why !== null && order(why) > order('memory')) || why === null) {
      t.mostCpu = Math.max(t.mostCpu, n.cpuCores);
      t.mostMemoryMb = Math.max(t.mostMemoryMb, n.memoryMb);
    }
    const ask = lowestAsk(req, n);
    if (why === 'price' && ask !== undefined) t.minRejectedAsk = Math.min(t.minRejectedAsk ?? Number.POSITIVE_INFINITY, ask);
    if (why === null && ask !== undefined) t.minAsk = Math.min(t.minAsk ?? Number.POSITIVE_INFINITY, ask);
    if (why === 'stake') t.maxFreeStake = Math.max(t.maxFreeStake, n.providerId === null ? 0 : n.stake - n.stakeLocked);
  }
  return t;
}

/** What the node asks of this job: in a market its lowest clearing price (floor, gross ask, or the index without an ask). */
function lowestAsk(req: JobRequirements, n: NodeCapacity): number | undefined {
  const ask = askFor(req, n);
  const q = quoteFor(req, n);
  return req.paid && q ? lowestPrice({ index: q.index, floor: q.floor, grossAsk: ask }) : ask;
}

function noteGpus(req: JobRequirements, n: NodeCapacity, t: Tally, why: FilterName | null): void {
  const acc = acceptableSlots(req, n);
  if (typeof acc === 'string') return;
  const total = Math.max(...acc.map((s) => s.indices.length));
  if (total > t.mostGpus) [t.mostGpus, t.mostGpusNodes] = [total, 1];
  else if (total === t.mostGpus) t.mostGpusNodes++;
  if (why === 'busy') {
    const free = Math.max(...acc.map((s) => s.free));
    if (free > t.mostFree) [t.mostFree, t.mostFreeNodes] = [free, 1];
    else if (free === t.mostFree) t.mostFreeNodes++;
  }
}

/** What the scores (scores.ts) rank fitting nodes by, named for buyers: reliability is the node's reputation. */
const RANKED_BY =
  'reputation (audits and canaries passed or failed, completed jobs, lost leases) and uptime, price, speed (measured runtimes and the proof-of-hardware score), latency and packing';

const order = (f: FilterName) => FILTER_ORDER.indexOf(f);
const label = (c: { vendor: string; model: string; vramGb: number }) => `${c.vendor} ${c.model} ${c.vramGb} GB`;
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function messageOf(f: FilterName, req: JobRequirements, job: JobRecord): string {
  const g = job.spec.resources.gpu;
  switch (f) {
    case 'state':
      return 'offline, cordoned or draining';
    case 'proof':
      return 'not proven by the proof-of-hardware challenge (running, failed or timed out; `gpux node get ID` says why)';
    case 'gpuVendor':
      return `no ${g.vendor} GPU`;
    case 'gpuModel':
      return `no GPU matching models ${JSON.stringify(g.models)}`;
    case 'gpuVram':
      return `GPUs with less than ${g.minVramGb} GB memory`;
    case 'gpuCount':
      return req.gpuCount > 0 ? `fewer than ${plural(req.gpuCount, 'GPU')} of an accepted model in all` : 'no GPUs';
    case 'region':
      return `not in region ${req.region}`;
    case 'labels':
      return `missing labels ${req.labels.map(([k, v]) => `${k}=${v}`).join(', ')}`;
    case 'trust':
      return `below trust tier ${jobMinTier(job.spec)} (open < attested < curated; an operator makes a node curated with gpux node tier set)`;
    case 'cpu':
      return `fewer than ${req.cpu} CPU cores in all`;
    case 'memory':
      return `less than ${job.spec.resources.memoryGb} GB memory in all`;
    case 'price':
      return req.paid
        ? `lowest price (class floor, the node's ask, or the index for a node without an ask) above the job's cap of ${req.maxPrice} per ${req.gpuCount > 0 ? 'GPU-hour' : 'job-hour'}`
        : `ask above the job's cap of ${req.maxPrice} per ${req.gpuCount > 0 ? 'GPU-hour' : 'job-hour'}`;
    case 'stake':
      return `no provider, or free stake below what the job locks there (20× its longest charge at that node's price; at most ${req.stakeNeeded})`;
    case 'operator':
      return 'run by an operator whose work this check run verifies (audits and referees go to another operator)';
    case 'failedBefore':
      return 'this job already failed there (used only when no other node fits)';
    case 'busy':
      return req.gpuCount > 0 ? `fits, but fewer than ${req.gpuCount} accepted GPUs (or too little CPU/memory) free now` : 'fits, but too little CPU or memory free now';
  }
}

function suggest(req: JobRequirements, job: JobRecord, t: Tally, fitting: number, busy: number, total: number): string[] {
  const s: string[] = [];
  const n = req.nodes;
  const r = (f: FilterName) => t.rejected.get(f) ?? 0;
  if (total === 0) return ['no nodes are registered with this coordinator yet'];
  if (fitting >= n) return s;
  const g = job.spec.resources.gpu;
  if (req.gpuCount > 0 && t.mostGpus === 0 && r('gpuVendor') + r('gpuModel') + r('gpuVram') > 0) {
    const fleet = [...t.classes.entries()].sort((a, b) => b[1] - a[1]).slice(0, 5);
    const have = fleet.length ? `; the fleet has ${fleet.map(([c, k]) => `${c} (${plural(k, 'node')})`).join(', ')}` : '';
    s.push(`no online node has a GPU matching vendor/models/minVramGb${have} — change resources.gpu.models, vendor or minVramGb`);
  } else if (req.gpuCount > 0 && t.mostGpus > 0 && t.mostGpus < req.gpuCount) {
    s.push(
      `no node has ≥${req.gpuCount} GPUs${g.models ? ` of models ${g.models.join('/')}` : ''}; ${plural(t.mostGpusNodes, 'node')} ${t.mostGpusNodes === 1 ? 'has' : 'have'} ${t.mostGpus} — lower resources.gpu.count to ${t.mostGpus}${g.models ? ', remove the models filter' : ''} or split the job across nodes (nodes: ${Math.ceil(req.gpuCount / t.mostGpus)})`,
    );
  }
  if (r('region') > 0 && fitting + busy === 0) {
    const where = [...t.regions.entries()].filter(([k]) => k !== req.region).map(([k, v]) => `${k} (${v})`);
    s.push(`no matching node in region ${req.region}${where.length ? `; matching nodes are in ${where.join(', ')}` : ''} — change or drop constraints.region`);
  }
  if (r('labels') > 0 && fitting + busy === 0) s.push(`${plural(r('labels'), 'node')} lack the labels in constraints.nodeLabels — drop or change them`);
  if (r('trust') > 0 && fitting + busy === 0) {
    const tier = jobMinTier(job.spec);
    const how = tier === 'attested' ? ' (no node is attested without a configured attestation verifier)' : '';
    s.push(`${plural(r('trust'), 'node')} are below trust tier ${tier}${how} — lower constraints.minTrustTier, or ask an operator to vouch for nodes (gpux node tier set ID curated)`);
  }
  if (r('cpu') > 0 && fitting + busy === 0) s.push(`the largest matching node has ${t.mostCpu} CPU cores — lower resources.cpuCores`);
  if (r('memory') > 0 && fitting + busy === 0) s.push(`the largest matching node has ${Math.floor(t.mostMemoryMb / 1024)} GB memory — lower resources.memoryGb`);
  if (r('price') > 0 && t.minRejectedAsk !== null)
    s.push(`the cheapest otherwise fitting ${req.paid ? 'lowest price' : 'ask'} is ${t.minRejectedAsk} per ${req.gpuCount > 0 ? 'GPU-hour' : 'job-hour'} — raise maxPricePerGpuHour`);
  if (r('stake') > 0 && fitting + busy < n)
    s.push(
      `${plural(r('stake'), 'node')} fit but lack the free stake the job locks (${req.stakeNeeded}; the most free is ${t.maxFreeStake}) — a shorter timeoutSeconds or a lower maxPricePerGpuHour locks less`,
    );
  if (r('state') > 0 && fitting + busy < n) s.push(`${plural(r('state'), 'node')} ${r('state') === 1 ? 'is' : 'are'} offline, cordoned or draining (${t.offline} offline)`);
  if (r('proof') > 0 && fitting + busy < n)
    s.push(`${plural(r('proof'), 'node')} ${r('proof') === 1 ? 'waits' : 'wait'} to pass the proof-of-hardware challenge (GPUX_CHALLENGE=required); a failed or timed-out node is challenged again and takes jobs once it passes`);
  if (busy > 0 && fitting < n) {
    const free = req.gpuCount > 0 && t.mostFree > 0 ? `; the most accepted GPUs free on one node now is ${t.mostFree} (${plural(t.mostFreeNodes, 'node')})` : '';
    s.push(`${plural(busy, 'node')} could run it but ${busy === 1 ? 'is' : 'are'} busy${free} — it runs when capacity frees up${req.gpuCount > 1 && t.mostFree > 0 ? `, or lower resources.gpu.count to ${t.mostFree}` : ''}`);
  }
  if (n > 1 && fitting + busy + r('failedBefore') < n) s.push(`a gang of ${n} needs ${n} fitting nodes; ${fitting + busy} exist — lower nodes`);
  if (r('failedBefore') > 0 && fitting === 0) s.push(`the job failed before on ${plural(r('failedBefore'), 'node')} that fit; it goes back there only when nothing else fits`);
  return s;
}

export function explainPlacement(job: JobRecord, index: CapacityIndex): PlacementExplanation {
  const req = requirementsOf(job);
  const t = tally(req, index);
  const fitting = t.rejected.get('fit' as FilterName) ?? 0;
  const busy = t.rejected.get('busy') ?? 0;
  const filters = FILTER_ORDER.filter((f) => (t.rejected.get(f) ?? 0) > 0).map((f) => ({ name: f, rejected: t.rejected.get(f) ?? 0, message: messageOf(f, req, job) }));
  return { nodesTotal: index.size, nodesFitting: fitting, nodesBusy: busy, filters, cheapestFittingAsk: t.minAsk, suggestions: suggest(req, job, t, fitting, busy, index.size) };
}

/** The whole answer of GET /v1/jobs/:id/explain. `queue`: from the store's standing (fairQueuePosition). */
export function explainJob(job: JobRecord, index: CapacityIndex, now: number, queue: { ahead: number; total: number } | null): ExplainJobResponse {
  const pending = job.state === 'queued';
  const p = explainPlacement(job, index);
  const n = requirementsOf(job).nodes;
  let summary: string;
  if (!pending) summary = `the job ${job.state === 'succeeded' || job.state === 'failed' ? 'has' : 'is'} ${job.state}; only queued jobs wait for placement`;
  else if (job.cancelRequested) summary = 'the job has a cancel request; it will not be placed';
  else if (job.runAfter !== null && job.runAfter > now) summary = `waiting out a retry backoff until ${new Date(job.runAfter).toISOString()}; then it is placed like any queued job`;
  else if (p.nodesFitting >= n)
    summary = `${plural(p.nodesFitting, 'node')} can run it now; it should be placed within the next scheduling pass${queue ? ` (${plural(queue.ahead, 'job')} ahead)` : ''}, on the best of them by ${RANKED_BY}`;
  else if (p.nodesFitting + p.nodesBusy + (p.filters.find((f) => f.name === 'failedBefore')?.rejected ?? 0) >= n)
    summary = `every node that can run it is busy; it waits for capacity${queue ? ` behind ${plural(queue.ahead, 'job')}` : ''}`;
  else summary = 'no node can run this job as specified; see suggestions';
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
    suggestions: pending ? p.suggestions : [],
  };
}
