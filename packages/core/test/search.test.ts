/**
 * The bounded search (search.ts): the sample it draws from the index's fit cells, and the live cell lists the index
 * keeps for it (capacity-index.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacityIndex, type Candidate, type FitCell, type NodeCapacity, type PoolSlot, requirementsOf, searchCandidates, seededRandom } from '../src/index.js';
import { gpuJob, job, node } from './helpers.js';

const T4 = { model: 'Tesla T4', vramMb: 15360 };

/** Every pool's live lists hold exactly its non-empty cells, each once, at the level its slots are at. */
function assertLiveLists(index: CapacityIndex): void {
  for (const pool of index.allPools()) {
    pool.cells.forEach((row, f) => {
      const live = pool.live[f] ?? [];
      const nonEmpty = row.filter((c): c is FitCell => !!c && c.slots.length > 0);
      assert.equal(live.length, nonEmpty.length, `${pool.key} level ${f}: live ${live.length}, non-empty ${nonEmpty.length}`);
      live.forEach((cell, i) => {
        assert.equal(cell.livePos, i);
        assert.ok(cell.slots.length > 0);
        for (const s of cell.slots) assert.equal(s.free, f);
      });
      for (const c of row) if (c && c.slots.length === 0) assert.equal(c.livePos, -1);
    });
  }
}

const groupOf = (c: Candidate) => `${c.slot?.pool.cls.key}/${c.slot?.free}`;

describe('bounded search', () => {
  test('live cell lists follow every move: reserve, release, down and up, re-registration', () => {
    const index = new CapacityIndex();
    const random = seededRandom(7);
    const held: Array<{ id: string; node: string }> = [];
    for (let i = 0; i < 30; i++) index.upsertNode(node(`n${i}`, i % 3 === 0 ? { gpus: 4, ...T4, cpu: 16 } : { gpus: 8, cpu: 64 }));
    for (let step = 0; step < 600; step++) {
      const id = `n${Math.floor(random.next() * 30)}`;
      const n = index.get(id) as NodeCapacity;
      const op = random.next();
      if (op < 0.5 && n.freeGpuCount > 0) {
        const gpus = [...n.freeGpus].slice(0, 1 + Math.floor(random.next() * n.freeGpuCount));
        const attemptId = `a${step}`;
        index.reserve({ attemptId, nodeId: id, gpuIndices: gpus, cpu: Math.min(n.freeCpu, 1 + Math.floor(random.next() * 8)), memoryMb: 1024 });
        held.push({ id: attemptId, node: id });
      } else if (op < 0.8 && held.length > 0) {
        const [h] = held.splice(Math.floor(random.next() * held.length), 1);
        index.release((h as { id: string }).id);
      } else if (op < 0.9) index.setSchedulable(id, !n.schedulable);
      else index.upsertNode(node(id, Number(id.slice(1)) % 3 === 0 ? { gpus: 4, ...T4, cpu: 16 } : { gpus: 8, cpu: 64 }));
      assertLiveLists(index);
      assert.equal(n.freeGpuCount, n.freeGpus.size);
    }
  });

  test('the sample spans every GPU class and free-GPU level with a fitting node, perGroup of each', () => {
    const index = new CapacityIndex();
    for (let i = 0; i < 80; i++) {
      const t4 = i % 2 === 1;
      index.upsertNode(node(`n${i}`, t4 ? { gpus: 4, ...T4, cpu: 32 } : { gpus: 8, cpu: 64 }));
      // Levels 1..8 (H100) and 1..4 (T4), with a spread of free cores.
      const busy = t4 ? Math.floor(i / 2) % 4 : Math.floor(i / 2) % 8;
      if (busy > 0) index.reserve({ attemptId: `a${i}`, nodeId: `n${i}`, gpuIndices: Array.from({ length: busy }, (_, g) => g), cpu: i % 5, memoryMb: 0 });
    }
    const req = requirementsOf(gpuJob(1));
    const res = searchCandidates(req, index, seededRandom(3), { want: 128, maxVisits: 512, distinct: false, perGroup: 2 });
    const groups = new Map<string, number>();
    for (const c of res.candidates) groups.set(groupOf(c), (groups.get(groupOf(c)) ?? 0) + 1);
    // 8 H100 levels and 4 T4 levels hold nodes; each gives exactly 2.
    assert.equal(groups.size, 12, [...groups.keys()].join(' '));
    for (const [g, k] of groups) assert.equal(k, 2, g);
    assert.equal(res.found, 24);
    // Without a quota it takes its 128 (or all there are) from the lowest levels first.
    const all = searchCandidates(req, index, seededRandom(3), { want: 16, maxVisits: 512, distinct: false });
    assert.equal(all.candidates.length, 16);
    assert.ok(all.candidates.every((c) => (c.slot?.free ?? 9) <= 2));
  });

  test('minSample: with few groups each takes its share, so nodes of one kind still compete on their own scores', () => {
    const index = new CapacityIndex();
    for (let i = 0; i < 40; i++) index.upsertNode(node(`n${i}`, { gpus: 8, cpu: 64 }));
    const req = requirementsOf(gpuJob(1));
    const lim = { want: 128, maxVisits: 512, distinct: false, perGroup: 2 };
    assert.equal(searchCandidates(req, index, seededRandom(1), lim).found, 2);
    assert.equal(searchCandidates(req, index, seededRandom(1), { ...lim, minSample: 16 }).found, 16);
  });

  test('cells without the cores or memory the job needs are passed over unvisited', () => {
    const index = new CapacityIndex();
    for (let i = 0; i < 200; i++) index.upsertNode(node(`n${i}`, { gpus: 8, cpu: 64, memoryMb: 65536 }));
    // 150 nodes keep 2 GPUs free but only 2 cores or 1 GiB: a 1-GPU job of 8 cores and 8 GiB fits none of them.
    for (let i = 0; i < 150; i++) index.reserve({ attemptId: `a${i}`, nodeId: `n${i}`, gpuIndices: [0, 1, 2, 3, 4, 5], cpu: i % 2 ? 62 : 8, memoryMb: i % 2 ? 0 : 64512 });
    const req = requirementsOf(job({ resources: { gpu: { count: 1 }, cpuCores: 8, memoryGb: 8 } }));
    const res = searchCandidates(req, index, seededRandom(5), { want: 128, maxVisits: 512, distinct: false, perGroup: 4 });
    assert.ok(res.found > 0);
    assert.ok(res.candidates.every((c) => c.node.freeGpuCount === 8));
    // The 2-core nodes' cells are skipped by their core bucket; the 1-GiB nodes' by their memory bound once it is exact.
    assert.ok(res.visits <= res.found + 150 / 2, `${res.visits} visits for ${res.found}`);
  });

  test('best: keeps the first best-scored usable node (and the best avoided one), as scoring the whole sample does', () => {
    const index = new CapacityIndex();
    for (let i = 0; i < 60; i++) {
      index.upsertNode(node(`n${i}`, { gpus: 8, cpu: 64 }));
      index.reserve({ attemptId: `a${i}`, nodeId: `n${i}`, gpuIndices: Array.from({ length: i % 8 }, (_, g) => g), cpu: (i * 7) % 50, memoryMb: 0 });
    }
    const score = (n: NodeCapacity, s: PoolSlot | undefined) => Math.round(n.freeCpu / 10) - (s?.free ?? 0);
    for (let seed = 1; seed <= 20; seed++) {
      const req = requirementsOf(job({ resources: { gpu: { count: 1 }, cpuCores: 2 } }, { avoid: ['n3', 'n9', 'n17'] }));
      const lim = { want: 128, maxVisits: 512, distinct: false, perGroup: 3 };
      const whole = searchCandidates(req, index, seededRandom(seed), lim).candidates;
      let best: Candidate | undefined;
      let bestAvoided: Candidate | undefined;
      for (const c of whole) {
        const sc = score(c.node, c.slot);
        if (c.avoided ? !bestAvoided || sc > score(bestAvoided.node, bestAvoided.slot) : !best || sc > score(best.node, best.slot)) {
          if (c.avoided) bestAvoided = c;
          else best = c;
        }
      }
      const kept = searchCandidates(req, index, seededRandom(seed), { ...lim, best: score });
      assert.deepEqual(
        kept.candidates.map((c) => c.node.nodeId),
        [best, bestAvoided].filter((c) => c !== undefined).map((c) => (c as Candidate).node.nodeId),
      );
      assert.equal(kept.found, whole.filter((c) => !c.avoided).length);
    }
  });
});
