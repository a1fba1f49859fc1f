/**
 * npm run bench:trust — 1,000 simulated nodes, 10% of them cheating in the ways TRUST.md lists, each job
 * with a seeded runtime, cost and price, driven through core's real trust policy (trust/*: audit rate,
 * auditor and referee choice, canaries, penalties, reputation) in simulated time. Reports per strategy the
 * detection rate, jobs and hours until caught, buyers' money lost before, the strategy's profit over
 * honesty on the same jobs (must be negative), false penalties of honest nodes (must be 0) and the audit
 * overhead (goal ≤ 12%). Beside it in the same run, on the same fleet and jobs: a fixed 10% audit rate with
 * no first-10 rule, with stake and without. Prints tables, writes bench/results/trust.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AUDIT_FLOOR, CANARY_RATE, DEFAULT_REPUTATION_HALF_LIFE_MS, FIRST_AUDITS, REPORTER_SHARE_BPS, STAKE_MULTIPLE, seededRandom } from '@gpux/core';
import { machine, mean, parseFlags, percentile, table } from '../replay/report-util.js';
import { buildFleet, type SimNode, strategies } from './fleet.js';
import { type NodeResult, type PolicyConfig, type RunResult, runPolicy, type SimParams } from './sim.js';

const FLAGS = {
  nodes: 'simulated nodes (default 1000)',
  cheaters: 'share of nodes that cheat, split over the strategies (default 0.1)',
  days: 'simulated days (default 14)',
  'non-det': 'share of jobs that declare deterministic: false (never re-executed; default 0.1)',
  'cost-share': "a job's compute cost to the node as a share of its price (default 0.6)",
  'fee-bps': 'treasury fee (default 500)',
  'selective-after': 'jobs a selectively honest node runs honestly first (default 50)',
  'selective-q': 'its cheating rate after that (default 0.2)',
  'hidden-ring': 'identities in the hidden Sybil ring (default 12)',
  seed: 'random seed (default 1)',
  out: 'result file (default bench/results/trust.json)',
  help: 'this list',
};

const usd = (minor: number) => `$${(minor / 1e6).toFixed(2)}`;
const pct = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : '-');
const med = (xs: number[]) => (xs.length ? percentile(xs, 50) : Number.NaN);

interface StrategyRow {
  strategy: string;
  nodes: number;
  caught: number;
  detectionRate: number;
  jobsToCatchMedian: number;
  jobsToCatchP90: number;
  hoursToCatchMedian: number;
  cheatedJobs: number;
  passedByRing: number;
  buyerLostTotal: number;
  buyerCompensationTotal: number;
  profitFromCheatingPerNode: number;
  profitFromCheatingPerCheatedJob: number;
  slashedTotal: number;
  feesTotal: number;
  reputationMean: number;
}

function summarize(name: string, rs: NodeResult[]): StrategyRow {
  const caught = rs.filter((r) => r.caught);
  const cheated = rs.reduce((a, r) => a + r.cheated, 0);
  const profit = rs.reduce((a, r) => a + r.profitFromCheating, 0);
  const jobs = caught.map((r) => r.jobsFromFirstCheatToCaught).filter((x): x is number => x !== null);
  return {
    strategy: name,
    nodes: rs.length,
    caught: caught.length,
    detectionRate: rs.length ? caught.length / rs.length : Number.NaN,
    jobsToCatchMedian: med(jobs),
    jobsToCatchP90: jobs.length ? percentile(jobs, 90) : Number.NaN,
    hoursToCatchMedian: med(caught.map((r) => r.caughtAtH as number)),
    cheatedJobs: cheated,
    passedByRing: rs.reduce((a, r) => a + r.passedByRing, 0),
    buyerLostTotal: rs.reduce((a, r) => a + r.buyerLost, 0),
    buyerCompensationTotal: rs.reduce((a, r) => a + r.buyerCompensation, 0),
    profitFromCheatingPerNode: rs.length ? profit / rs.length : Number.NaN,
    profitFromCheatingPerCheatedJob: cheated ? profit / cheated : Number.NaN,
    slashedTotal: rs.reduce((a, r) => a + r.slashed, 0),
    feesTotal: rs.reduce((a, r) => a + r.fees, 0),
    reputationMean: mean(rs.map((r) => r.reputation)),
  };
}

function report(fleet: readonly SimNode[], run: RunResult, names: string[]) {
  const rows = names.map((s) => summarize(s, run.nodes.filter((_, i) => fleet[i]?.strategy?.name === s)));
  const honest = run.nodes.filter((_, i) => !fleet[i]?.strategy);
  const falsePenalties = honest.filter((r) => r.slashed > 0 || r.caught !== null).length;
  const c = run.compute;
  const verify = c.auditS + c.refereeS + c.canaryS;
  return {
    policy: run.policy,
    strategies: rows,
    honest: {
      nodes: honest.length,
      falsePenalties,
      slashed: honest.reduce((a, r) => a + r.slashed, 0),
      leaseLosses: honest.reduce((a, r) => a + r.cheated, 0),
      leaseFees: honest.reduce((a, r) => a + r.fees, 0),
      reputationMean: mean(honest.map((r) => r.reputation)),
    },
    audits: run.audits,
    referees: run.referees,
    canaries: run.canaries,
    unauditedNonDeterministic: run.unauditedNonDet,
    compute: { ...c, overhead: verify / (c.buyerS + verify) },
  };
}

function main(): void {
  const f = parseFlags(process.argv.slice(2), FLAGS);
  if (f.help) {
    console.log(Object.entries(FLAGS).map(([k, v]) => `--${k}  ${v}`).join('\n'));
    return;
  }
  const num = (k: string, d: number) => (typeof f[k] === 'string' ? Number(f[k]) : d);
  const n = num('nodes', 1000);
  const cheatShare = num('cheaters', 0.1);
  const seed = num('seed', 1);
  const params: SimParams = {
    days: num('days', 14),
    seed,
    nonDetShare: num('non-det', 0.1),
    feeBps: num('fee-bps', 500),
    costShare: num('cost-share', 0.6),
    honestStallQ: 0.0005,
    canaryRate: CANARY_RATE,
    halfLifeMs: DEFAULT_REPUTATION_HALF_LIFE_MS,
  };
  const stratParams = { selectiveHonestJobs: num('selective-after', 50), selectiveQ: num('selective-q', 0.2), equivocateQ: 0.05, stallQ: 0.3, hiddenRing: num('hidden-ring', 12) };
  const here = dirname(fileURLToPath(import.meta.url));
  const out = typeof f.out === 'string' ? f.out : join(here, '..', 'results', 'trust.json');
  const strats = strategies(stratParams);
  const fleet = buildFleet(n, cheatShare, strats, seededRandom(seed));
  const names = strats.map((s) => s.name);
  const policies: PolicyConfig[] = [
    { name: 'gpux policy (adaptive, stake 20×)', adaptive: true, fixedP: 0, stake: true },
    { name: 'baseline: fixed 10%, stake 20×', adaptive: false, fixedP: 0.1, stake: true },
    { name: 'baseline: fixed 10%, no stake', adaptive: false, fixedP: 0.1, stake: false },
  ];
  const m = machine();
  console.log(`trust benchmark: ${n} nodes (${Math.round(n * cheatShare)} cheating), ${params.days} simulated days, seed ${seed}`);
  console.log(`machine: ${m.cpus} × ${m.cpuModel}, ${m.node}, load ${m.loadavg1}\n`);
  console.log(table(['strategy', 'nodes', 'behaviour'], strats.map((s) => [s.name, String(fleet.filter((x) => x.strategy === s).length), s.what])));
  const t0 = performance.now();
  const results = policies.map((pol) => report(fleet, runPolicy(fleet, pol, params), names));
  const wallMs = Math.round(performance.now() - t0);
  const ours = results[0] as (typeof results)[number];
  const checks = {
    everyStrategyUnprofitable: ours.strategies.every((s) => s.profitFromCheatingPerNode < 0),
    noFalsePenalties: results.every((r) => r.honest.falsePenalties === 0),
    auditOverheadAtMost12Pct: ours.compute.overhead <= 0.12,
  };
  for (const r of results) {
    console.log(`\n== ${r.policy.name}`);
    console.log(
      table(
        ['strategy', 'caught', 'detection', 'jobs to catch p50/p90', 'hours from start p50', 'cheated jobs', 'passed by ring', 'buyer lost', 'buyer compensated', 'profit/node', 'profit/cheated job', 'reputation at end'],
        r.strategies.map((s) => [
          s.strategy,
          `${s.caught}/${s.nodes}`,
          pct(s.detectionRate),
          `${Number.isFinite(s.jobsToCatchMedian) ? s.jobsToCatchMedian : '-'}/${Number.isFinite(s.jobsToCatchP90) ? s.jobsToCatchP90 : '-'}`,
          Number.isFinite(s.hoursToCatchMedian) ? s.hoursToCatchMedian.toFixed(1) : '-',
          String(s.cheatedJobs),
          String(s.passedByRing),
          usd(s.buyerLostTotal),
          usd(s.buyerCompensationTotal),
          usd(s.profitFromCheatingPerNode),
          usd(s.profitFromCheatingPerCheatedJob),
          s.reputationMean.toFixed(2),
        ]),
      ),
    );
    const h = r.honest;
    console.log(
      `honest: ${h.nodes} nodes, false penalties ${h.falsePenalties} (slashed ${usd(h.slashed)}), lease losses ${h.leaseLosses} (fees ${usd(h.leaseFees)}, true events), reputation ${h.reputationMean.toFixed(2)}`,
    );
    console.log(
      `audit overhead ${pct(r.compute.overhead)} (audits ${r.audits}, referee runs ${r.referees}, canaries ${r.canaries}; ${r.unauditedNonDeterministic} non-deterministic jobs unaudited)`,
    );
  }
  console.log(
    `\ngpux policy: every modelled strategy unprofitable: ${checks.everyStrategyUnprofitable ? 'yes' : 'NO'}; false penalties 0: ${checks.noFalsePenalties ? 'yes' : 'NO'}; audit overhead ≤ 12%: ${checks.auditOverheadAtMost12Pct ? 'yes' : 'NO'}`,
  );
  mkdirSync(dirname(out), { recursive: true });
  const json = {
    benchmark: 'trust',
    date: new Date().toISOString(),
    machine: m,
    wallMs,
    params: { nodes: n, cheatShare, ...params, strategies: stratParams },
    policy: { firstAudits: FIRST_AUDITS, auditFloor: AUDIT_FLOOR, canaryRate: CANARY_RATE, stakeMultiple: STAKE_MULTIPLE, reporterShareBps: REPORTER_SHARE_BPS, refereeQuorum: 2 },
    notes: [
      "Simulated time in rounds: each live node takes its next job in turn; a node's clock advances by the job's runtime (log-normal, median 20 min, 1 min–4 h) and an idle gap (exponential, mean 10 min). Price = runtime × the node's rate (14, 278 or 833 minor units/s); cost = costShare × price; pay = price − fee.",
      'Every verification step is core code: canaryDecision (1% per job), auditDecision + recordAuditOutcome (or a fixed rate in the baselines), chooseAuditor for auditors and referees (never the executor, its operator, or an earlier party of the same check), mismatchVerdict (2 agreeing referees), penaltyPlan + penaltyPostings (every plan balances; a slash never exceeds the stake), the reputation functions.',
      'Stake S = 20 × the node\'s largest possible job price (4 h at its rate), so each job is covered; a caught cheat loses min(S, 20 × that job\'s price) and that job\'s pay, and is banned (the no-stake baseline: pay only, banned).',
      'profit from cheating = Σ over the node\'s jobs (what it netted − what it would have netted honestly on the same job) − slashed − lease fees. A wrong result that passes saves the job\'s cost; a caught one forfeits pay − cost and the slash. Income lost after a ban is not counted, so the figure flatters cheating.',
      'Assumptions: a wrong output never matches the truth by chance; a colluding pair or Sybil ring lies alike and confirms its own members\' lies when drawn to audit or referee them, but runs strangers\' audits honestly (a lie there meets independent referees); lazy and replaying nodes return garbage on audits too and are caught as auditors. The Sybil swarm is one known operator, so it never audits itself; Sybils hidden under separate accounts are a larger colluding ring, caught when the draw falls outside it (probability (N − k) / N per audit). Equivocation is caught at once: the coordinator holds both signed commitments. Cheaters cheat on non-deterministic jobs too, which only canaries catch.',
      'Honest nodes lose a lease with probability 0.05% per job (a true event: the first per 7 days free, then a fee); a false penalty is any honest node slashed, banned or suspended.',
      'audit overhead = (audit + referee + canary compute) ÷ (buyer compute + that), in runtime seconds.',
    ],
    checks,
    results,
  };
  writeFileSync(out, `${JSON.stringify(json, null, 2)}\n`);
  console.log(`\n${(wallMs / 1000).toFixed(1)} s; wrote ${out}`);
}

main();
