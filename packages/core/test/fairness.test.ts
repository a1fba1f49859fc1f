/** Fair share between buyers and priority classes with aging, through the claim window and the engine. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CapacityIndex,
  claimWindow,
  effectivePriority,
  fairOrder,
  fairQueuePosition,
  type JobRecord,
  PlacementEngine,
  type Placement,
} from '../src/index.js';
import { ctx, gpuJob, node, T0 } from './helpers.js';

const MIN = 60_000;

describe('fairness', () => {
  test('priority classes: high, normal, low; aging lifts a waiting job one class per agingMs', () => {
    const low = gpuJob(1, { priority: 'low' }, { createdAt: T0 });
    const normal = gpuJob(1, {}, { createdAt: T0 + 5 * MIN });
    const high = gpuJob(1, { priority: 'high' }, { createdAt: T0 + 5 * MIN });
    assert.deepEqual(
      fairOrder([low, normal, high], T0 + 5 * MIN, 10 * MIN, () => 0).map((j) => j.id),
      [high.id, normal.id, low.id],
    );
    assert.equal(effectivePriority(low, T0 + 10 * MIN, 10 * MIN), 1);
    assert.equal(effectivePriority(low, T0 + 20 * MIN, 10 * MIN), 0);
    // 10 minutes on, the low job competes as normal and is the oldest there.
    assert.deepEqual(
      fairOrder([low, normal, high], T0 + 10 * MIN, 10 * MIN, () => 0).map((j) => j.id),
      [high.id, low.id, normal.id],
    );
  });

  test('round-robin between buyers; the buyer holding less goes first in each round', () => {
    const a = [1, 2, 3].map((i) => gpuJob(1, {}, { buyerId: 'a', createdAt: T0 + i }));
    const b = [gpuJob(1, {}, { buyerId: 'b', createdAt: T0 + 10 })];
    const c = [4, 5].map((i) => gpuJob(1, {}, { buyerId: 'c', createdAt: T0 + i }));
    const order = fairOrder([...a, ...b, ...c], T0 + 100, 10 * MIN, (buyer) => (buyer === 'a' ? 8 : 0));
    assert.deepEqual(
      order.map((j) => j.buyerId),
      ['c', 'b', 'a', 'c', 'a', 'a'],
    );
  });

  test('claimWindow: the oldest ceil(limit / pairs) due jobs of each (buyer, class) pair, rotating from a buyer', () => {
    const jobs: JobRecord[] = [];
    for (let i = 0; i < 100; i++) jobs.push(gpuJob(1, {}, { buyerId: 'a', createdAt: T0 + i }));
    jobs.push(gpuJob(1, { priority: 'low' }, { buyerId: 'a', createdAt: T0 }));
    jobs.push(gpuJob(1, {}, { buyerId: 'b', createdAt: T0 + 500 }));
    jobs.push(gpuJob(1, {}, { buyerId: 'c', createdAt: T0 + 1, runAfter: T0 + 10_000 }));
    const w = claimWindow(jobs, T0 + 1000, 10);
    // pairs: a/normal, a/low, b/normal, c/normal (nothing due) -> 3 each; the 5 left unused go to a/normal.
    assert.deepEqual(
      w.map((j) => `${j.buyerId}/${j.spec.priority ?? 'normal'}`),
      ['a/normal', 'a/normal', 'a/normal', 'a/low', 'b/normal', 'a/normal', 'a/normal', 'a/normal', 'a/normal', 'a/normal'],
    );
    assert.deepEqual(
      claimWindow(jobs, T0 + 1000, 2, 'b').map((j) => j.buyerId),
      ['b'],
      'two pairs from b on: b/normal and c/normal (nothing due)',
    );
  });

  test('a buyer with 10,000 queued jobs does not delay another buyer’s single job by more than one pass', () => {
    const index = new CapacityIndex();
    for (let i = 0; i < 10; i++) index.upsertNode(node(`n${i}`, { gpus: 1 }));
    const engine = new PlacementEngine();
    const queue: JobRecord[] = [];
    for (let i = 0; i < 10_000; i++) queue.push(gpuJob(1, {}, { buyerId: 'big', createdAt: T0 + i }));
    const pass = (now: number): Placement[] => {
      const placed = engine.place(claimWindow(queue, now, 1000), index, ctx(now));
      const ids = new Set(placed.map((p) => p.jobId));
      for (const j of queue) if (ids.has(j.id)) j.state = 'assigned';
      return placed;
    };
    const first = pass(T0 + 20_000);
    assert.equal(first.length, 10, 'the cluster is full of big’s jobs');
    const small = gpuJob(1, {}, { buyerId: 'small', createdAt: T0 + 20_001 });
    queue.push(small);
    for (const p of first) index.release(p.attemptId); // they finish
    const second = pass(T0 + 20_002);
    assert.equal(second.length, 10);
    assert.ok(
      second.some((p) => p.jobId === small.id),
      'the single job runs in the first pass after it was submitted',
    );
    // FIFO over the same queue would have placed 10 more of big's jobs instead.
    const fifo = queue.filter((j) => j.state === 'queued').sort((x, y) => x.createdAt - y.createdAt).slice(0, 10);
    assert.ok(!fifo.some((j) => j.id === small.id));
  });

  test('queue position: higher classes first, then round-robin with other buyers', () => {
    const pos = fairQueuePosition({
      buyerId: 'me',
      priorityRank: 1,
      aheadInPair: 3,
      pairs: [
        { buyerId: 'me', priorityRank: 1, due: 10 },
        { buyerId: 'x', priorityRank: 0, due: 5 },
        { buyerId: 'y', priorityRank: 1, due: 100 },
        { buyerId: 'z', priorityRank: 1, due: 1 },
        { buyerId: 'w', priorityRank: 2, due: 50 },
      ],
    });
    assert.deepEqual(pos, { ahead: 3 + 5 + 3 + 1, total: 166 });
  });
});
