/**
 * Forwarding at a real network distance (issue 15): three regions in network namespaces, joined by links shaped in
 * user space (the kernel here has no netem), market on. The home region, us-west, has no GPUs; us-east (5 ms away)
 * has one, eu-central (40 ms away) has four. A buyer at us-west submits jobs and keeps talking to us-west:
 * - a 1-GPU job runs at the nearest region with capacity (us-east);
 * - a 2-GPU job overflows to the far region, the only one that fits it;
 * - a partition of us-west↔us-east mid-job: the home lease runs out, the job comes home and runs at eu-central;
 *   after the heal, us-east's bill for the fenced run is the home's write-off, never the buyer's;
 * - eu-central's coordinator SIGKILLed mid-job and restarted: the job comes home, is forwarded again, and ends;
 * and at the end every pair's clearing balances net to zero, and the buyer paid exactly the jobs' bills.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { RegionBalanceResponse } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import { requireComponent } from '../src/components.js';
import { canMakeNetns, NETNS_WHY } from '../src/netns.js';
import { waitFor } from '../src/processes.js';
import { type Regions, startRegions } from '../src/regions.js';
import { tempDir, type TempDir } from '../src/temp-dir.js';

const USDC = 1_000_000;
const GPUS: Record<string, number> = { 'us-west': 0, 'us-east': 1, 'eu-central': 4 };
const LINKS: [string, string, number][] = [
  ['us-west', 'us-east', 5],
  ['us-west', 'eu-central', 40],
  ['us-east', 'eu-central', 120],
];
const HOME = 'us-west';

describe('forwarding across network namespaces', requireComponent('network namespaces', canMakeNetns(), NETNS_WHY), () => {
  let dir: TempDir;
  let regions: Regions;
  let buyer: GpuxClient;
  const jobs: string[] = [];

  before(async () => {
    dir = tempDir('gpux-fwd-netns');
    regions = await startRegions({
      dir: dir.path,
      regions: Object.entries(GPUS).map(([name, gpus]) => ({ name, gpus })),
      links: LINKS.map(([a, b, delayMs]) => ({ between: [a, b], shape: { delayMs } })),
      peerSummaryMs: 300,
      stakePerNode: 200 * USDC,
      // A short home lease, so a partition brings a job home within seconds; a job waits 1 s for a local node.
      env: { GPUX_FORWARD_POLL_MS: '200', GPUX_FORWARD_LEASE_MS: '3000', GPUX_FORWARD_AFTER_S: '1', GPUX_DEV_MINT: '1' },
    });
    const home = regions.region(HOME);
    const { token } = await home.client.createToken({ role: 'buyer', name: 'buyer' });
    buyer = new GpuxClient({ url: home.url, token });
    await buyer.deposit({ asset: 'usdc', amount: 100 * USDC });
    // Every region sees the others' capacity before the first job.
    await waitFor('us-west to see both peers with their GPUs', async () => {
      const { peers } = await home.client.regionPeers();
      return peers.length === 2 && peers.every((p) => p.status === 'ok' && (p.summary?.classes.reduce((n, c) => n + c.freeGpus, 0) ?? 0) === GPUS[p.name]) ? true : undefined;
    }, 30_000);
  });
  after(async () => {
    await regions?.stop();
    await dir?.cleanup();
  });

  const submit = async (name: string, gpus: number, seconds: number) => {
    const { job } = await buyer.submitJob({
      name,
      image: 'busybox:1.36',
      command: ['sh', '-c', 'echo hello'],
      resources: { gpu: { count: gpus } },
      env: { GPUX_SIM_SECONDS: String(seconds) },
      timeoutSeconds: 120,
      maxPricePerGpuHour: 10 * USDC,
    });
    jobs.push(job.id);
    return job.id;
  };
  const ended = (id: string, timeoutMs = 60_000) =>
    waitFor(`job ${id} to end`, async () => {
      const { job } = await buyer.getJob(id);
      return ['succeeded', 'failed', 'cancelled'].includes(job.state) ? job : undefined;
    }, timeoutMs, 250);
  /** The peer names (as us-west added them) its job's attempts were forwarded to, in order. */
  const forwardedTo = async (id: string) => {
    const { events } = await regions.region(HOME).client.getJob(id, { eventsLimit: 200 });
    const peers = await regions.region(HOME).client.regionPeers();
    const nameOf = new Map(peers.peers.map((p) => [p.id, p.name]));
    return events.filter((e) => e.type === 'job.forwarded').map((e) => nameOf.get(String(e.data.peerId)) ?? String(e.data.peerId));
  };
  /** Until us-west sees `peer` with `gpus` free GPUs (its last job's end reaches the summaries a moment later). */
  const seesFree = (peer: string, gpus: number) =>
    waitFor(`us-west to see ${gpus} free GPUs at ${peer}`, async () => {
      const p = (await regions.region(HOME).client.regionPeers()).peers.find((x) => x.name === peer);
      return p?.status === 'ok' && (p.summary?.classes.reduce((n, c) => n + c.freeGpus, 0) ?? 0) >= gpus ? true : undefined;
    }, 30_000, 100);
  const running = (id: string) => waitFor(`job ${id} running`, async () => ((await buyer.getJob(id)).job.state === 'running' ? true : undefined), 30_000, 100);

  test('a 1-GPU job runs at the nearest region with capacity; the buyer reads its logs at home', async () => {
    await seesFree('us-east', 1);
    const id = await submit('near', 1, 1);
    const job = await ended(id);
    assert.equal(job.state, 'succeeded', JSON.stringify(job));
    assert.deepEqual(await forwardedTo(id), ['us-east']);
    const logs = await buyer.jobLogs(id);
    assert.match(logs.entries.map((e) => e.data).join(''), /simulated run of sh -c echo hello/);
  });

  test('a 2-GPU job overflows to the far region, the only one that fits it', async () => {
    await seesFree('eu-central', 2);
    const id = await submit('wide', 2, 1);
    const job = await ended(id);
    assert.equal(job.state, 'succeeded', JSON.stringify(job));
    assert.deepEqual(await forwardedTo(id), ['eu-central']);
  });

  test('a partition mid-job: the job comes home after the lease, runs at eu-central; the fenced run is not billed to the buyer', async () => {
    await seesFree('us-east', 1);
    const id = await submit('partitioned', 1, 6);
    await running(id);
    assert.deepEqual(await forwardedTo(id), ['us-east']);
    const link = regions.link(HOME, 'us-east');
    link.cut();
    const job = await ended(id, 90_000);
    assert.equal(job.state, 'succeeded', JSON.stringify(job));
    assert.deepEqual(await forwardedTo(id), ['us-east', 'eu-central']);
    link.heal();
  });

  test('eu-central SIGKILLed mid-job and restarted: the job comes home, goes out again and ends', async () => {
    await seesFree('eu-central', 2);
    const id = await submit('killed', 2, 4);
    await running(id);
    await regions.kill('eu-central');
    // Home's lease (3 s) runs out while eu-central is down: the job is queued again at home.
    await waitFor(`job ${id} back home`, async () => ((await buyer.getJob(id)).job.state === 'queued' ? true : undefined), 30_000, 100);
    await regions.restart('eu-central');
    const job = await ended(id, 90_000);
    assert.equal(job.state, 'succeeded', JSON.stringify(job));
    // Out again at least once more, only ever to eu-central (the one region that fits 2 GPUs). A forward sent while the
    // restarted region's node was not yet back can lose its lease too and go out a third time (seen once in CI).
    const sent = await forwardedTo(id);
    assert.ok(sent.length >= 2, JSON.stringify(sent));
    assert.deepEqual(new Set(sent), new Set(['eu-central']));
  });

  test('every pair nets to zero, and the buyer paid exactly its jobs’ bills', async () => {
    const balance = async (name: string) => {
      const res = await regions.gpux(name, 'region', 'balance', '-o', 'json');
      assert.equal(res.code, 0, res.err);
      return JSON.parse(res.out) as RegionBalanceResponse;
    };
    // The fenced runs' bills reach home once their peers answer again: wait until nothing is open.
    const all = await waitFor('every forwarded job to be booked on both sides', async () => {
      const got = await Promise.all(Object.keys(GPUS).map(async (n) => [n, await balance(n)] as const));
      return got.every(([, b]) => b.balances.every((x) => x.open === 0)) ? new Map(got) : undefined;
    }, 60_000, 500);
    for (const [a, b] of LINKS) {
      const ab = all.get(a)?.balances.find((x) => x.peer === b && x.asset === 'usdc')?.balance ?? 0;
      const ba = all.get(b)?.balances.find((x) => x.peer === a && x.asset === 'usdc')?.balance ?? 0;
      assert.equal(ab + ba, 0, `${a} says ${ab}, ${b} says ${ba}: the pair must net to zero`);
    }
    const home = all.get(HOME)?.balances ?? [];
    assert.ok(home.every((x) => x.balance >= 0), 'the home owes its peers, never the reverse');
    const bills = await Promise.all(jobs.map((id) => buyer.jobBill(id)));
    const charged = bills.reduce((sum, b) => sum + b.charged, 0);
    assert.ok(bills.every((b) => b.inEscrow === 0 && b.held === b.charged + b.refunded), JSON.stringify(bills));
    const wallet = await buyer.wallet();
    const usdc = wallet.balances.find((b) => b.asset === 'usdc');
    assert.equal(100 * USDC - (usdc?.available ?? 0), charged, 'the buyer paid what its bills say, and nothing is held');
    assert.ok(charged > 0 && charged < home.reduce((s, x) => s + x.balance, 0), 'the home owes more than the buyer paid: the fenced runs are its write-offs');
  });
});
