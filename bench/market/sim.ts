/**
 * One class's market in simulated epochs, pure and seeded. Each epoch: nodes that leave go (their jobs
 * requeue), finished jobs free their GPUs, buyers arrive, then one pass over the queue: a job wants GPUs only
 * while the index is at most its valuation, starts on the best-fitting online node (a node takes new work
 * only while the index is at least its gross ask) at the clearing rule's price, and leaves unserved after
 * `patience` epochs in the queue. Then demand (busy GPUs + GPUs wanted by queued jobs) over supply (GPUs on
 * online nodes + busy GPUs on nodes the price has turned away, which drain) gives utilization, and the
 * pricing rule sets the next epoch's price. The first `warmup` epochs hold the start price (they fill the
 * cluster) and are not recorded.
 */
import { clearingPrice, nextPrice, type PricePolicy, seededRandom, utilizationBps } from '@gpux/core';
import { poisson } from './draws.js';
import type { Market } from './markets.js';

export interface PriceRule {
  name: string;
  next(price: number, utilBps: number, floor: number): number;
}

/** Core's index: nextPrice under a policy (DEFAULT_PRICE_POLICY: target 80%, step ≤ 12.5%). */
export const indexRule = (name: string, policy: PricePolicy): PriceRule => ({ name, next: (p, u, floor) => nextPrice(p, u, floor, policy) });
export const fixedRule = (name: string): PriceRule => ({ name, next: (p) => p });

export interface RunOptions {
  epochs: number;
  warmup: number;
  /** The price through the warm-up and at epoch 0. */
  start: number;
  rule: PriceRule;
  /** For utilizationBps (the target and its 2× cap). */
  policy: PricePolicy;
  feeBps: number;
  patience: number;
  /** At epoch `at`: these nodes (indices into market.nodes) leave for good, and/or arrivals × demandFactor. */
  shock?: { at: number; leaving?: readonly number[]; demandFactor?: number };
  /** Seeds the arrivals only, so every rule sees the same buyers. */
  seed: number;
}

/** Per recorded epoch (0 … epochs − 1). */
export interface Trace {
  price: number[];
  utilBps: number[];
  demand: number[];
  supply: number[];
  busy: number[];
  arrivals: number[];
  started: number[];
  waitSum: number[];
  /** Left after `patience` epochs while willing to pay the index: no GPUs for them. */
  starved: number[];
  /** Left after `patience` epochs with the index above their valuation. */
  pricedOut: number[];
  /** Queued jobs willing to pay the index at the end of the epoch. */
  waiting: number[];
  /** Running jobs requeued because their node left. */
  interrupted: number[];
  /** Starts that cleared at anything but the index (clearingPrice with the node's ask and the job's cap): 0 in this model. */
  offIndexStarts: number;
}

interface Node {
  id: number;
  gpus: number;
  ask: number;
  grossAsk: number;
  free: number;
  present: boolean;
  online: boolean;
  running: Set<Job>;
}

interface Job {
  v: number;
  g: number;
  d: number;
  queuedAt: number;
  endAt: number;
  node: Node | null;
}

export function runMarket(m: Market, o: RunOptions): Trace {
  const floor = m.pricing.floor;
  const nodes: Node[] = m.nodes.map((n, id) => ({ ...n, id, free: n.gpus, present: true, online: false, running: new Set() }));
  const maxGpus = Math.max(...nodes.map((n) => n.gpus));
  // buckets[f]: online, present nodes with exactly f free GPUs (f ≥ 1), in a deterministic order.
  const buckets: Array<Set<number>> = Array.from({ length: maxGpus + 1 }, () => new Set());
  const listed = (n: Node) => n.online && n.present && n.free > 0;
  const setFree = (i: number, free: number) => {
    const n = nodes[i] as Node;
    if (listed(n)) buckets[n.free]?.delete(i);
    n.free = free;
    if (listed(n)) buckets[n.free]?.add(i);
  };
  let cut = 0; // nodes[0, cut) have grossAsk ≤ price
  const setPrice = (p: number) => {
    while (cut < nodes.length && (nodes[cut] as Node).grossAsk <= p) {
      const n = nodes[cut] as Node;
      n.online = true;
      if (listed(n)) buckets[n.free]?.add(cut);
      cut++;
    }
    while (cut > 0 && (nodes[cut - 1] as Node).grossAsk > p) {
      cut--;
      const n = nodes[cut] as Node;
      if (listed(n)) buckets[n.free]?.delete(cut);
      n.online = false;
    }
  };
  /** Best fit: the online node with the fewest free GPUs that still holds g. */
  const findNode = (g: number): number | undefined => {
    for (let f = g; f <= maxGpus; f++) {
      const b = buckets[f] as Set<number>;
      if (b.size > 0) return b.values().next().value as number;
    }
    return undefined;
  };

  const arrivalsRnd = seededRandom(o.seed);
  const ends = new Map<number, Job[]>();
  let queue: Job[] = [];
  let price = o.start;
  setPrice(price);
  const tr: Trace = {
    price: [],
    utilBps: [],
    demand: [],
    supply: [],
    busy: [],
    arrivals: [],
    started: [],
    waitSum: [],
    starved: [],
    pricedOut: [],
    waiting: [],
    interrupted: [],
    offIndexStarts: 0,
  };

  for (let t = -o.warmup; t < o.epochs; t++) {
    const shocked = o.shock !== undefined && t >= o.shock.at;
    let interrupted = 0;
    if (o.shock && t === o.shock.at) {
      for (const i of o.shock.leaving ?? []) {
        const n = nodes[i] as Node;
        if (listed(n)) buckets[n.free]?.delete(i);
        n.present = false;
        for (const job of n.running) {
          job.node = null;
          job.queuedAt = t;
          queue.push(job);
          interrupted++;
        }
        n.running.clear();
      }
    }
    for (const job of ends.get(t) ?? []) {
      const n = job.node;
      if (n === null || job.endAt !== t) continue; // interrupted (and perhaps restarted since)
      n.running.delete(job);
      job.node = null;
      if (n.present) setFree(n.id, n.free + job.g);
    }
    ends.delete(t);

    const rate = m.rate * (shocked ? (o.shock?.demandFactor ?? 1) : 1);
    const arrivals = poisson(arrivalsRnd, rate);
    for (let k = 0; k < arrivals; k++) {
      const { v, g, d } = m.draw(arrivalsRnd);
      queue.push({ v, g, d, queuedAt: t, endAt: -1, node: null });
    }

    let started = 0;
    let waitSum = 0;
    let starved = 0;
    let pricedOut = 0;
    let wantedGpus = 0;
    let waiting = 0;
    const kept: Job[] = [];
    for (const job of queue) {
      const willing = job.v >= price;
      const i = willing ? findNode(job.g) : undefined;
      if (i !== undefined) {
        const n = nodes[i] as Node;
        const paid = clearingPrice({ index: price, floor, ask: n.ask, cap: job.v, feeBps: o.feeBps });
        if (paid !== price) tr.offIndexStarts++;
        setFree(i, n.free - job.g);
        n.running.add(job);
        job.node = n;
        job.endAt = t + job.d;
        const list = ends.get(job.endAt);
        if (list) list.push(job);
        else ends.set(job.endAt, [job]);
        started++;
        waitSum += t - job.queuedAt;
      } else if (t - job.queuedAt >= o.patience) {
        if (willing) starved++;
        else pricedOut++;
      } else {
        kept.push(job);
        if (willing) {
          wantedGpus += job.g;
          waiting++;
        }
      }
    }
    queue = kept;

    let busy = 0;
    let supply = 0;
    for (const n of nodes) {
      if (!n.present) continue;
      busy += n.gpus - n.free;
      supply += n.online ? n.gpus : n.gpus - n.free;
    }
    const demand = busy + wantedGpus;
    const u = utilizationBps(demand, supply, o.policy);
    if (t >= 0) {
      tr.price.push(price);
      tr.utilBps.push(u);
      tr.demand.push(demand);
      tr.supply.push(supply);
      tr.busy.push(busy);
      tr.arrivals.push(arrivals);
      tr.started.push(started);
      tr.waitSum.push(waitSum);
      tr.starved.push(starved);
      tr.pricedOut.push(pricedOut);
      tr.waiting.push(waiting);
      tr.interrupted.push(interrupted);
      price = o.rule.next(price, u, floor);
      setPrice(price);
    }
  }
  return tr;
}
