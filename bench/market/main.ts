/**
 * npm run bench:market — core's price index (nextPrice / utilizationBps, DEFAULT_PRICE_POLICY) steering
 * three GPU classes in simulated epochs with price-elastic buyers and providers: from the catalogue price to
 * the clearing level, then through a supply shock (30% of nodes leave) and a demand spike (arrivals ×2).
 * Beside it in the same run, on the same arrivals: a fixed price (the pre-shock clearing level; the
 * catalogue price in the steady run) and the same rule with a 100% step bound. Prints tables, writes
 * bench/results/market.json.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_PRICE_POLICY, type PricePolicy, seededRandom } from '@gpux/core';
import { machine, parseFlags, table } from '../replay/report-util.js';
import { shuffled } from './draws.js';
import { clearingLevel, minEpochs } from './equilibrium.js';
import { buildMarket, MARKETS, type Market } from './markets.js';
import { figures } from './metrics.js';
import { fixedRule, indexRule, type PriceRule, runMarket, type Trace } from './sim.js';

const FLAGS = {
  epochs: 'recorded epochs per run (default 400)',
  'shock-at': 'epoch of the supply shock and of the demand spike; the steady figures cover the epochs before it (default 150)',
  leave: 'share of a class\'s nodes that leave in the supply shock (default 0.3)',
  spike: 'arrival-rate factor of the demand spike (default 2)',
  patience: 'epochs a queued job waits before it leaves unserved (default 12)',
  'fee-bps': 'treasury fee: providers are paid their gross ask ceil(ask ÷ (1 − fee)) (default 500)',
  band: 'the band around p* that counts as converged (default 0.05)',
  last: 'epochs at the end the utilization and price figures average over (default 50)',
  hold: 'epochs the index must stay within the band to count as settled (default 30)',
  warmup: 'epochs at the start price before recording, to fill the cluster (default 30)',
  'fast-step-bps': 'step bound of the comparison rule, basis points (default 10000)',
  seed: 'random seed (default 1)',
  out: 'result file (default bench/results/market.json)',
  help: 'this list',
};

interface Scenario {
  name: 'steady' | 'supply-shock' | 'demand-spike';
  what: string;
  shockAt: number | null;
}

const usd = (minor: number) => `$${(minor / 1e6).toFixed(3)}`;
const int = (n: number) => n.toLocaleString('en-US');

async function main(): Promise<void> {
  const f = parseFlags(process.argv.slice(2), FLAGS);
  if (f.help) {
    console.log(Object.entries(FLAGS).map(([k, v]) => `--${k}  ${v}`).join('\n'));
    return;
  }
  const num = (k: string, d: number) => (typeof f[k] === 'string' ? Number(f[k]) : d);
  const epochs = num('epochs', 400);
  const shockAt = num('shock-at', 150);
  const leave = num('leave', 0.3);
  const spike = num('spike', 2);
  const patience = num('patience', 12);
  const feeBps = num('fee-bps', 500);
  const band = num('band', 0.05);
  const last = num('last', 50);
  const hold = num('hold', 30);
  const warmup = num('warmup', 30);
  const fastStepBps = num('fast-step-bps', 10_000);
  const seed = num('seed', 1);
  const here = dirname(fileURLToPath(import.meta.url));
  const out = typeof f.out === 'string' ? f.out : join(here, '..', 'results', 'market.json');
  const policy: PricePolicy = DEFAULT_PRICE_POLICY;
  const fastPolicy: PricePolicy = { ...policy, maxStepBps: fastStepBps };
  const target = policy.targetUtilizationBps;
  const t0 = performance.now();

  const scenarios: Scenario[] = [
    { name: 'steady', what: 'no shock: the index starts at the catalogue price', shockAt: null },
    { name: 'supply-shock', what: `${Math.round(leave * 100)}% of each class's nodes leave at epoch ${shockAt} (their jobs requeue)`, shockAt },
    { name: 'demand-spike', what: `arrivals ×${spike} from epoch ${shockAt}`, shockAt },
  ];

  const m = machine();
  console.log(`market benchmark: ${MARKETS.length} classes, ${epochs} epochs a run (+${warmup} warm-up), shocks at epoch ${shockAt}`);
  console.log(`policy: target ${target / 100}%, step ≤ ${policy.maxStepBps / 100}% an epoch; fee ${feeBps / 100}%; buyers leave after ${patience} epochs queued`);
  console.log(`machine: ${m.cpus} × ${m.cpuModel}, ${m.node}, load ${m.loadavg1}\n`);

  const markets = MARKETS.map((spec, ci) => {
    const base = seed * 1000 + ci * 10;
    const market = buildMarket(spec, feeBps, target, base);
    const level = (mk: Market, rate: number, nodes = mk.nodes) => clearingLevel({ curve: mk.curve, rate, nodes, floor: mk.pricing.floor, targetBps: target });
    const leaving = new Set(shuffled(seededRandom(base + 2), market.nodes.map((_, i) => i)).slice(0, Math.round(leave * market.nodes.length)));
    const before = level(market, market.rate);
    const afterSupply = level(market, market.rate, market.nodes.filter((_, i) => !leaving.has(i)));
    const afterSpike = level(market, market.rate * spike);
    return { market, leaving: [...leaving].sort((a, b) => a - b), arrivalsSeed: base + 3, pStar: { before, supplyShock: afterSupply, demandSpike: afterSpike } };
  });
  console.log(
    table(
      ['class', 'nodes', 'GPUs', 'arrivals/epoch', 'catalogue', 'floor', 'p* before', 'p* after supply shock', 'p* after demand spike'],
      markets.map(({ market: mk, pStar }) => [mk.spec.cls, int(mk.nodes.length), int(mk.gpus), mk.rate.toFixed(1), usd(mk.pricing.initial), usd(mk.pricing.floor), usd(pStar.before), usd(pStar.supplyShock), usd(pStar.demandSpike)]),
    ),
  );

  // Runs: per class, the three rules through each shock, and the catalogue price held through epochs [0, shockAt).
  // Before the shock a shock run is the steady run (same start, rule and arrivals), so "steady" reads its first shockAt epochs.
  const row = (mk: Market, rule: PriceRule, role: string, tr: Trace, from: number, end: number, pBefore: number, pAfter: number) => {
    const fig = figures(tr, from, end, pAfter, band, last, hold);
    return {
      class: mk.spec.cls,
      pricing: rule.name,
      role,
      pStarBefore: pBefore,
      pStarAfter: pAfter,
      minEpochsToBand: minEpochs(fig.priceAtStart, pAfter, band, policy.maxStepBps),
      minEpochsToPStar: minEpochs(fig.priceAtStart, pAfter, 0, policy.maxStepBps),
      ...fig,
      offIndexStarts: tr.offIndexStarts,
      series: { price: tr.price.slice(0, end), utilBps: tr.utilBps.slice(0, end) },
    };
  };
  type Row = ReturnType<typeof row>;
  const rows = { steady: [] as Row[], 'supply-shock': [] as Row[], 'demand-spike': [] as Row[] };
  for (const { market: mk, leaving, arrivalsSeed, pStar } of markets) {
    const run = (rule: PriceRule, start: number, epochCount: number, shock?: { leaving: readonly number[]; demandFactor: number }) =>
      runMarket(mk, { epochs: epochCount, warmup, start, rule, policy, feeBps, patience, seed: arrivalsSeed, ...(shock ? { shock: { at: shockAt, ...shock } } : {}) });
    const moving: Array<[PriceRule, string]> = [
      [indexRule('index ≤12.5%', policy), 'index'],
      [indexRule(`index ≤${fastStepBps / 100}%`, fastPolicy), 'fast'],
    ];
    const fixed = fixedRule('fixed at p* before');
    for (const [rule, role] of moving) {
      const supply = run(rule, mk.pricing.initial, epochs, { leaving, demandFactor: 1 });
      const demand = run(rule, mk.pricing.initial, epochs, { leaving: [], demandFactor: spike });
      rows.steady.push(row(mk, rule, role, supply, 0, shockAt, pStar.before, pStar.before));
      rows['supply-shock'].push(row(mk, rule, role, supply, shockAt, epochs, pStar.before, pStar.supplyShock));
      rows['demand-spike'].push(row(mk, rule, role, demand, shockAt, epochs, pStar.before, pStar.demandSpike));
    }
    const catalogue = fixedRule('fixed at catalogue');
    rows.steady.push(row(mk, catalogue, 'baseline', run(catalogue, mk.pricing.initial, shockAt), 0, shockAt, pStar.before, pStar.before));
    rows['supply-shock'].push(row(mk, fixed, 'baseline', run(fixed, pStar.before, epochs, { leaving, demandFactor: 1 }), shockAt, epochs, pStar.before, pStar.supplyShock));
    rows['demand-spike'].push(row(mk, fixed, 'baseline', run(fixed, pStar.before, epochs, { leaving: [], demandFactor: spike }), shockAt, epochs, pStar.before, pStar.demandSpike));
  }
  const results = scenarios.map((sc) => {
    const rs = rows[sc.name];
    const from = sc.shockAt ?? 0;
    const end = sc.shockAt === null ? shockAt : epochs;
    console.log(`\n== ${sc.name}: ${sc.what}; epochs ${from}–${end - 1}, averages over the last ${last}`);
    console.log(
      table(
        ['class', 'pricing', 'p*', 'index at start', 'min epochs', `first in ±${band * 100}%`, 'settled', 'in band %', 'overshoot %', 'last ÷ p*', 'util %', 'busy %', 'starved', 'priced out', 'wait', 'backlog'],
        rs.map((r) => [
          r.role === 'index' ? r.class : '',
          r.pricing,
          usd(r.pStarAfter),
          usd(r.priceAtStart),
          r.role === 'index' ? String(r.minEpochsToBand) : '',
          r.firstInBand === null ? 'never' : String(r.firstInBand),
          r.settled === null ? 'never' : String(r.settled),
          r.inBandPct === null ? '-' : r.inBandPct.toFixed(1),
          r.overshootPct.toFixed(1),
          r.priceLastOverPStar.toFixed(3),
          r.utilLastPct.toFixed(1),
          r.busyLastPct.toFixed(1),
          int(r.starved),
          int(r.pricedOut),
          r.meanWait.toFixed(2),
          int(r.backlog),
        ]),
      ),
    );
    return { ...sc, epochs: [from, end - 1], results: rs };
  });
  const wallMs = Math.round(performance.now() - t0);

  mkdirSync(dirname(out), { recursive: true });
  const json = JSON.stringify(
    {
      benchmark: 'market',
      date: new Date().toISOString(),
      machine: m,
      loadavg1After: machine().loadavg1,
      wallMs,
      params: { epochs, warmup, shockAt, leave, spike, patience, feeBps, band, last, hold, fastStepBps, seed },
      policy,
      notes: [
        'Pure simulation in epochs with core\'s nextPrice, utilizationBps, DEFAULT_PRICE_POLICY, grossAsk, clearingPrice and the class catalogue; randomness from core\'s seededRandom. Every rule sees the same arrivals and the same leaving nodes.',
        'Demand is price-elastic: a job wants GPUs only while the index ≤ its valuation (its cap), and leaves after `patience` epochs queued (starved if it was willing to pay the index then, priced out if not). Supply is price-elastic: a node takes new work only while the index ≥ its gross ask; its running jobs finish.',
        'Utilization = (busy GPUs + GPUs wanted by willing queued jobs) ÷ (GPUs of online nodes + busy GPUs of nodes priced out), as utilizationBps: capped at 2× target.',
        'p*: the lowest price where arrivals × E[GPUs × epochs of jobs valued ≥ p] ≤ target × GPUs of nodes with gross ask ≤ p (Little\'s law; the curves from 200,000 draws, bisection), before and after each shock.',
        'min epochs: ceil(log(band edge ÷ index at start) ÷ log(1 ± 12.5%)), the fewest epochs any index moving at most 12.5% an epoch could take to come within ±band of p*; minEpochsToPStar: the same to p* itself. first in band: epochs until the index first comes within ±band; settled: until it comes within ±band and stays there `hold` epochs; inBandForGood: … and stays there to the end; in band %: share of the epochs from the first in band to the end that are in band.',
        'overshoot: how far the index went past p* in the direction it had to move, % of p*. last ÷ p*, price CV, util, busy: means over the last `last` epochs of the window. wait: mean epochs queued of the jobs started in the window. backlog: willing jobs queued at the end of the window.',
        'Steady run: the baseline is the catalogue price, never moving. Shock runs: the baseline is the pre-shock p*, never moving (an oracle before the shock).',
      ],
      markets: markets.map(({ market: mk, leaving, pStar }) => ({
        class: mk.spec.cls,
        spec: mk.spec,
        nodes: mk.nodes.length,
        gpus: mk.gpus,
        arrivalsPerEpoch: Math.round(mk.rate * 100) / 100,
        catalogue: mk.pricing,
        leavingInSupplyShock: leaving.length,
        pStar,
      })),
      scenarios: results,
    },
    null,
    2,
  ).replace(/\[\s+(-?\d[\d.e+-]*(?:,\s+-?\d[\d.e+-]*)*)\s+\]/g, (_, xs: string) => `[${xs.split(/,\s+/).join(', ')}]`);
  writeFileSync(out, `${json}\n`);
  console.log(`\n${(wallMs / 1000).toFixed(1)} s; wrote ${out}`);
}

main().catch((err) => {
  console.error(err instanceof Error ? err.stack : err);
  process.exit(1);
});
