/**
 * Long-poll amplification (issue 10 item 10): N followers long-poll one job's logs while a node appends
 * 20 lines, one at a time: each append wakes every follower, each answers and long-polls again. Reports
 * the fan-out time per append (append sent → every follower answered), the store log reads it caused and
 * the worst /healthz latency meanwhile, beside the same run with no followers (baseline). Before the fix
 * every woken waiter, and every re-poll, read the store itself: 2 × N reads per append. *
 *   node --import tsx bench/long-poll/main.ts [--waiters 0,500,2000] [--appends 20]
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Store } from '@gpux/core';
import { openStore } from '../../packages/coordinator/src/store/index.js';
import { call, gpuAd, report, startHarness, TestAgent } from '../../packages/coordinator/test/helpers.js';

const arg = (name: string, dflt: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? (process.argv[i + 1] ?? dflt) : dflt;
};
const WAITERS = arg('waiters', '0,500,2000').split(',').map(Number);
const APPENDS = Number(arg('appends', '20'));

interface Row {
  waiters: number;
  appends: number;
  totalMs: number;
  msPerAppend: number;
  storeLogReads: number;
  healthzMaxMs: number;
}

async function run(waiters: number): Promise<Row> {
  const reads = { n: 0 };
  const inner = await openStore(`sqlite:${join(mkdtempSync(join(tmpdir(), 'gpux-bench-lp-')), 'c.db')}`);
  const store: Store = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'readLogs') {
        return (...a: Parameters<Store['readLogs']>) => {
          reads.n++;
          return target.readLogs(...a);
        };
      }
      return Reflect.get(target, prop, receiver);
    },
  });
  const h = await startHarness({ logPollsPerToken: 100_000 }, { store });
  try {
    const buyer = await h.buyer();
    const agent = new TestAgent(h.url, gpuAd('bench-node'));
    await agent.register();
    const sub = await call(h.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: { name: 'lp', image: 'busybox:1.36', command: ['true'], resources: { gpu: { count: 1 } } } } });
    const jobId: string = sub.body.job.id;
    let attemptId = '';
    while (!attemptId) attemptId = (await agent.work(1000)).body.assignments?.[0]?.attemptId ?? '';
    await agent.start(attemptId);
    const beat = setInterval(() => void agent.heartbeat([attemptId]), 2000); // keep the lease

    // Followers: like `gpux job logs -f`, each re-polls from where it got to until it has every line.
    let stop = false;
    let answered = 0;
    const follower = async () => {
      let after = -1;
      let seen = 0;
      while (!stop && seen < APPENDS) {
        const r = await call(h.url, 'GET', `/v1/jobs/${jobId}/logs?after=${after}&waitMs=20000`, { token: buyer }).catch((e: Error) => ({ status: 0, body: String(e.cause ?? e) }));
        if (r.status !== 200) {
          if (process.env.BENCH_DEBUG) console.error(`follower: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
          continue;
        }
        seen += r.body.entries.length;
        answered += r.body.entries.length;
        after = r.body.next;
      }
    };
    const followers = Array.from({ length: waiters }, follower);
    await new Promise((r) => setTimeout(r, waiters > 0 ? 1000 + waiters : 0)); // let them park
    let healthzMaxMs = 0;
    const probe = (async () => {
      while (!stop) {
        const t = performance.now();
        await fetch(`${h.url}/healthz`);
        healthzMaxMs = Math.max(healthzMaxMs, performance.now() - t);
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    reads.n = 0;
    let totalMs = 0;
    for (let i = 0; i < APPENDS; i++) {
      const t0 = performance.now();
      const sent = await agent.logs(attemptId, [{ seq: i, stream: 'stdout', data: `line ${i}\n`, at: Date.now() }]);
      if (sent.status !== 200) throw new Error(`append ${i}: ${sent.status} ${JSON.stringify(sent.body)}`);
      while (answered < waiters * (i + 1)) await new Promise((r) => setTimeout(r, 5));
      totalMs += performance.now() - t0;
      if (process.env.BENCH_DEBUG) console.error(`append ${i}: answered ${answered} fan-out ${Math.round(performance.now() - t0)} ms at ${Math.round(performance.now())}`);
      await new Promise((r) => setTimeout(r, 100 + waiters / 10)); // let them long-poll again
    }
    await Promise.all(followers);
    stop = true;
    clearInterval(beat);
    await probe;
    await agent.result(attemptId, report('succeeded'));
    return { waiters, appends: APPENDS, totalMs: Math.round(totalMs), msPerAppend: Math.round((totalMs / APPENDS) * 10) / 10, storeLogReads: reads.n, healthzMaxMs: Math.round(healthzMaxMs) };
  } finally {
    await h.close();
    await store.close();
  }
}

const rows: Row[] = [];
for (const w of WAITERS) rows.push(await run(w));
console.log('waiters  appends  fan-out ms  ms/append  store log reads  /healthz max ms');
for (const r of rows) {
  console.log(
    `${String(r.waiters).padStart(7)}  ${String(r.appends).padStart(7)}  ${String(r.totalMs).padStart(10)}  ${String(r.msPerAppend).padStart(9)}  ${String(r.storeLogReads).padStart(15)}  ${String(r.healthzMaxMs).padStart(15)}`,
  );
}
mkdirSync('bench/results', { recursive: true });
writeFileSync('bench/results/long-poll.json', `${JSON.stringify({ at: new Date().toISOString(), rows }, null, 2)}\n`);
