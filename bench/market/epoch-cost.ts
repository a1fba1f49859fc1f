/**
 * node --import tsx bench/market/epoch-cost.ts — what one price-index epoch costs (issue 10 items 3 and 4):
 * supply over every node of the capacity index, and demand for a window of queued jobs, each job shape
 * checked against live nodes with the scheduler's filters within DEMAND_VISIT_BUDGET node looks. Shown on
 * 50,000 staked 8-GPU nodes in four classes with windows of 1,000 queued jobs: runnable ones, unplaceable
 * 16-GPU ones (the phantom-demand attack: rejected per pool without looking at a node), and the worst case
 * for the budget, every job a distinct shape that fits no node (a label nobody has). Prints a table and
 * writes bench/results/market-epoch.json. No store: the queued window is handed in as the fair claim would.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CapacityIndex, type JobRecord, type NodeRecord } from '@gpux/core';
import { type JobSpecInput, NodeAdvertisement } from '@gpux/protocol';
import { queuedJobRecord } from '@gpux/testing';
import type { Runtime } from '../../packages/coordinator/src/runtime.js';
import { DEMAND_VISIT_BUDGET, supplyAndDemand } from '../../packages/coordinator/src/services/market-demand.js';
import { quoteFromBook } from '../../packages/coordinator/src/services/market.js';
import { PriceBook } from '../../packages/coordinator/src/services/price-book.js';

const NODES = Number(process.env.NODES ?? 50_000);
const JOBS = 1000;
const RUNS = 5;
const CLASSES: [string, number][] = [
  ['NVIDIA H100 80GB HBM3', 81920],
  ['NVIDIA A100-SXM4-80GB', 81920],
  ['NVIDIA L40S', 49152],
  ['NVIDIA GeForce RTX 4090', 24576],
];

function nodeRecord(i: number): NodeRecord {
  const [model, vramMb] = CLASSES[i % CLASSES.length] as [string, number];
  const advertisement = NodeAdvertisement.parse({
    hostname: `n${i}`,
    agentVersion: '0.0.0',
    os: 'linux',
    arch: 'x64',
    cpuCores: 64,
    memoryMb: 512 * 1024,
    gpus: Array.from({ length: 8 }, (_, g) => ({ index: g, uuid: `GPU-${i}-${g}`, vendor: 'nvidia', model, vramMb })),
    docker: { available: true },
    executors: ['docker'],
    labels: { zone: `z${i % 16}` },
  });
  return { id: `node-${i}`, publicKey: 'k', advertisement, status: 'online', adminState: 'active', simulated: false, providerId: `prov-${i % 500}`, registeredAt: 0, lastHeartbeatAt: 0 };
}

function queued(i: number, over: Partial<JobSpecInput>): JobRecord {
  return queuedJobRecord({ id: `job-${i}`, buyerId: `buyer-${i % 50}`, createdAt: i, cap: 5_000_000, spec: { timeoutSeconds: 3600, ...over } });
}

const WINDOWS: [string, (i: number) => JobRecord][] = [
  ['(no queued jobs: supply only)', () => undefined as unknown as JobRecord],
  ['runnable (1-8 GPUs, 4 classes)', (i) => queued(i, { resources: { gpu: { count: 1 + (i % 8) } } })],
  ['unplaceable 16-GPU burst', (i) => queued(i, { resources: { gpu: { count: 16 } } })],
  ['1,000 distinct shapes fitting nothing', (i) => queued(i, { resources: { gpu: { count: 1 } }, constraints: { nodeLabels: { zone: `nowhere-${i}` } } })],
];

const index = new CapacityIndex();
const book = new PriceBook(500);
let t0 = performance.now();
for (let i = 0; i < NODES; i++) {
  index.upsertNode(nodeRecord(i));
  index.setStake(`node-${i}`, 10_000_000_000);
}
const buildMs = performance.now() - t0;
const rows: { window: string; medianMs: number; maxMs: number; demand: number }[] = [];
for (const [name, make] of WINDOWS) {
  const jobs = Array.from({ length: JOBS }, (_, i) => make(i)).filter((j) => j !== undefined);
  const rt = { index, book, store: { claimQueuedFair: async () => jobs }, config: { scheduleBatchSize: JOBS } } as unknown as Runtime;
  quoteFromBook(rt);
  const times: number[] = [];
  let demand = 0;
  for (let r = 0; r < RUNS; r++) {
    t0 = performance.now();
    const { demand: d } = await supplyAndDemand(rt, 0);
    times.push(performance.now() - t0);
    demand = [...d.values()].reduce((a, b) => a + b, 0);
  }
  times.sort((a, b) => a - b);
  rows.push({ window: name, medianMs: Math.round(times[Math.floor(RUNS / 2)] as number), maxMs: Math.round(times[RUNS - 1] as number), demand: Math.round(demand) });
}
console.log(`epoch cost: ${NODES.toLocaleString()} nodes × 8 GPUs (index built in ${Math.round(buildMs)} ms), windows of ${JOBS} queued jobs, ${RUNS} runs each, budget ${DEMAND_VISIT_BUDGET.toLocaleString()} node looks`);
console.log(['window'.padEnd(40), 'median ms'.padStart(10), 'max ms'.padStart(8), 'queued demand'.padStart(14)].join(''));
for (const r of rows) console.log([r.window.padEnd(40), String(r.medianMs).padStart(10), String(r.maxMs).padStart(8), String(r.demand).padStart(14)].join(''));
const out = join(dirname(fileURLToPath(import.meta.url)), '..', 'results', 'market-epoch.json');
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({ nodes: NODES, jobs: JOBS, runs: RUNS, budget: DEMAND_VISIT_BUDGET, rows }, null, 2)}\n`);
