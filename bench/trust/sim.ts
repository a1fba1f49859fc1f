/**
 * One run of the trust benchmark: every node works through its own stream of seeded jobs in simulated
 * time (rounds: each live node takes its next job), and every verification step goes through core's real
 * policy code: canaryDecision, auditDecision / recordAuditOutcome, chooseAuditor (auditors and referees),
 * mismatchVerdict, penaltyPlan / penaltyPostings and the reputation functions. Coordinator draws come from
 * one seeded Random; job streams and node behaviour from per-node seeded streams, so every policy sees the
 * same jobs and the same cheating decisions.
 */
import {
  type AuditCandidate,
  type AuditHistory,
  applyReputationEvent,
  auditDecision,
  BPS,
  canaryDecision,
  chooseAuditor,
  emptyAuditHistory,
  emptyReputation,
  mismatchVerdict,
  mulDiv,
  type PenaltyEvent,
  type PenaltyPlan,
  penaltyAccounts,
  penaltyPlan,
  penaltyPostings,
  type Random,
  type ReputationEventKind,
  type ReputationState,
  recordAuditOutcome,
  reputationScore,
  STAKE_MULTIPLE,
  seededRandom,
} from '@gpux/core';
import type { Act, SimNode } from './fleet.js';

export interface PolicyConfig {
  name: string;
  /** true: core's adaptive rate (first 10, then max(floor, 1/passes)); false: a fixed rate for everyone. */
  adaptive: boolean;
  fixedP: number;
  /** Stake S = STAKE_MULTIPLE × the node's largest job price; false: no stake (a caught cheat forfeits its pay and is banned). */
  stake: boolean;
}

export interface SimParams {
  days: number;
  seed: number;
  nonDetShare: number;
  feeBps: number;
  costShare: number;
  honestStallQ: number;
  canaryRate: number;
  halfLifeMs: number;
}

export interface NodeResult {
  caught: 'banned' | 'suspended' | null;
  caughtAtH: number | null;
  jobs: number;
  jobsFromFirstCheatToCaught: number | null;
  cheated: number;
  /** Buyers' money paid for wrong results that were never recovered. */
  buyerLost: number;
  buyerCompensation: number;
  /** Σ over jobs (actual net − honest net) − slashed − fees: what cheating earned over honesty on the same jobs. */
  profitFromCheating: number;
  slashed: number;
  fees: number;
  reputation: number;
  passedByRing: number;
}

export interface RunResult {
  policy: PolicyConfig;
  nodes: NodeResult[];
  compute: { buyerS: number; auditS: number; refereeS: number; canaryS: number };
  audits: number;
  referees: number;
  canaries: number;
  unauditedNonDet: number;
}

const HOUR = 3_600_000;
const RUNTIME_MEDIAN_S = 1200;
const RUNTIME_MAX_S = 4 * 3600;

interface State {
  clock: number;
  jobs: number;
  history: AuditHistory;
  stopped: 'banned' | 'suspended' | null;
  stopAt: number | null;
  firstCheat: number | null;
  caughtJob: number | null;
  leaseLosses: number[];
  wallet: number;
  stake: number;
  rep: ReputationState;
  jobR: Random;
  behR: Random;
  r: Omit<NodeResult, 'caught' | 'caughtAtH' | 'jobs' | 'jobsFromFirstCheatToCaught' | 'reputation'>;
}

function normal(r: Random): number {
  const u = Math.max(r.next(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r.next());
}

export function runPolicy(fleet: readonly SimNode[], policy: PolicyConfig, p: SimParams): RunResult {
  const coord = seededRandom(p.seed * 7919 + 1);
  const horizon = p.days * 24 * HOUR;
  const st: State[] = fleet.map((n) => ({
    clock: 0,
    jobs: 0,
    history: emptyAuditHistory(),
    stopped: null,
    stopAt: null,
    firstCheat: null,
    caughtJob: null,
    leaseLosses: [],
    wallet: 0,
    stake: policy.stake ? STAKE_MULTIPLE * Math.ceil(RUNTIME_MAX_S * n.ratePerS) : 0,
    rep: emptyReputation(0),
    jobR: seededRandom(p.seed * 100_003 + n.index * 2),
    behR: seededRandom(p.seed * 100_003 + n.index * 2 + 1),
    r: { cheated: 0, buyerLost: 0, buyerCompensation: 0, profitFromCheating: 0, slashed: 0, fees: 0, passedByRing: 0 },
  }));
  // Live nodes that can audit (swap-remove on ban or suspension).
  const live: AuditCandidate[] = fleet.map((n) => ({ nodeId: n.nodeId, operatorId: n.operatorId }));
  const pos = new Map(live.map((c, i) => [c.nodeId, i]));
  const byId = new Map(fleet.map((n) => [n.nodeId, n]));
  const out: RunResult = { policy, nodes: [], compute: { buyerS: 0, auditS: 0, refereeS: 0, canaryS: 0 }, audits: 0, referees: 0, canaries: 0, unauditedNonDet: 0 };
  const rep = (i: number, kind: ReputationEventKind) => {
    const s = st[i] as State;
    s.rep = applyReputationEvent(s.rep, kind, s.clock, p.halfLifeMs);
  };
  const stop = (i: number, how: 'banned' | 'suspended') => {
    const s = st[i] as State;
    if (s.stopped) return;
    s.stopped = how;
    s.stopAt = s.clock;
    s.caughtJob = s.jobs;
    const k = pos.get((fleet[i] as SimNode).nodeId) as number;
    const last = live.pop() as AuditCandidate;
    if (k < live.length) {
      live[k] = last;
      pos.set(last.nodeId, k);
    }
    pos.delete((fleet[i] as SimNode).nodeId);
  };
  const apply = (i: number, ev: PenaltyEvent): PenaltyPlan => {
    const n = fleet[i] as SimNode;
    const plan = penaltyPlan(ev, penaltyAccounts({ nodeId: n.nodeId, jobId: 'job', buyerId: 'buyer', providerId: n.operatorId }));
    penaltyPostings(plan, 'usdc'); // throws unless the legs balance
    const s = st[i] as State;
    if (plan.slashed > s.stake) throw new Error(`slash ${plan.slashed} above stake ${s.stake}`);
    s.stake -= plan.slashed;
    s.r.slashed += plan.slashed;
    s.r.profitFromCheating -= plan.slashed;
    s.r.buyerCompensation += plan.legs.filter((l) => l.to === 'wallet:buyer' && l.what === 'slash').reduce((a, l) => a + l.amount, 0);
    if (plan.ban) stop(i, 'banned');
    if (plan.suspend) stop(i, 'suspended');
    return plan;
  };
  // What node `a` returns when it re-executes node `e`'s job: it confirms a ring-mate's lie; a lazy node returns garbage.
  const rerun = (a: SimNode, e: SimNode, execOutput: string): string => {
    if (a.strategy && e.strategy && a.ring === e.ring && execOutput !== 'truth') return execOutput;
    if (a.strategy?.lazyAuditor) return `garbage:${a.nodeId}`;
    return 'truth';
  };

  let active = true;
  while (active) {
    active = false;
    for (let i = 0; i < fleet.length; i++) {
      const n = fleet[i] as SimNode;
      const s = st[i] as State;
      if (s.stopped || s.clock >= horizon) continue;
      active = true;
      const runtimeS = Math.min(RUNTIME_MAX_S, Math.max(60, Math.round(RUNTIME_MEDIAN_S * Math.exp(normal(s.jobR)))));
      const price = Math.ceil(runtimeS * n.ratePerS);
      const pay = price - mulDiv(price, p.feeBps, BPS);
      const cost = mulDiv(price, Math.round(p.costShare * BPS), BPS);
      const det = s.jobR.next() >= p.nonDetShare;
      s.clock += runtimeS * 1000 + Math.round(-Math.log(Math.max(s.jobR.next(), 1e-12)) * 600_000);
      const act: Act = n.strategy ? n.strategy.act(s.jobs, s.behR) : s.behR.next() < p.honestStallQ ? 'stall' : 'honest';
      s.jobs++;
      const canary = canaryDecision(coord, p.canaryRate).canary;
      if (canary) out.canaries++;
      if (act !== 'honest') {
        s.r.cheated++;
        s.firstCheat ??= s.jobs;
      }
      const honestNet = pay - cost;
      if (act === 'stall') {
        const plan = apply(i, { kind: 'lease-abandoned', lostJobPrice: price, walletBalance: s.wallet, earlierLosses: s.leaseLosses, at: s.clock });
        const fee = plan.legs.reduce((a, l) => a + l.amount, 0);
        s.wallet -= fee;
        s.r.fees += fee;
        s.r.profitFromCheating -= honestNet + fee;
        s.leaseLosses.push(s.clock);
        rep(i, 'lease-lost');
        continue;
      }
      if (canary) out.compute.canaryS += runtimeS;
      else out.compute.buyerS += runtimeS;
      if (act === 'equivocate') {
        apply(i, { kind: 'equivocation', stake: s.stake, pay });
        s.r.profitFromCheating -= honestNet;
        continue;
      }
      const output = act === 'wrong' ? (n.strategy?.ring === 1 ? `lie:${n.nodeId}` : `lie:ring${n.ring}`) : 'truth';
      // Verification: a canary's answer is known; a deterministic job may be audited; the rest is unaudited.
      let verdict: 'pass' | 'fail' | 'unaudited' = 'unaudited';
      if (canary) verdict = output === 'truth' ? 'pass' : 'fail';
      else if (!det) out.unauditedNonDet++;
      else {
        const audit = policy.adaptive ? auditDecision(s.history, n.tier, coord).audit : coord.next() < policy.fixedP;
        const self = { nodeId: n.nodeId, operatorId: n.operatorId };
        const auditor = audit ? chooseAuditor(live, { nodes: [self] }, coord) : null;
        if (auditor) {
          out.audits++;
          out.compute.auditS += runtimeS;
          const an = byId.get(auditor.nodeId) as SimNode;
          const aOut = rerun(an, n, output);
          const referees: string[] = [];
          const drawn: AuditCandidate[] = [self, auditor];
          let v = mismatchVerdict(output, aOut, referees);
          while (v.kind === 'referee-needed' && referees.length < 8) {
            const ref = chooseAuditor(live, { nodes: drawn }, coord);
            if (!ref) break;
            drawn.push(ref);
            out.referees++;
            out.compute.refereeS += runtimeS;
            referees.push(rerun(byId.get(ref.nodeId) as SimNode, n, output));
            v = mismatchVerdict(output, aOut, referees);
          }
          if (v.kind === 'agreed') {
            verdict = 'pass';
            if (output !== 'truth') s.r.passedByRing++;
          } else if (v.kind === 'decided') {
            verdict = v.wrong.includes('executor') ? 'fail' : 'pass';
            if (v.wrong.includes('auditor')) {
              const ai = an.index;
              apply(ai, { kind: 'wrong-result', stake: (st[ai] as State).stake, jobPrice: price, pay: 0, reporter: 'coordinator' });
              rep(ai, 'audit-failed');
            }
          }
        }
      }
      if (verdict === 'fail') {
        const kind = canary ? 'canary-failed' : 'wrong-result';
        apply(i, kind === 'canary-failed' ? { kind, stake: s.stake, jobPrice: price, pay } : { kind, stake: s.stake, jobPrice: price, pay, reporter: 'coordinator' });
        s.history = recordAuditOutcome(s.history, false);
        rep(i, canary ? 'canary-failed' : 'audit-failed');
        s.r.profitFromCheating -= honestNet; // no pay, and (lazy) no cost either: 0 − (pay − cost)
        continue;
      }
      if (verdict === 'pass') {
        s.history = recordAuditOutcome(s.history, true);
        rep(i, canary ? 'canary-passed' : 'audit-passed');
      } else rep(i, 'completed');
      s.wallet += pay;
      if (output !== 'truth') {
        s.r.profitFromCheating += cost; // paid as if honest, without the compute
        if (!canary) s.r.buyerLost += price;
      }
    }
  }
  out.nodes = fleet.map((_, i) => {
    const s = st[i] as State;
    return {
      ...s.r,
      caught: s.stopped,
      caughtAtH: s.stopAt === null ? null : s.stopAt / HOUR,
      jobs: s.jobs,
      jobsFromFirstCheatToCaught: s.stopped && s.firstCheat !== null && s.caughtJob !== null ? s.caughtJob - s.firstCheat + 1 : null,
      reputation: reputationScore(s.rep, Math.min(s.clock, horizon), p.halfLifeMs),
    };
  });
  return out;
}
