/** Offers and quotes (issue 16): grouping, filters, order and bounds of listOffers; quotePlacement's counts and prices; estimateWait's kinds. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, estimateWait, listOffers, type NodeRecord, type OfferFilter, quotePlacement, requirementsOf } from '../src/index.js';
import { gpuJob, node, T0 } from './helpers.js';

const USDC = 1_000_000;

function fleet(nodes: NodeRecord[], stake = 100 * USDC): CapacityIndex {
  const index = new CapacityIndex();
  for (const n of nodes) {
    index.upsertNode(n);
    index.setStake(n.id, stake);
  }
  return index;
}

const owned = (n: NodeRecord, providerId = 'acct-p'): NodeRecord => ({ ...n, providerId });
/** Index 2 USDC, floor 0.4 USDC per GPU-hour for every class; a node's gross ask as given by `asks`. */
const pricing = (asks: Record<string, number> = {}) => (n: { nodeId: string }, _cls: string) => {
  const ask = asks[n.nodeId];
  const lowestCap = Math.max(0.4 * USDC, ask ?? 2 * USDC);
  return { price: Math.max(2 * USDC, lowestCap), lowestCap };
};
const list = (index: CapacityIndex, filter: OfferFilter = {}, o: { asks?: Record<string, number>; limit?: number; market?: boolean } = {}) =>
  listOffers(index.allNodes(), { filter, pricing: pricing(o.asks), reliability: () => 0.5, market: o.market ?? true, limit: o.limit ?? 50 });

describe('listOffers', () => {
  const nodes = () => [
    owned(node('h1', { gpus: 8, region: 'eu' })),
    owned(node('h2', { gpus: 8, region: 'eu' })),
    owned(node('h3', { gpus: 8, region: 'us' })),
    owned(node('r1', { gpus: 1, model: 'NVIDIA GeForce RTX 4090', vramMb: 24564, region: 'us' })),
    owned(node('c1', { gpus: 0, region: 'eu' })),
    owned(node('off', { gpus: 8, status: 'offline' })),
    node('orphan', { gpus: 8 }),
  ];

  test('identical nodes are one row with a count; rows never name a node; cheapest first (cpu rows, per job-hour, last)', () => {
    const index = fleet(nodes());
    const res = list(index, {}, { asks: { h3: 3 * USDC, r1: 0.5 * USDC } });
    const rows = res.offers.map((o) => [o.class, o.gpusPerNode, o.freeGpus, o.nodes, o.region, o.price]);
    assert.deepEqual(rows, [
      ['nvidia-h100-80gb', 8, 8, 2, 'eu', 2 * USDC],
      ['nvidia-rtx4090-24gb', 1, 1, 1, 'us', 2 * USDC],
      ['nvidia-h100-80gb', 8, 8, 1, 'us', 3 * USDC],
      ['cpu', 0, 0, 1, 'eu', 2 * USDC],
    ]);
    assert.equal(res.total, 4);
    assert.equal(res.nodes, 5);
    assert.equal(res.truncated, false);
    assert.ok(!JSON.stringify(res).includes('h1.local') && !JSON.stringify(res).includes('"h1"'), 'no node id or host in an offer');
    // A node with an ask under the index is paid the index; its lowest cap is its ask (never under the floor).
    const rtx = res.offers.find((o) => o.class === 'nvidia-rtx4090-24gb');
    assert.equal(rtx?.lowestCap, 0.5 * USDC);
  });

  test('filters: --gpu by model or class, --count, --max-price, --region, cpu', () => {
    const index = fleet(nodes());
    const asks = { h3: 3 * USDC };
    assert.deepEqual(list(index, { gpu: 'H100' }, { asks }).offers.map((o) => o.region), ['eu', 'us']);
    assert.deepEqual(list(index, { gpu: 'nvidia-rtx4090-24gb' }).offers.map((o) => o.class), ['nvidia-rtx4090-24gb']);
    assert.deepEqual(list(index, { gpu: 'cpu' }).offers.map((o) => o.class), ['cpu']);
    assert.deepEqual(list(index, { minGpus: 8 }, { asks }).offers.map((o) => o.nodes), [2, 1]);
    assert.deepEqual(list(index, { minGpus: 8, maxPrice: 2 * USDC }, { asks }).offers.map((o) => o.region), ['eu']);
    assert.deepEqual(list(index, { region: 'us', gpu: 'h100' }, { asks }).offers.map((o) => o.price), [3 * USDC]);
    assert.equal(list(index, { gpu: 'A100' }).offers.length, 0);
  });

  test('busy GPUs show as fewer free; a node that cannot take a job is listed only with all, with the reason', () => {
    const index = fleet(nodes());
    index.reserve({ attemptId: 'a1', nodeId: 'h1', gpuIndices: [0, 1, 2], cpu: 1, memoryMb: 0 });
    const eu = list(index, { gpu: 'h100', region: 'eu' }).offers;
    assert.deepEqual(eu.map((o) => [o.freeGpus, o.nodes]).sort(), [[5, 1], [8, 1]]);
    assert.ok(!list(index).offers.some((o) => !o.available));
    const all = list(index, { all: true }).offers.filter((o) => !o.available);
    assert.deepEqual(all.map((o) => o.unavailable).sort(), ['no provider', 'offline']);
    assert.equal(all.find((o) => o.unavailable === 'offline')?.online, false);
    // Without a market, a node needs no provider or stake.
    assert.ok(list(index, {}, { market: false }).offers.some((o) => o.nodes === 1 && o.class === 'nvidia-h100-80gb' && o.region === null));
  });

  test('proven: only nodes whose proof-of-hardware passed', () => {
    const index = fleet([owned(node('p1', { gpus: 2 })), owned(node('p2', { gpus: 2 }))]);
    index.upsertNode({ ...owned(node('p1', { gpus: 2 })), proof: { state: 'proven', provenClass: 'nvidia-h100-80gb', score: 1, provenAt: T0, reason: null, nextCheckAt: null } });
    const res = list(index, { provenOnly: true });
    assert.deepEqual(res.offers.map((o) => [o.proven, o.nodes]), [[true, 1]]);
    assert.deepEqual(list(index).offers.map((o) => o.proven).sort(), [false, true]);
  });

  test('bounded: at most limit rows, truncated says more matched', () => {
    const many = Array.from({ length: 30 }, (_, i) => owned(node(`n${i}`, { gpus: 1, region: `r${i}` })));
    const res = list(fleet(many), {}, { limit: 10 });
    assert.equal(res.offers.length, 10);
    assert.equal(res.total, 30);
    assert.equal(res.truncated, true);
  });
});

describe('quotePlacement and estimateWait', () => {
  test('counts fitting and busy nodes and prices them at the cap as a placement would', () => {
    const index = fleet([owned(node('a', { gpus: 2 })), owned(node('b', { gpus: 2 })), owned(node('c', { gpus: 1 }))]);
    index.setAsk('b', 2.5 * USDC);
    index.reserve({ attemptId: 'x', nodeId: 'a', gpuIndices: [0], cpu: 1, memoryMb: 0 });
    const job = gpuJob(2);
    const req = requirementsOf({ spec: job.spec, avoidNodeIds: [], payment: { asset: 'usdc', capPerUnitHour: 3 * USDC, units: 2, held: 1 } });
    const q = quotePlacement(req, index);
    assert.deepEqual(q, { nodesTotal: 3, nodesFitting: 1, nodesBusy: 1, priceLow: index.quotes.of('nvidia-h100-80gb').index, priceHigh: 2.5 * USDC });
  });

  test('now, never, unknown and recent, each saying how it was estimated', () => {
    assert.equal(estimateWait({ nodesFitting: 2, nodesBusy: 0 }, 1, null, 1000).kind, 'now');
    const never = estimateWait({ nodesFitting: 0, nodesBusy: 1 }, 2, null, 1000);
    assert.deepEqual([never.kind, never.seconds], ['never', null]);
    const unknown = estimateWait({ nodesFitting: 0, nodesBusy: 3 }, 1, { count: 2, windowMs: 3_600_000, medianMs: 5000, p90Ms: 9000 }, 1000);
    assert.equal(unknown.kind, 'unknown');
    assert.match(unknown.basis, /too few jobs were placed here in the last 60 min to estimate the wait \(2; 3 needed\)/);
    const recent = estimateWait({ nodesFitting: 0, nodesBusy: 3 }, 1, { count: 40, windowMs: 3_600_000, medianMs: 45_000, p90Ms: 300_000 }, 1000);
    assert.deepEqual([recent.kind, recent.seconds], ['recent', 45]);
    assert.match(recent.basis, /median wait from submission to placement of the last 40 jobs placed in the last 60 min was 45 s \(90th percentile 5 min\)/);
  });
});
