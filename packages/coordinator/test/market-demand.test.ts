/**
 * What an epoch counts (services/market-demand.ts), as properties over random fleets and queues, on the
 * real capacity index and price book with the fair claim's window handed in: supply is only live nodes
 * (online, active, a provider, free stake) plus busy GPUs; queued demand is only jobs some live node of the
 * class could run, never more than busy + each buyer's bound; a job wanting more GPUs than any node has
 * counts nowhere.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { buyerDemandCap, CapacityIndex, type JobRecord, type NodeRecord } from '@gpux/core';
import { NodeAdvertisement } from '@gpux/protocol';
import { queuedJobRecord } from '@gpux/testing';
import fc from 'fast-check';
import type { Runtime } from '../src/runtime.js';
import { supplyAndDemand } from '../src/services/market-demand.js';
import { quoteFromBook } from '../src/services/market.js';
import { PriceBook } from '../src/services/price-book.js';

const H100 = 'nvidia-h100-80gb';
const RICH = 1_000_000_000_000;

interface NodeGen {
  gpus: number;
  online: boolean;
  active: boolean;
  provider: boolean;
  stake: number;
  busy: number;
}

function nodeRecord(i: number, n: NodeGen): NodeRecord {
  const advertisement = NodeAdvertisement.parse({
    hostname: `n${i}`,
    agentVersion: '0.0.0',
    os: 'linux',
    arch: 'x64',
    cpuCores: 64,
    memoryMb: 512 * 1024,
    gpus: Array.from({ length: n.gpus }, (_, g) => ({ index: g, uuid: `GPU-${i}-${g}`, vendor: 'nvidia', model: 'NVIDIA H100 80GB HBM3', vramMb: 81920 })),
    docker: { available: true },
    executors: ['docker'],
  });
  return {
    id: `node-${i}`,
    publicKey: 'k',
    advertisement,
    status: n.online ? 'online' : 'offline',
    adminState: n.active ? 'active' : 'cordoned',
    simulated: false,
    providerId: n.provider ? `prov-${i}` : null,
    registeredAt: 0,
    lastHeartbeatAt: 0,
  };
}

function queued(i: number, buyer: string, gpus: number): JobRecord {
  return queuedJobRecord({ id: `job-${i}`, buyerId: buyer, createdAt: i, cap: 50_000_000, spec: { timeoutSeconds: 600, resources: { gpu: { count: gpus } } } });
}

function world(nodes: NodeGen[], jobs: JobRecord[]): Runtime {
  const index = new CapacityIndex();
  const rt = { index, book: new PriceBook(500), store: { claimQueuedFair: async () => jobs }, config: { scheduleBatchSize: 1000 } } as unknown as Runtime;
  quoteFromBook(rt);
  nodes.forEach((n, i) => {
    const rec = nodeRecord(i, n);
    index.upsertNode(rec);
    index.setStake(rec.id, n.stake);
    const busy = Math.min(n.busy, n.gpus);
    if (busy > 0) index.reserve({ attemptId: `a-${i}`, nodeId: rec.id, gpuIndices: Array.from({ length: busy }, (_, g) => g), cpu: 1, memoryMb: 0 });
  });
  return rt;
}

const nodeGen = fc.record({
  gpus: fc.integer({ min: 1, max: 8 }),
  online: fc.boolean(),
  active: fc.boolean(),
  provider: fc.boolean(),
  stake: fc.constantFrom(0, 1, RICH),
  busy: fc.integer({ min: 0, max: 8 }),
});

describe('market supply and demand (issue 10 items 3 and 4)', () => {
  test('supply is live GPUs plus busy ones; queued demand is bounded per buyer and needs a fitting live node', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(nodeGen, { minLength: 0, maxLength: 12 }),
        fc.array(fc.record({ buyer: fc.constantFrom('b1', 'b2', 'b3'), gpus: fc.integer({ min: 1, max: 16 }) }), { maxLength: 40 }),
        async (nodes, queue) => {
          const jobs = queue.map((q, i) => queued(i, q.buyer, q.gpus));
          const { supply, demand } = await supplyAndDemand(world(nodes, jobs), 0);
          const live = (n: NodeGen) => n.online && n.active && n.provider && n.stake === RICH;
          const busy = nodes.reduce((s, n) => s + (n.online ? Math.min(n.busy, n.gpus) : 0), 0);
          const expectSupply = nodes.reduce((s, n) => s + (!n.online ? 0 : live(n) ? n.gpus : Math.min(n.busy, n.gpus)), 0);
          assert.equal(supply.get(H100) ?? 0, expectSupply, 'supply: live nodes in full, others only their busy GPUs');
          const d = demand.get(H100) ?? 0;
          const biggest = Math.max(0, ...nodes.filter(live).map((n) => n.gpus));
          const buyers = new Set(queue.filter((q) => q.gpus <= biggest).map((q) => q.buyer));
          assert.ok(d >= busy - 1e-9, 'busy GPUs are demand');
          assert.ok(d <= busy + buyers.size * buyerDemandCap(expectSupply) + 1e-9, `demand ${d} within busy ${busy} + ${buyers.size} buyers' bounds`);
          if (buyers.size === 0) assert.equal(d, busy, 'jobs no live node can run are no demand');
          return true;
        },
      ),
      { numRuns: 150 },
    );
  });

  test('a 16-GPU burst where nodes have 8 is no demand; the same burst of 8-GPU jobs counts at most half the supply', async () => {
    const nodes: NodeGen[] = [0, 1].map(() => ({ gpus: 8, online: true, active: true, provider: true, stake: RICH, busy: 0 }));
    const burst16 = Array.from({ length: 500 }, (_, i) => queued(i, 'attacker', 16));
    assert.equal((await supplyAndDemand(world(nodes, burst16), 0)).demand.get(H100) ?? 0, 0);
    const burst8 = Array.from({ length: 500 }, (_, i) => queued(i, 'attacker', 8));
    const r = await supplyAndDemand(world(nodes, burst8), 0);
    assert.equal(r.supply.get(H100), 16);
    assert.equal(r.demand.get(H100), buyerDemandCap(16));
    // An offline or stakeless fleet is no supply, and then no queued job is demand either.
    const dead: NodeGen[] = [
      { gpus: 8, online: false, active: true, provider: true, stake: RICH, busy: 0 },
      { gpus: 8, online: true, active: true, provider: true, stake: 0, busy: 0 },
      { gpus: 8, online: true, active: true, provider: false, stake: RICH, busy: 0 },
    ];
    const none = await supplyAndDemand(world(dead, burst8), 0);
    assert.deepEqual([none.supply.get(H100) ?? 0, none.demand.get(H100) ?? 0], [0, 0]);
  });
});
