/** Issue 17: run times and node uptime learned online, from the past only. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { NodeUptimeModel, type RunFeatures, RunTimeModel, Recent } from '../src/index.js';

const job = (over: Partial<RunFeatures> = {}): RunFeatures => ({
  buyerId: 'alice',
  image: 'trainer:1',
  name: 'train',
  gpuCount: 1,
  cpuCores: 8,
  memoryGb: 32,
  priority: 'normal',
  ...over,
});

test('Recent: quantiles of the last N values only', () => {
  const r = new Recent(4);
  for (const v of [100, 1, 2, 3, 4]) r.add(v);
  assert.equal(r.size, 4);
  assert.equal(r.quantile(0), 1, 'the oldest value (100) has left the ring');
  assert.equal(r.quantile(1), 4);
  assert.equal(r.quantile(0.5), 2.5);
  assert.equal(r.mean(), 2.5);
  assert.ok(Number.isNaN(new Recent(3).quantile(0.5)));
});

test('run time: nothing is known before runs are observed, and a family needs 3 runs to be believed', () => {
  const m = new RunTimeModel();
  assert.equal(m.predict(job()).basis, 'none');
  m.observe(job(), 'h100', 60_000);
  m.observe(job(), 'h100', 60_000);
  assert.equal(m.predict(job()).basis, 'none', 'two runs are not enough for any group');
  m.observe(job(), 'h100', 60_000);
  const p = m.predict(job());
  assert.equal(p.basis, 'family');
  assert.equal(p.samples, 3);
  assert.ok(Math.abs(p.medianMs - 60_000) < 1);
});

test('run time: the most specific group with enough runs wins; other buyers of the same image help a newcomer', () => {
  const m = new RunTimeModel();
  for (let i = 0; i < 5; i++) m.observe(job({ buyerId: 'alice' }), null, 10_000);
  for (let i = 0; i < 5; i++) m.observe(job({ buyerId: 'bob', memoryGb: 64 }), null, 40_000);
  assert.equal(m.predict(job({ buyerId: 'alice' })).basis, 'family');
  assert.ok(Math.abs(m.predict(job({ buyerId: 'alice' })).medianMs - 10_000) < 1);
  // Bob with a new memory size: his own image's runs (buyer-image), not alice's.
  const bob = m.predict(job({ buyerId: 'bob', memoryGb: 128 }));
  assert.equal(bob.basis, 'buyer-image');
  assert.ok(Math.abs(bob.medianMs - 40_000) < 1);
  // Carol never ran anything: the image and command across buyers.
  const carol = m.predict(job({ buyerId: 'carol' }));
  assert.equal(carol.basis, 'image');
  assert.equal(carol.samples, 10);
  // Another image of the same shape: the shape.
  assert.equal(m.predict(job({ buyerId: 'dan', image: 'other', memoryGb: 32 })).basis, 'shape');
  assert.equal(m.predict(job({ buyerId: 'dan', image: 'other', gpuCount: 8 })).basis, 'fleet');
});

test('run time: p90 covers the spread of the family, and accuracy is judged on runs predicted before they were seen', () => {
  const m = new RunTimeModel();
  const times = [10, 12, 9, 11, 30, 10, 12, 9, 11, 30, 10, 12, 9, 11, 30].map((s) => s * 1000);
  for (const t of times) m.observe(job(), null, t);
  const p = m.predict(job());
  assert.ok(p.medianMs > 10_000 && p.medianMs < 12_000, `median ${p.medianMs}`);
  assert.ok(p.p90Ms > 20_000, `p90 ${p.p90Ms}`);
  const acc = m.accuracy('alice');
  assert.equal(acc.runs, times.length - 3, 'the first three runs had nothing to be predicted from');
  assert.ok(acc.medianErrorRatio >= 1 && acc.medianErrorRatio < 1.3, `error ratio ${acc.medianErrorRatio}`);
  assert.ok(acc.p90Coverage > 0.6 && acc.p90Coverage <= 1, `coverage ${acc.p90Coverage}`);
  assert.equal(m.accuracy('nobody').runs, 0);
});

test("run time: a buyer's estimate is used until their own runs are known, scaled by how their estimates fared", () => {
  const m = new RunTimeModel();
  const est = (i: number) => job({ image: `sweep-${i}`, estimateMs: 100_000 });
  assert.equal(m.predict(est(0)).basis, 'estimate');
  assert.equal(m.predict(est(0)).medianMs, 100_000, 'taken as given at first');
  // This buyer's jobs run half as long as they say.
  for (let i = 0; i < 5; i++) m.observe(est(i), null, 50_000);
  const p = m.predict(est(99));
  assert.equal(p.basis, 'estimate');
  assert.ok(Math.abs(p.medianMs - 50_000) < 1, `scaled estimate ${p.medianMs}`);
  // Their own runs of an image beat any estimate.
  for (let i = 0; i < 3; i++) m.observe(job({ image: 'sweep-0', estimateMs: 100_000 }), null, 70_000);
  assert.equal(m.predict(est(0)).basis, 'family');
});

test('run time: GPU classes differ in speed, learned per family and carried to families not yet seen on a class', () => {
  const m = new RunTimeModel();
  // Family A: 100 s on a T4, 25 s on an H100. Seen on both.
  for (let i = 0; i < 4; i++) {
    m.observe(job({ image: 'a' }), 't4', 100_000);
    m.observe(job({ image: 'a' }), 'h100', 25_000);
  }
  const onH100 = m.predict(job({ image: 'a' }), 'h100');
  assert.equal(onH100.gpuClass, 'h100');
  assert.ok(Math.abs(onH100.medianMs - 25_000) < 1, 'the family on the class itself');
  // Family B was only seen on T4: on H100 it is predicted faster, by the ratio learned from others.
  for (let i = 0; i < 4; i++) m.observe(job({ image: 'b' }), 't4', 200_000);
  const b = m.predict(job({ image: 'b' }), 'h100');
  const bAny = m.predict(job({ image: 'b' }));
  assert.ok(b.medianMs < bAny.medianMs * 0.8, `h100 ${b.medianMs} vs any ${bAny.medianMs}`);
});

test('run time: memory is bounded (least recently used groups are forgotten)', () => {
  const m = new RunTimeModel({ maxGroups: 50 });
  for (let i = 0; i < 10_000; i++) m.observe(job({ buyerId: `b${i}` }), null, 1000);
  // Still answers, from the groups it kept (the shape and the fleet are always fresh).
  assert.notEqual(m.predict(job({ buyerId: 'new' })).basis, 'none');
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

test('node uptime: a node that leaves every evening is unlikely to stay up across the evening, likely at night', () => {
  const m = new NodeUptimeModel();
  // Two weeks: online 08:00–18:00 UTC every day. Three rack nodes are up all the time (heartbeats every hour).
  for (let d = 0; d < 14; d++) {
    m.online('gamer', d * DAY + 8 * HOUR);
    m.offline('gamer', d * DAY + 18 * HOUR);
    for (let h = 0; h < 24; h++) for (const r of ['rack', 'rack-2', 'rack-3']) m.online(r, d * DAY + h * HOUR);
  }
  const day15 = 14 * DAY;
  m.online('gamer', day15 + 8 * HOUR);
  const beforeEvening = m.pStaysUp('gamer', day15 + 16 * HOUR, 4 * HOUR);
  const morning = m.pStaysUp('gamer', day15 + 9 * HOUR, 4 * HOUR);
  m.online('rack', day15 + 16 * HOUR);
  const rack = m.pStaysUp('rack', day15 + 16 * HOUR, 4 * HOUR);
  assert.ok(beforeEvening < 0.5, `across 18:00: ${beforeEvening}`);
  assert.ok(morning > 0.8, `09:00-13:00: ${morning}`);
  assert.ok(rack > 0.9, `always-on node: ${rack}`);
  assert.ok(rack > beforeEvening);
  m.offline('gamer', day15 + 18 * HOUR);
  assert.equal(m.pStaysUp('gamer', day15 + 19 * HOUR, HOUR), 0, 'offline now');
});

test('node uptime: a new node is judged by the fleet, and old behaviour fades', () => {
  const m = new NodeUptimeModel({ halfLifeMs: DAY });
  // The fleet: nodes that leave after an hour, at every hour of the day.
  for (let i = 0; i < 200; i++) {
    m.online(`flaky-${i}`, i * HOUR);
    m.offline(`flaky-${i}`, i * HOUR + HOUR);
  }
  const t = 200 * HOUR;
  m.online('new', t);
  const fresh = m.pStaysUp('new', t, 4 * HOUR);
  assert.ok(fresh < 0.2, `a new node in a fleet that leaves hourly: ${fresh}`);
  assert.ok(m.pStaysUp('never-seen', t, 4 * HOUR) < 0.2);
  // The same node after three weeks of staying up (heartbeats): its own record dominates, the old fleet has faded.
  for (let h = 1; h <= 21 * 24; h++) m.online('new', t + h * HOUR);
  assert.ok(m.pStaysUp('new', t + 21 * DAY, 4 * HOUR) > 0.8);
});
