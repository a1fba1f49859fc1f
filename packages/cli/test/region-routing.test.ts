/**
 * The routing rules at work (issue 15): two real coordinators (SQLite, market on) on loopback, peered both ways with
 * the CLI, each with one simulated H100 node, and a short market epoch, so each region's index price follows its own
 * demand. A buyer at us-west:
 * - a job with no federation constraint and a free node here stays here;
 * - with the node here busy (a long job), us-west's index rises above eu-east's idle one: a job with
 *   `constraints.maxLatencyMs` goes to eu-east at once, cheaper there and within the bound (rule 3);
 * - a job with `constraints.maxQueueSeconds: 1` waits here that long, then goes to eu-east (rule 2);
 * and each choice is in the job's `job.forwarded` event with its reason.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cryptoRandom, issueToken, } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import type { JobSpecInput } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import { waitFor } from '@gpux/testing';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';
import { type Region, startNode, startRegion, USDC } from './regions-helpers.js';

const H100 = 'nvidia-h100-80gb';

describe('routing rules: where a job submitted at us-west runs', () => {
  let dir: string;
  let west: Region;
  let east: Region;
  let buyer: GpuxClient;
  /** The long job that keeps the node here busy. */
  let busy = '';

  const gpux = async (r: Region, ...args: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home'), GPUX_URL: r.coord.url, GPUX_OPERATOR_TOKEN: r.operatorToken, GPUX_TOKEN: r.operatorToken });
    const code = await main(argv(...args), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  const job = (name: string, seconds: number, constraints: JobSpecInput['constraints'] = {}): JobSpecInput => ({
    name,
    image: 'busybox',
    command: ['true'],
    resources: { gpu: { count: 1 } },
    env: { GPUX_SIM_SECONDS: String(seconds) },
    timeoutSeconds: 600,
    maxPricePerGpuHour: 10 * USDC,
    constraints,
  });
  const ended = (id: string) =>
    waitFor(`job ${id} to end`, async () => {
      const { job } = await buyer.getJob(id);
      return ['succeeded', 'failed', 'cancelled'].includes(job.state) ? job : undefined;
    }, 30_000);
  const forwardEvents = async (id: string) => (await buyer.getJob(id)).events.filter((e) => e.type === 'job.forwarded');
  /** us-west sees eu-east ok, with its free H100 and an index below its own. */
  const eastCheaperAndFree = () =>
    waitFor('us-west to see eu-east cheaper, with its H100 free', async () => {
      const { self, peers } = await west.operator.regionPeers();
      const own = self.summary.classes.find((c) => c.class === H100);
      const theirs = peers[0]?.summary?.classes.find((c) => c.class === H100);
      return peers[0]?.status === 'ok' && own && theirs && theirs.freeGpus === 1 && theirs.priceIndex < own.priceIndex ? true : undefined;
    }, 30_000);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-region-routing-'));
    [west, east] = await Promise.all([startRegion(dir, 'us-west', { marketEpochMs: 200 }), startRegion(dir, 'eu-east', { marketEpochMs: 200 })]);
    await Promise.all([startNode(west, dir), startNode(east, dir)]);
    const [westSelf, eastSelf] = await Promise.all([west.operator.regionPeers(), east.operator.regionPeers()]);
    assert.equal((await gpux(west, 'region', 'peer', 'add', east.coord.url, '--key', eastSelf.self.keyFingerprint, '--name', 'east')).code, 0);
    assert.equal((await gpux(east, 'region', 'peer', 'add', west.coord.url, '--key', westSelf.self.keyFingerprint, '--name', 'west')).code, 0);
    const token = (await issueToken(west.coord.store, { role: 'buyer', name: 'ada' }, systemClock, cryptoRandom)).token;
    buyer = new GpuxClient({ url: west.coord.url, token });
    await buyer.deposit({ asset: 'usdc', amount: 100 * USDC });
  });
  after(async () => {
    await Promise.all([west?.agent?.stop(), east?.agent?.stop()]);
    await Promise.all([west?.coord.close(), east?.coord.close()]);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('no federation constraint and a free node here: the job stays here', async () => {
    const { job: j } = await buyer.submitJob(job('stays', 0.2));
    const done = await ended(j.id);
    assert.equal(done.state, 'succeeded');
    assert.deepEqual(await forwardEvents(j.id), []);
    const { attempts } = await buyer.getJob(j.id);
    assert.equal(attempts[0]?.nodeId, west.agent?.nodeId, 'on the node here');
  });

  test('the node here busy: a job with constraints.maxLatencyMs goes at once to the peer, cheaper and within the bound (rule 3)', async () => {
    busy = (await buyer.submitJob(job('busy', 60))).job.id;
    await waitFor('the node here to run the long job', async () => ((await buyer.getJob(busy)).job.state === 'running' ? true : undefined), 30_000);
    await eastCheaperAndFree();
    const { job: j } = await buyer.submitJob(job('cheaper', 0.2, { maxLatencyMs: 5_000 }));
    const done = await ended(j.id);
    assert.equal(done.state, 'succeeded');
    const [e] = await forwardEvents(j.id);
    assert.ok(e, 'forwarded');
    assert.match(String(e.data.reason), /^region eu-east is the cheapest with capacity within 5000 ms/, String(e.data.reason));
    assert.match(String(e.data.reason), /eu-east/);
  });

  test('a job with constraints.maxQueueSeconds waits that long here, then goes to the peer (rule 2)', async () => {
    await eastCheaperAndFree();
    const { job: j } = await buyer.submitJob(job('overflow', 0.2, { maxQueueSeconds: 1 }));
    const done = await ended(j.id);
    assert.equal(done.state, 'succeeded');
    const [e] = await forwardEvents(j.id);
    assert.ok(e, 'forwarded');
    assert.ok(e.at - j.createdAt >= 1_000, `it waited its maxQueueSeconds here first (${e.at - j.createdAt} ms)`);
    assert.match(String(e.data.reason), /beyond its queue deadline; the nearest region with capacity: region eu-east/, String(e.data.reason));
    await buyer.cancelJob(busy);
  });
});
