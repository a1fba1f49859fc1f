/** Region advice (issue 15): each rule of the verdict, the ranking and the edges (stale, unreachable, nowhere, ties). */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RegionClassFigures, RegionSummary } from '@gpux/protocol';
import { adviseRegion, classAccepts, type LocalOutlook, type RouteInput, type RouteJob, type RoutePeer } from '../src/index.js';

const NOW = 1_700_000_000_000;
const usd = (x: number) => Math.round(x * 1_000_000);
const h100 = (free: number, price = usd(2), total = Math.max(free, 8)): RegionClassFigures => ({ class: 'nvidia-h100-80gb', freeGpus: free, totalGpus: total, priceIndex: price });
const a100 = (free: number, price = usd(1.2)): RegionClassFigures => ({ class: 'nvidia-a100-80gb', freeGpus: free, totalGpus: Math.max(free, 8), priceIndex: price });

function peer(region: string, classes: RegionClassFigures[], o: Partial<RoutePeer> = {}): RoutePeer {
  const summary: RegionSummary = { region, sentAt: NOW - 1000, classes, queueDepth: 0, placementWaitP50Ms: null };
  return { name: region, status: 'ok', rttMs: 40, summary, summaryAt: NOW - 1000, ...o };
}

const JOB: RouteJob = { gpu: { models: ['h100'] }, gpuCount: 8, nodes: 1, region: undefined, maxPrice: undefined };
const NEVER: LocalOutlook = { region: 'us-1', nodesFitting: 0, nodesBusy: 0, nodesNeeded: 1, wait: { kind: 'never', seconds: null }, classes: [a100(8)] };
const FITS: LocalOutlook = { region: 'us-1', nodesFitting: 1, nodesBusy: 0, nodesNeeded: 1, wait: { kind: 'now', seconds: 0 }, classes: [h100(8, usd(2))] };

const advise = (o: Partial<RouteInput>) => adviseRegion({ job: JOB, local: NEVER, peers: [], now: NOW, staleAfterMs: 15_000, asset: 'usdc', ...o });

describe('adviseRegion', () => {
  test('class names are matched against the GPU filter as far as they tell', () => {
    assert.equal(classAccepts('nvidia-h100-80gb', { models: ['NVIDIA H100 80GB HBM3'.toLowerCase()] }), true);
    assert.equal(classAccepts('nvidia-h100-80gb', { models: ['a100'] }), false);
    assert.equal(classAccepts('nvidia-rtx4090-24gb', { models: ['4090'] }), true);
    assert.equal(classAccepts('nvidia-h100-80gb', { vendor: 'amd' }), false);
    assert.equal(classAccepts('nvidia-a100-40gb', { minVramMb: 80 * 1024 }), false);
    assert.equal(classAccepts('nvidia-a100-80gb', { minVramMb: 80 * 1024 }), true);
    assert.equal(classAccepts('cpu', {}), false);
  });

  test('rule 2: no local node can take it → the nearest peer that fits now, with why', () => {
    const a = advise({ peers: [peer('eu-2', [h100(8, usd(2.4))], { rttMs: 40 }), peer('ap-1', [h100(16)], { rttMs: 150 }), peer('eu-3', [h100(4)], { rttMs: 10 })] });
    assert.equal(a.verdict.rule, 'no-local-capacity');
    assert.equal(a.verdict.region, 'eu-2');
    assert.match(a.verdict.sentence, /^no node here can run it as specified; the nearest region with capacity: region eu-2 could run it now: 8 free nvidia-h100-80gb \(a class-level estimate from its summary\), 2\.400000 USDC per GPU-hour \(class index\), 40 ms away \(summary 1 s old, 0 queued\)$/);
    // Ranked: fits now first (nearest first), then the one without enough free GPUs; this region runs nothing of it.
    assert.deepEqual(a.options.map((o) => [o.region, o.fitsNow]), [['eu-2', true], ['ap-1', true], ['eu-3', false]]);
  });

  test('rule 2 with a recent local wait beyond the deadline; within it, stay', () => {
    const slow: LocalOutlook = { ...FITS, nodesFitting: 0, nodesBusy: 1, wait: { kind: 'recent', seconds: 600 } };
    const peers = [peer('eu-2', [h100(8)])];
    assert.equal(advise({ local: slow, peers, maxLocalWaitMs: 60_000 }).verdict.rule, 'no-local-capacity');
    assert.equal(advise({ local: slow, peers, maxLocalWaitMs: 3_600_000 }).verdict.rule, 'stay');
    assert.equal(advise({ local: slow, peers }).verdict.rule, 'stay', 'no deadline: a busy region keeps its jobs');
  });

  test('rule 1: constraints.region names a peer, even one that fits less well; a stale one is named with why', () => {
    const peers = [peer('eu-2', [h100(8)], { rttMs: 40 }), peer('ap-1', [h100(2)], { rttMs: 150 })];
    const a = advise({ job: { ...JOB, region: 'ap-1' }, local: FITS, peers });
    assert.equal(a.verdict.rule, 'named');
    assert.equal(a.verdict.region, 'ap-1');
    assert.match(a.verdict.sentence, /^constraints\.region names region ap-1, a peer: region ap-1 has 2 of 8 nvidia-h100-80gb free/);
    const stale = advise({ job: { ...JOB, region: 'ap-1' }, peers: [peer('ap-1', [h100(8)], { summaryAt: NOW - 60_000 })] });
    assert.equal(stale.verdict.rule, 'named');
    assert.match(stale.verdict.sentence, /but peer ap-1's summary is 60 s old, older than 15 s \(3 exchange periods\): not believed$/);
    // A region no peer has is a node filter here: the rules go on.
    assert.equal(advise({ job: { ...JOB, region: 'us-1' }, local: FITS, peers }).verdict.rule, 'stay');
  });

  test('rule 3: the cheapest region within the latency bound, when cheaper than here', () => {
    const peers = [peer('eu-2', [h100(8, usd(1.5))], { rttMs: 40 }), peer('ap-1', [h100(8, usd(1.0))], { rttMs: 150 })];
    const a = advise({ local: FITS, peers, maxLatencyMs: 100 });
    assert.equal(a.verdict.rule, 'cheaper-within-latency');
    assert.equal(a.verdict.region, 'eu-2', 'ap-1 is cheaper but beyond 100 ms');
    assert.equal(advise({ local: FITS, peers, maxLatencyMs: 200 }).verdict.region, 'ap-1');
    assert.equal(advise({ local: FITS, peers }).verdict.rule, 'stay', 'no bound: rule 3 is off');
    const dear = [peer('eu-2', [h100(8, usd(2.5))])];
    assert.equal(advise({ local: FITS, peers: dear, maxLatencyMs: 100 }).verdict.rule, 'stay', 'dearer than here');
    assert.equal(advise({ local: FITS, peers: [peer('eu-2', [h100(8, usd(2))])], maxLatencyMs: 100 }).verdict.rule, 'stay', 'as cheap as here: stay');
  });

  test('a peer over the job cap does not take it', () => {
    const a = advise({ job: { ...JOB, maxPrice: usd(2) }, peers: [peer('eu-2', [h100(8, usd(2.4))], { rttMs: 10 }), peer('ap-1', [h100(8, usd(1.9))], { rttMs: 90 })] });
    assert.equal(a.verdict.region, 'ap-1');
    const over = a.options.find((o) => o.region === 'eu-2');
    assert.equal(over?.withinCap, false);
    assert.match(over?.why ?? '', /over the job's cap of 2\.000000 USDC/);
  });

  test('stale, unreachable and summary-less peers are left out, each with why', () => {
    const a = advise({
      peers: [
        peer('eu-2', [h100(8)], { status: 'unreachable' }),
        peer('eu-3', [h100(8)], { summaryAt: NOW - 16_000 }),
        { name: 'fresh', status: 'new', rttMs: null, summary: null, summaryAt: null },
        peer('ap-1', [a100(8)]),
      ],
    });
    assert.deepEqual(a.options, []);
    assert.deepEqual(
      a.skipped.map((s) => s.why),
      [
        'peer eu-2 is unreachable: its figures are not believed',
        "peer eu-3's summary is 16 s old, older than 15 s (3 exchange periods): not believed",
        'peer fresh is new: its figures are not believed',
        'region ap-1: no class it accepts with 8 GPUs (its summary lists nvidia-a100-80gb)',
      ],
    );
    assert.equal(a.verdict.rule, 'nowhere');
    assert.equal(a.verdict.sentence, 'no node here can run it as specified, and no peer region has the free GPUs it needs now (as their summaries tell)');
  });

  test('no capacity anywhere: every peer is full', () => {
    const a = advise({ peers: [peer('eu-2', [h100(2)]), peer('ap-1', [h100(0)])] });
    assert.equal(a.verdict.rule, 'nowhere');
    assert.equal(a.options.every((o) => !o.fitsNow), true);
  });

  test('ties: equal round trip → cheaper → name', () => {
    const cheaper = advise({ peers: [peer('eu-2', [h100(8, usd(2))], { rttMs: 40 }), peer('eu-1', [h100(8, usd(1.8))], { rttMs: 40 })] });
    assert.equal(cheaper.verdict.region, 'eu-1');
    const byName = advise({ peers: [peer('eu-2', [h100(8)], { rttMs: 40 }), peer('eu-1', [h100(8)], { rttMs: 40 })] });
    assert.equal(byName.verdict.region, 'eu-1');
    assert.deepEqual(
      byName.options.map((o) => o.region),
      ['eu-1', 'eu-2'],
    );
  });

  test('a gang needs its GPUs × nodes free in the class; a CPU-only job gets no peer figures', () => {
    const gang = advise({ job: { ...JOB, nodes: 2 }, peers: [peer('eu-2', [h100(8)])] });
    assert.equal(gang.options[0]?.fitsNow, false);
    const cpu = advise({ job: { ...JOB, gpu: {}, gpuCount: 0 }, peers: [peer('eu-2', [h100(8)])] });
    assert.deepEqual(cpu.options, []);
    assert.match(cpu.skipped[0]?.why ?? '', /summaries count GPUs only/);
  });

  test('this region is an option when it can run the job, ranked like a peer at 0 ms', () => {
    const a = advise({ local: FITS, peers: [peer('eu-2', [h100(8)])] });
    assert.deepEqual(a.options.map((o) => [o.region, o.local]), [['us-1', true], ['eu-2', false]]);
    assert.equal(a.verdict.sentence, 'stay in this region (us-1): a node here can take it now, and no rule sends it elsewhere');
  });
});
