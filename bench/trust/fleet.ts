/**
 * The simulated fleet of the trust benchmark: honest nodes under small operators, and cheaters in the
 * strategies TRUST.md lists. A strategy says, per job, whether the node runs it honestly, returns a wrong
 * output, equivocates or stalls, and how it behaves when it is drawn to audit someone else's job.
 */
import type { Random, TrustTier } from '@gpux/core';

export type Act = 'honest' | 'wrong' | 'equivocate' | 'stall';

export interface Strategy {
  name: string;
  what: string;
  /** Nodes per operator / ring; ring members confirm each other's wrong outputs when drawn to audit them. */
  ring: number;
  /** true: the whole ring is one operator (the policy knows it and never lets it audit itself). */
  oneOperator: boolean;
  act(jobIndex: number, r: Random): Act;
  /** Lazy auditors return garbage on audits of strangers too; rational cheaters run those honestly (a mismatch brings a referee). */
  lazyAuditor: boolean;
}

export interface StrategyParams {
  selectiveHonestJobs: number;
  selectiveQ: number;
  equivocateQ: number;
  stallQ: number;
  hiddenRing: number;
}

export function strategies(p: StrategyParams): Strategy[] {
  return [
    { name: 'lazy', what: 'random or empty output on every job', ring: 1, oneOperator: true, lazyAuditor: true, act: () => 'wrong' },
    { name: 'replay', what: 'an old output replayed (passes size and shape checks) on every job', ring: 1, oneOperator: true, lazyAuditor: true, act: () => 'wrong' },
    { name: 'equivocator', what: `two different signed commitments on ${p.equivocateQ * 100}% of jobs, honest otherwise`, ring: 1, oneOperator: true, lazyAuditor: false, act: (_, r) => (r.next() < p.equivocateQ ? 'equivocate' : 'honest') },
    { name: 'colluding-pair', what: 'two operators (unknown to the policy) lie alike on every job and confirm each other', ring: 2, oneOperator: false, lazyAuditor: false, act: () => 'wrong' },
    { name: 'sybil-swarm', what: 'many identities under one operator, wrong on every job, confirm each other', ring: 0, oneOperator: true, lazyAuditor: false, act: () => 'wrong' },
    {
      name: 'sybil-hidden',
      what: `a ring of ${p.hiddenRing} identities under ${p.hiddenRing} accounts (collusion unknown to the policy), wrong on every job`,
      ring: p.hiddenRing,
      oneOperator: false,
      lazyAuditor: false,
      act: () => 'wrong',
    },
    {
      name: 'selective',
      what: `honest for its first ${p.selectiveHonestJobs} jobs, then wrong at rate q = ${p.selectiveQ}`,
      ring: 1,
      oneOperator: true,
      lazyAuditor: false,
      act: (i, r) => (i >= p.selectiveHonestJobs && r.next() < p.selectiveQ ? 'wrong' : 'honest'),
    },
    { name: 'slow-loris', what: `accepts and stalls (lease lost past grace) on ${p.stallQ * 100}% of jobs`, ring: 1, oneOperator: true, lazyAuditor: false, act: (_, r) => (r.next() < p.stallQ ? 'stall' : 'honest') },
  ];
}

export interface SimNode {
  index: number;
  nodeId: string;
  operatorId: string;
  /** Nodes that confirm this node's lies when drawn as its auditor or referee (its ring); unknown to the policy unless oneOperator. */
  ring: number;
  strategy: Strategy | null;
  tier: TrustTier;
  /** Minor units per second of runtime this node's jobs are priced at. */
  ratePerS: number;
}

/** 1 − cheatShare honest nodes (operators of 1–4 nodes; 15% attested, 5% curated), the rest split over the strategies. */
export function buildFleet(n: number, cheatShare: number, strats: Strategy[], r: Random): SimNode[] {
  const rates = [14, 278, 833]; // cpu, a $1/h GPU, a $3/h GPU, in USDC minor units (10^-6) per second
  const nodes: SimNode[] = [];
  const cheaters = Math.round(n * cheatShare);
  const swarm = strats.find((s) => s.ring === 0);
  const perStrategy = Math.floor(cheaters / strats.length);
  let ring = 0;
  let op = 0;
  const add = (strategy: Strategy | null, operatorId: string, ringId: number, tier: TrustTier) => {
    const i = nodes.length;
    nodes.push({ index: i, nodeId: `n${i}`, operatorId, ring: ringId, strategy, tier, ratePerS: rates[Math.floor(r.next() * rates.length)] as number });
  };
  let left = cheaters;
  for (const s of strats) {
    const count = s === swarm ? cheaters - perStrategy * (strats.length - 1) : perStrategy;
    const size = s.ring === 0 ? count : s.ring;
    for (let k = 0; k < count; k += size) {
      ring++;
      const shared = `op${op++}`;
      for (let m = 0; m < size && k + m < count; m++) add(s, s.oneOperator ? shared : `op${op++}`, ring, 'open');
    }
    left -= count;
  }
  if (left !== 0) throw new Error('fleet split');
  while (nodes.length < n) {
    const size = 1 + Math.floor(r.next() * 4);
    const operatorId = `op${op++}`;
    const t = r.next();
    const tier: TrustTier = t < 0.05 ? 'curated' : t < 0.2 ? 'attested' : 'open';
    for (let m = 0; m < size && nodes.length < n; m++) add(null, operatorId, ++ring, tier);
  }
  return nodes;
}
