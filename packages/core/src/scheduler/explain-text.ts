/**
 * Explain's words: for each filter, why it rules a node out (the table's WHY), and for each reason a job
 * cannot be placed, a sentence "what is true — what to change" (the suggestions). Amounts are written as the
 * CLI writes them everywhere (protocol formatAmount: "0.492188 USDC per GPU-hour"), so the CLI and the
 * dashboard print these sentences as they are. Every filter that rules nodes out gets a sentence.
 */
import { type Asset, formatAmount, plural, priceUnit } from '@gpux/protocol';
import type { JobRecord } from '../records.js';
import type { ClassSeen, Tally } from './explain-tally.js';
import type { FilterName } from './filters.js';
import { type JobRequirements, jobMinTier } from './requirements.js';

/** What the sentences are about: the job, what the walk over the nodes found, and the counts. */
export interface Facts {
  req: JobRequirements;
  job: JobRecord;
  t: Tally;
  fitting: number;
  busy: number;
  total: number;
}

/** The asset the job's prices are in: its payment's, else its spec's. Stake is always USDC. */
export const assetOf = (job: JobRecord): Asset => job.payment?.asset ?? job.spec.asset ?? 'usdc';
const label = (c: ClassSeen['cls']) => `${c.vendor} ${c.model} ${c.vramGb} GB`;
const isAre = (n: number) => (n === 1 ? 'is' : 'are');
const hasHave = (n: number) => (n === 1 ? 'has' : 'have');

/** Money per priced unit: "0.492188 USDC per GPU-hour" (per job-hour for a CPU-only job). */
function perUnit(f: Facts, minor: number): string {
  return `${formatAmount(minor, assetOf(f.job))} per ${priceUnit(f.req.gpuCount)}`;
}

/** The GPUs the job asks for, in words: "8 GPUs", "8 GPUs of models H100", "2 nvidia GPUs with 80 GB". */
function gpuWant(job: JobRecord): string {
  const g = job.spec.resources.gpu;
  const parts = [g.models ? `of models ${g.models.join('/')}` : '', g.minVramGb !== undefined ? `with ${g.minVramGb} GB or more` : ''].filter((s) => s !== '');
  return [plural(g.count, g.vendor ? `${g.vendor} GPU` : 'GPU'), ...parts].join(' ');
}

export function messageOf(name: FilterName, f: Facts): string {
  const { req, job } = f;
  const g = job.spec.resources.gpu;
  switch (name) {
    case 'state':
      return 'offline, cordoned or draining';
    case 'proof':
      return 'not proven by the proof-of-hardware challenge (running, failed or timed out; `gpux node get ID` says why)';
    case 'gpuVendor':
      return `no ${g.vendor} GPU`;
    case 'gpuModel':
      return `no GPU matching models ${(g.models ?? []).join(', ')}`;
    case 'gpuVram':
      return `GPUs with less than ${g.minVramGb} GB memory`;
    case 'gpuCount':
      return req.gpuCount > 0 ? `fewer than ${plural(req.gpuCount, 'GPU')} of an accepted model on the node (of one class), or no GPU` : 'no GPUs';
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
        ? `lowest price (class floor, the node's ask, or the index for a node without an ask) above the job's cap of ${perUnit(f, req.maxPrice ?? 0)}`
        : `ask above the job's cap of ${perUnit(f, req.maxPrice ?? 0)}`;
    case 'stake':
      return `no provider, or free stake below what the job locks there (20× its longest charge at that node's price; at most ${formatAmount(req.stakeNeeded, 'usdc')})`;
    case 'operator':
      return 'run by an operator whose work this check run verifies (audits and referees go to another operator)';
    case 'failedBefore':
      return 'this job already failed there (used only when no other node fits)';
    case 'busy':
      return req.gpuCount > 0 ? `fits, but fewer than ${plural(req.gpuCount, 'accepted GPU')} (or too little CPU/memory) free now` : 'fits, but too little CPU or memory free now';
  }
}

/**
 * The price line: what the job pays at most, and what the nodes ask, from the same walk as the price
 * suggestion, so the two never disagree.
 */
export function priceLine(f: Facts): string {
  const { req, t } = f;
  if (!req.paid) {
    const cap = req.maxPrice === undefined ? '' : `; its cap of ${perUnit(f, req.maxPrice)} is compared only with nodes' asks`;
    return `nothing is held or charged for this job (no market)${cap}`;
  }
  const cap = `pays at most ${perUnit(f, req.maxPrice ?? 0)}`;
  if (t.minPriceWithinCap !== null) return `${cap}; the cheapest node within it would charge ${perUnit(f, t.minPriceWithinCap)}`;
  const lowest = [...t.rejectedPrices].sort((a, b) => a - b)[0];
  if (lowest !== undefined) return `${cap}; no node that fits clears within it (the cheapest asks ${perUnit(f, lowest)})`;
  return `${cap}; no node fits the job's resources and constraints, so none is priced`;
}

/** Nodes that could take the job once others finish: fit now, busy, or where it failed before (a fallback). */
export const poolOf = (f: Facts) => f.fitting + f.busy + (f.t.rejected.get('failedBefore') ?? 0);

/** The suggestions, "what is true — what to change", in funnel order; none when enough nodes fit now. */
export function suggest(f: Facts): string[] {
  const { req, t } = f;
  const n = req.nodes;
  if (f.total === 0) return ['no nodes are registered with this coordinator yet — it is placed once a provider starts one (gpux node start)'];
  if (f.fitting >= n) return [];
  const r = (name: FilterName) => t.rejected.get(name) ?? 0;
  const pool = poolOf(f);
  const blocked = pool < n;
  const s: string[] = [];
  if (blocked) {
    if (req.gpuCount > 0 && r('gpuVendor') + r('gpuModel') + r('gpuVram') + r('gpuCount') > 0) s.push(...gpuLines(f));
    if (r('region') > 0) s.push(regionLine(f));
    if (r('labels') > 0) s.push(`${plural(r('labels'), 'node')} ${r('labels') === 1 ? 'lacks' : 'lack'} the labels ${req.labels.map(([k, v]) => `${k}=${v}`).join(', ')} — drop or change constraints.nodeLabels`);
    if (r('trust') > 0) {
      const tier = jobMinTier(f.job.spec);
      const how = tier === 'attested' ? ' (no node is attested without a configured attestation verifier)' : '';
      s.push(`${plural(r('trust'), 'node')} ${isAre(r('trust'))} below trust tier ${tier}${how} — lower constraints.minTrustTier, or ask an operator to vouch for nodes (gpux node tier set ID curated)`);
    }
    if (r('cpu') > 0) s.push(`${plural(r('cpu'), 'node')} ${hasHave(r('cpu'))} fewer than ${req.cpu} CPU cores; the largest that matches has ${t.mostCpu} — lower resources.cpuCores to ${t.mostCpu}`);
    if (r('memory') > 0) {
      const gb = Math.floor(t.mostMemoryMb / 1024);
      s.push(`${plural(r('memory'), 'node')} ${hasHave(r('memory'))} less than ${f.job.spec.resources.memoryGb} GB memory; the largest that matches has ${gb} GB — lower resources.memoryGb to ${gb}`);
    }
    if (t.rejectedPrices.length > 0) s.push(priceSuggestion(f, n - pool));
    if (t.stakeShort.length > 0) s.push(stakeLine(f, n - pool));
    if (t.noProvider > 0)
      s.push(`${plural(t.noProvider, 'node')} ${hasHave(t.noProvider)} no provider account to be paid, so ${t.noProvider === 1 ? 'it takes' : 'they take'} no paid jobs — nothing in the job changes that`);
    if (r('state') > 0) s.push(stateLine(f));
    if (r('proof') > 0)
      s.push(
        `${plural(r('proof'), 'node')} ${r('proof') === 1 ? 'waits' : 'wait'} to pass the proof-of-hardware challenge (GPUX_CHALLENGE=required) — nothing in the job changes that: a failed or timed-out node is challenged again and takes jobs once it passes`,
      );
    if (r('operator') > 0)
      s.push(`${plural(r('operator'), 'node')} ${isAre(r('operator'))} run by the operator whose work this check run verifies — it waits for a node of another operator; nothing in the job changes that`);
  }
  if (f.busy > 0) {
    const free = req.gpuCount > 0 && t.mostFree > 0 ? `; the most accepted GPUs free on one node now is ${t.mostFree} (${plural(t.mostFreeNodes, 'node')})` : '';
    const lower = req.gpuCount > 1 && t.mostFree > 0 && n === 1 ? `, or lower resources.gpu.count to ${t.mostFree} to start now` : '';
    s.push(`${plural(f.busy, 'node')} could run it but ${isAre(f.busy)} busy${free} — it runs when capacity frees up${lower}`);
  }
  if (n > 1 && blocked && pool > 0)
    s.push(`a gang of ${n} runs on ${n} nodes at once; only ${pool} can run it — lower nodes to ${pool}${s.length > 0 ? ', or make one of the changes above' : ''}`);
  if (r('failedBefore') > 0 && f.fitting === 0)
    s.push(`the job failed before on ${plural(r('failedBefore'), 'node')} that ${r('failedBefore') === 1 ? 'fits' : 'fit'} — nothing to change: it goes back there only when no other node fits`);
  return s;
}

function stateLine(f: Facts): string {
  const { t } = f;
  const k = f.t.rejected.get('state') ?? 0;
  const parts = [t.offline ? `${t.offline} offline` : '', t.cordoned ? `${t.cordoned} cordoned` : '', t.draining ? `${t.draining} draining` : ''].filter((x) => x !== '');
  return `${plural(k, 'node')} ${isAre(k)} offline, cordoned or draining (${parts.join(', ') || `${k} not schedulable`}) — nothing in the job changes that: ${k === 1 ? 'it takes' : 'they take'} jobs again once back online or uncordoned (gpux node uncordon ID, operators)`;
}

/** GPU class and count: what the fleet has instead, and the spec fields to change to use it. */
function gpuLines(f: Facts): string[] {
  const { req, t, job } = f;
  const g = job.spec.resources.gpu;
  const r = (name: FilterName) => t.rejected.get(name) ?? 0;
  if (t.live === 0) return [];
  if (t.mostGpus >= req.gpuCount) return [];
  if (t.mostGpus > 0) {
    let line = `no online node has ${gpuWant(job)}; the most on one node is ${t.mostGpus} (${plural(t.mostGpusNodes, 'node')}) — lower resources.gpu.count to ${t.mostGpus}`;
    const split = Math.ceil(req.gpuCount / t.mostGpus);
    if (req.nodes === 1 && t.mostGpusNodes >= split) line += `, or split it into a gang (nodes: ${split} with resources.gpu.count: ${t.mostGpus} each)`;
    const filtered = g.vendor !== undefined || g.models !== undefined || g.minVramGb !== undefined;
    if (filtered && t.enoughAnyClass > 0) line += `, or drop the GPU class filters (${plural(t.enoughAnyClass, 'node')} ${hasHave(t.enoughAnyClass)} ${req.gpuCount} GPUs of another class)`;
    return [line];
  }
  if (t.classes.size === 0)
    return [`no online node has a GPU (${plural(t.gpuless, 'node')}, all CPU-only) — set resources.gpu.count to 0 to run on CPU, or wait for a GPU node to join`];
  const fleet = [...t.classes.values()].sort((a, b) => b.nodes - a.nodes || b.most - a.most).slice(0, 5);
  const have = fleet.map((c) => `${label(c.cls)} (${plural(c.nodes, 'node')}, at most ${c.most} on one)`).join(', ');
  if (r('gpuVram') > 0 && r('gpuVendor') + r('gpuModel') === 0 && t.mostVramGb > 0)
    return [`no online node has ${gpuWant(job)}; the most memory on a matching GPU is ${t.mostVramGb} GB — lower resources.gpu.minVramGb to ${t.mostVramGb}`];
  const largest = Math.max(...[...t.classes.values()].map((c) => c.most));
  const fields = [g.vendor !== undefined ? 'vendor' : '', g.models !== undefined ? 'models' : '', g.minVramGb !== undefined ? 'minVramGb' : ''].filter((x) => x !== '');
  const change = `change resources.gpu.${fields.join('/') || 'models'} to match one of those, or drop ${fields.length > 1 ? 'them' : 'it'}`;
  const count = largest < req.gpuCount ? `, and lower resources.gpu.count to ${largest}` : '';
  return [`no online node has ${gpuWant(job)}; the fleet has ${have} — ${change}${count}`];
}

function regionLine(f: Facts): string {
  const { req, t } = f;
  const k = t.rejected.get('region') ?? 0;
  const where = [...t.regions.entries()].filter(([r]) => r !== req.region).map(([r, v]) => `${r} (${v})`);
  return `${plural(k, 'node')} that match ${isAre(k)} outside region ${req.region}${where.length ? `; they are in ${where.join(', ')}` : ''} — change or drop constraints.region`;
}

/** The cap that admits enough nodes: the need-th lowest price among those price ruled out. */
function priceSuggestion(f: Facts, need: number): string {
  const { req, t } = f;
  const prices = [...t.rejectedPrices].sort((a, b) => a - b);
  const k = prices.length;
  const cheapest = prices[0] ?? 0;
  const enough = prices[Math.min(Math.max(need, 1), k) - 1] ?? cheapest;
  const cpu = req.gpuCount === 0 ? ' (the field is per job-hour for a CPU-only job)' : '';
  const short = k < need ? `; that makes ${plural(k, 'node')} of the ${req.nodes} the gang needs` : '';
  const what = req.paid ? 'lowest price' : 'ask';
  return `${plural(k, 'node')} ${k === 1 ? 'fits' : 'fit'} the job's resources and constraints but ${k === 1 ? `its ${what} is` : `their ${what}s are`} above its cap of ${perUnit(f, req.maxPrice ?? 0)} (the cheapest: ${perUnit(f, cheapest)}) — raise maxPricePerGpuHour to ${formatAmount(enough, assetOf(f.job))}${cpu} and submit it again (a submitted job keeps its cap)${short}`;
}

/** Nodes whose provider's free stake is short of the job's lock there, and the timeout whose lock it would cover. */
function stakeLine(f: Facts, need: number): string {
  const { req, t } = f;
  const short = t.stakeShort;
  const mostFree = Math.max(...short.map((x) => x.free));
  const leastLock = Math.min(...short.map((x) => x.lock));
  const fits = short.map((x) => x.timeoutFits).sort((a, b) => b - a);
  const timeout = fits[Math.min(Math.max(need, 1), fits.length) - 1] ?? 0;
  const lower = timeout > 0 && timeout < req.timeoutSeconds ? `lower timeoutSeconds to ${timeout} (the lock grows with it), or ` : '';
  const k = short.length;
  const lock = `at least ${formatAmount(leastLock, 'usdc')} (20× its longest charge at that node's price)`;
  const whose = k === 1 ? "its provider's" : "their providers'";
  const stake = mostFree === 0 ? `${whose} free stake is 0 while the job would lock ${lock}` : `${whose} free stake (at most ${formatAmount(mostFree, 'usdc')}) is below what the job would lock there, ${lock}`;
  return `${plural(k, 'node')} ${k === 1 ? 'fits' : 'fit'} but ${stake} — ${lower}wait for a provider to stake more (gpux node stake add)`;
}
