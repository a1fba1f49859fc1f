import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { FLEET_MIX, pickFleet, seededRandom, TRACE_GPU_MODELS, TRACE_NODE_COUNT } from '../src/index.js';

test('the table matches the trace: 1,213 nodes, shapes as in the CSV', () => {
  assert.equal(
    FLEET_MIX.reduce((n, s) => n + s.count, 0),
    TRACE_NODE_COUNT,
  );
  assert.equal(TRACE_NODE_COUNT, 1213);
  const g2 = FLEET_MIX.find((s) => s.model === 'G2');
  assert.deepEqual(g2, { count: 549, gpuCount: 8, model: 'G2', cpuCores: 96, memoryMb: 393216 });
  for (const s of FLEET_MIX) assert.ok(TRACE_GPU_MODELS[s.model], s.model);
});

test('the table is exactly the distinct shapes of the trace (the copy shipped in bench/replay/data)', () => {
  const csv = readFileSync(new URL('../../../bench/replay/data/alibaba-gpu-v2023-openb_node_list_gpu_node.csv', import.meta.url), 'utf8');
  const counts = new Map<string, number>();
  for (const line of csv.trim().split('\n').slice(1)) {
    const [, cpu, mem, gpu, model] = line.split(',');
    const key = `${gpu}|${model}|${Number(cpu) / 1000}|${mem}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const table = new Map(FLEET_MIX.map((s) => [`${s.gpuCount}|${s.model}|${s.cpuCores}|${s.memoryMb}`, s.count]));
  assert.deepEqual(table, counts);
});

test('pickFleet follows the mix: every shape within one node of n × its share', () => {
  for (const n of [1, 7, 100, 1213, 5000]) {
    const fleet = pickFleet(n, seededRandom(n));
    assert.equal(fleet.length, n);
    for (const shape of FLEET_MIX) {
      const got = fleet.filter((s) => s === shape).length;
      const want = (n * shape.count) / TRACE_NODE_COUNT;
      assert.ok(Math.abs(got - want) <= 1, `n=${n} ${shape.gpuCount}x${shape.model}: ${got} vs ${want.toFixed(2)}`);
    }
  }
});

test('pickFleet is deterministic for a seed, and shuffled', () => {
  const a = pickFleet(50, seededRandom(42));
  const b = pickFleet(50, seededRandom(42));
  assert.deepEqual(a, b);
  const c = pickFleet(50, seededRandom(43));
  assert.notDeepEqual(a, c);
  const sorted = [...a].sort((x, y) => FLEET_MIX.indexOf(x) - FLEET_MIX.indexOf(y));
  assert.notDeepEqual(a, sorted);
});

test('pickFleet rejects nonsense', () => {
  assert.throws(() => pickFleet(-1, seededRandom(1)), RangeError);
  assert.deepEqual(pickFleet(0, seededRandom(1)), []);
});
