import fc from 'fast-check';
import { mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import type { Store } from '@gpux/core';
import { openSqliteStore } from '../../src/store/index.js';
import { cmdsArb, fundingArb } from './commands.js';
import { execute } from './execute.js';
import { Run, setup } from './model.js';
import { checkEnd, checkStep } from './checks.js';
import { VERIFY_FUNDING, VERIFY_RUN } from './verify-run.js';

const T = performance.now();
const dir = mkdtempSync(join(tmpdir(), 'h10-'));
const samples = fc.sample(fc.tuple(fundingArb, cmdsArb(30)), { numRuns: Number(process.env.N ?? 20), seed: Number(process.env.SEED ?? 7) });
let tExec = 0, tCheck = 0, tEnd = 0, nCmds = 0;
let i = 0;
for (const [funding, cmds] of (process.env.NOFIX ? samples : [[VERIFY_FUNDING, VERIFY_RUN], ...samples]) as [readonly number[], readonly import("./commands.js").Cmd[]][]) {
  const store = (await openSqliteStore(join(dir, `x${i++}.db`))) as Store;
  const run = new Run(true, new Map());
  await setup(run, store, funding);
  for (const c of cmds) {
    let t = performance.now();
    const out = await execute(run, store, c);
    tExec += performance.now() - t; t = performance.now();
    if (process.env.LOG) console.log(JSON.stringify(c).slice(0, 150), '→', out);
    const before = new Map(run.stepLabels);
    await checkStep(run, store);
    if (process.env.LOG) for (const [j, l] of run.stepLabels) if (before.get(j) !== l) console.log(`   STEP ${j} → ${l}`);
    tCheck += performance.now() - t;
    nCmds++;
  }
  const t = performance.now();
  await checkEnd(run, store);
  tEnd += performance.now() - t;
  if (i === 1) console.log('fixed run', { tExec, tCheck, tEnd, nCmds });
  await store.close();
}
console.log({ tExec, tCheck, tEnd, nCmds, total: performance.now() - T, cpu: process.cpuUsage() });
