/**
 * The classes the market benchmark trades: a fleet per class (nodes, GPUs, provider asks) and its buyers
 * (GPUs per job, epochs per job, valuations), drawn around the class's clearing level. A spec names where the
 * class clears before any shock as a multiple of the catalogue's starting price; the arrival rate follows.
 */
import { type ClassPricing, classPricing, grossAsk, type Random, seededRandom } from '@gpux/core';
import { demandCurve, type DemandCurve, gpuEpochsAt, supplyAt } from './equilibrium.js';
import { geometric, logNormal, picker } from './draws.js';

export interface MarketSpec {
  cls: string;
  nodes: number;
  /** [GPUs per node, weight]. */
  nodeGpus: ReadonlyArray<readonly [number, number]>;
  /** [GPUs per job, weight]. */
  jobGpus: ReadonlyArray<readonly [number, number]>;
  /** Mean job length, epochs (geometric). */
  meanEpochs: number;
  /** The clearing level before any shock, × the catalogue's starting price; it sets the arrival rate. */
  clearsAt: number;
  /** Buyer valuations (the most a job pays per GPU-hour): log-normal, median × the clearing level. */
  valuation: { median: number; sigma: number };
  /** Provider asks (what a node wants to earn per GPU-hour): log-normal, median × the clearing level. */
  ask: { median: number; sigma: number };
}

export const MARKETS: readonly MarketSpec[] = [
  {
    cls: 'nvidia-h100-80gb',
    nodes: 400,
    nodeGpus: [[8, 1]],
    jobGpus: [
      [1, 0.4],
      [2, 0.2],
      [4, 0.2],
      [8, 0.2],
    ],
    meanEpochs: 6,
    clearsAt: 1.25,
    valuation: { median: 1, sigma: 0.5 },
    ask: { median: 0.55, sigma: 0.3 },
  },
  {
    cls: 'nvidia-rtx4090-24gb',
    nodes: 1000,
    nodeGpus: [
      [1, 0.5],
      [2, 0.3],
      [4, 0.2],
    ],
    jobGpus: [
      [1, 0.75],
      [2, 0.2],
      [4, 0.05],
    ],
    meanEpochs: 4,
    clearsAt: 0.7,
    valuation: { median: 1, sigma: 0.6 },
    ask: { median: 0.5, sigma: 0.35 },
  },
  {
    cls: 'amd-mi300x-192gb',
    nodes: 250,
    nodeGpus: [[8, 1]],
    jobGpus: [
      [1, 0.3],
      [2, 0.2],
      [4, 0.2],
      [8, 0.3],
    ],
    meanEpochs: 10,
    clearsAt: 0.85,
    valuation: { median: 1, sigma: 0.4 },
    ask: { median: 0.6, sigma: 0.25 },
  },
];

export interface FleetNode {
  gpus: number;
  ask: number;
  grossAsk: number;
}

export interface JobDraw {
  v: number;
  g: number;
  d: number;
}

export interface Market {
  spec: MarketSpec;
  pricing: ClassPricing;
  /** The clearing level the spec aims at (catalogue start × clearsAt); the bisected p* lands next to it. */
  level: number;
  /** Ascending by gross ask (ties by draw order), so the nodes online at a price are a prefix. */
  nodes: FleetNode[];
  gpus: number;
  /** Mean arrivals per epoch. */
  rate: number;
  curve: DemandCurve;
  draw(r: Random): JobDraw;
}

export function buildMarket(spec: MarketSpec, feeBps: number, targetBps: number, seed: number, sample = 200_000): Market {
  const pricing = classPricing(spec.cls);
  const level = Math.round(pricing.initial * spec.clearsAt);
  const fleetRnd = seededRandom(seed);
  const nodeGpus = picker(spec.nodeGpus);
  const jobGpus = picker(spec.jobGpus);
  const nodes: FleetNode[] = Array.from({ length: spec.nodes }, () => {
    const gpus = nodeGpus(fleetRnd);
    const ask = Math.max(1, Math.round(logNormal(fleetRnd, spec.ask.median * level, spec.ask.sigma)));
    return { gpus, ask, grossAsk: grossAsk(ask, feeBps) };
  });
  nodes.sort((a, b) => a.grossAsk - b.grossAsk);
  // The draw order (v, g, d) is fixed: every pricing rule sees the same arrivals.
  const draw = (r: Random): JobDraw => ({
    v: Math.max(1, Math.round(logNormal(r, spec.valuation.median * level, spec.valuation.sigma))),
    g: jobGpus(r),
    d: geometric(r, spec.meanEpochs),
  });
  const curveRnd = seededRandom(seed + 1);
  const curve = demandCurve(Array.from({ length: sample }, () => draw(curveRnd)));
  const rate = ((targetBps / 10_000) * supplyAt(nodes, level)) / gpuEpochsAt(curve, level);
  return { spec, pricing, level, nodes, gpus: nodes.reduce((s, n) => s + n.gpus, 0), rate, curve, draw };
}
