/** The pass's priors for work not queued yet (issue 18, scarcity.ts): rare room in a pool, pools behind the fleet. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, KEEP_BEHIND_WEIGHT, KEEP_RARE_ROOM, nodesAtLeast, PlacementEngine, type Pool, PoolPressure, type PoolSlot } from '../src/index.js';
import { ctx, gpuJob, node } from './helpers.js';

const v100 = { model: 'Tesla V100-SXM2-16GB', vramMb: 16160 };
const t4 = { model: 'Tesla T4', vramMb: 15360 };
const poolOf = (index: CapacityIndex, part: string) => [...index.allPools()].find((p) => p.key.includes(part)) as Pool;
const slotOf = (index: CapacityIndex, nodeId: string) => index.get(nodeId)?.slots[0] as PoolSlot;

describe('placement priors', () => {
  test('size counts follow nodes joining and leaving a pool, not reservations', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('big', { gpus: 8, ...v100, cpu: 82, memoryMb: 344064 }));
    for (let i = 0; i < 3; i++) index.upsertNode(node(`mid${i}`, { gpus: 8, ...v100, cpu: 64, memoryMb: 262144 }));
    const pool = poolOf(index, 'v100');
    assert.equal(pool.nodes, 4);
    assert.equal(nodesAtLeast(pool, 82, 0), 1);
    assert.equal(nodesAtLeast(pool, 60, 0), 4);
    // The smaller of the two counts: memory as rare as cores.
    assert.equal(nodesAtLeast(pool, 1, 344064), 1);
    index.reserve({ attemptId: 'a', nodeId: 'big', gpuIndices: [0], cpu: 40, memoryMb: 1024 });
    assert.equal(nodesAtLeast(pool, 82, 0), 1, 'a reservation changes free room, not the node sizes');
    index.setSchedulable('big', false);
    assert.equal(nodesAtLeast(pool, 82, 0), 0);
    assert.equal(pool.nodes, 3);
    index.setSchedulable('big', true);
    index.upsertNode(node('mid0', { gpus: 8, ...v100, cpu: 96, memoryMb: 262144 }));
    assert.equal(nodesAtLeast(pool, 82, 0), 2);
    assert.equal(pool.nodes, 4);
  });

  test('a job that fits smaller nodes leaves the pool’s one large node to the job only it fits', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('big', { gpus: 8, ...v100, cpu: 82, memoryMb: 344064 }));
    for (let i = 0; i < 3; i++) index.upsertNode(node(`mid${i}`, { gpus: 8, ...v100, cpu: 64, memoryMb: 262144 }));
    const engine = new PlacementEngine();
    const small = gpuJob(1, { resources: { gpu: { count: 1 }, cpuCores: 29 } });
    const [p] = engine.place([small], index, ctx());
    assert.ok(p && p.nodeId !== 'big', `the 29-core job took ${p?.nodeId}`);
    const large = gpuJob(1, { resources: { gpu: { count: 1 }, cpuCores: 67 } });
    assert.equal(engine.place([large], index, ctx())[0]?.nodeId, 'big');
  });

  test('the rare-room cost: room few other nodes of the pool have, less the pool’s baseline', () => {
    const index = new CapacityIndex();
    index.upsertNode(node('big', { gpus: 8, ...v100, cpu: 82, memoryMb: 262144 }));
    for (let i = 0; i < 3; i++) index.upsertNode(node(`mid${i}`, { gpus: 8, ...v100, cpu: 64, memoryMb: 262144 }));
    const pressure = new PoolPressure([], index);
    // Same pool, same free GPUs: only the rare-room term differs. A 29-core job takes big from 82 free cores, which no
    // other node has (1 − 1/4), to 53, which all have (0); mid0 from 64 to 35, common both (0).
    const diff = pressure.keep(slotOf(index, 'mid0'), 1, 29) - pressure.keep(slotOf(index, 'big'), 1, 29);
    assert.ok(Math.abs(diff - KEEP_RARE_ROOM * 0.75) < 1e-9, String(diff));
    // A 3-core job leaves big's room as rare as it was: no cost (the term prices what the placement takes away).
    assert.ok(Math.abs(pressure.keep(slotOf(index, 'mid0'), 1, 3) - pressure.keep(slotOf(index, 'big'), 1, 3)) < 1e-9);
    // Once big's free cores are down to what the others have, its room is no longer rare.
    index.reserve({ attemptId: 'a', nodeId: 'big', gpuIndices: [0], cpu: 20, memoryMb: 0 });
    const after = new PoolPressure([], index);
    const rest = after.keep(slotOf(index, 'big'), 1, 29) - after.keep(slotOf(index, 'mid0'), 1, 29);
    // Only the last-nodes term differs now: big has 7 free GPUs (4 nodes with 7 or more), mid0 8 (3 nodes with 8).
    assert.ok(Math.abs(rest - (10 / (1 + 3) - 10 / (1 + 4))) < 1e-9, String(rest));
  });

  test('a pool whose free share is behind the fleet’s costs its shortfall; one ahead costs nothing more', () => {
    const index = new CapacityIndex();
    for (let i = 0; i < 10; i++) index.upsertNode(node(`t4-${i}`, { gpus: 2, ...t4 }));
    for (let i = 0; i < 10; i++) index.upsertNode(node(`h${i}`, { gpus: 8 }));
    for (let i = 0; i < 5; i++) index.reserve({ attemptId: `r${i}`, nodeId: `t4-${i}`, gpuIndices: [0, 1], cpu: 1, memoryMb: 0 });
    // T4: 10 of 20 free (0.5); the fleet: 90 of 100 (0.9).
    const pressure = new PoolPressure([], index);
    const t4Pool = poolOf(index, 't4');
    const hPool = poolOf(index, 'h100');
    const base = (p: Pool, slot: PoolSlot) => -(2 * (1 - p.freeGpus / p.gpus) + 10 / (1 + p.freeGpus)) - pressure.keep(slot, 1);
    const t4Extra = base(t4Pool, slotOf(index, 't4-9'));
    const hExtra = base(hPool, slotOf(index, 'h0'));
    // What keep adds past the share and last-GPU terms: the last-nodes term (5 T4 nodes with 2 free, 10 H100 nodes with
    // 8) and, for T4 only, the shortfall against the fleet. Nodes of one size in each pool: no rare-room cost.
    const lastNodes = 10 / (1 + 5) - 10 / (1 + 10);
    assert.ok(Math.abs(t4Extra - hExtra - lastNodes - KEEP_BEHIND_WEIGHT * (1 - 0.5 / 0.9)) < 1e-9, `${t4Extra} vs ${hExtra}`);
  });
});
