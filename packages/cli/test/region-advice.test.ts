/**
 * Routing as advice (issue 15) through the real CLI against two real coordinators (SQLite) on loopback, peered both
 * ways: a job needing H100s on a region that has only A100s gets, in `gpux job submit --dry-run` and `gpux job
 * explain`, the peer region that has them free named as the choice, with its figures; a buyer sees the region and
 * its figures but not the peer's URL, an operator sees the URL too. Forwarding is off here (GPUX_FORWARD=off), so the
 * job stays queued to be explained; federation-forwarding.test.ts covers the forwarding itself.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import type { QuoteJobResponse, } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import { registerGpuNode, waitFor } from '@gpux/testing';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';

interface Region {
  name: string;
  coord: RunningCoordinator;
  operator: GpuxClient;
}

async function startRegion(dir: string, name: string): Promise<Region> {
  const config = loadCoordinatorConfig({}, { dataDir: join(dir, name), host: '127.0.0.1', port: 0, logLevel: 'silent', market: false, challenge: 'off', region: name, peerSummaryMs: 150, forward: false });
  const coord = await startCoordinator(config);
  return { name, coord, operator: new GpuxClient({ url: coord.url, token: coord.bootstrapOperatorToken ?? '' }) };
}

/** A node with `gpus` GPUs of `model`, registered the way an agent does (signed). */
async function registerNode(r: Region, gpus: number, model: string): Promise<void> {
  await registerGpuNode(r.coord.url, r.coord.bootstrapOperatorToken ?? '', r.name, gpus, model);
}

describe('region advice: a job for H100s on a region without them', () => {
  let dir: string;
  let west: Region;
  let east: Region;
  let buyerToken: string;
  let specFile: string;

  const gpux = async (token: string, ...args: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home'), GPUX_URL: west.coord.url, GPUX_TOKEN: token });
    const code = await main(argv(...args), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-region-advice-'));
    [west, east] = await Promise.all([startRegion(dir, 'us-west'), startRegion(dir, 'eu-east')]);
    await Promise.all([registerNode(west, 2, 'NVIDIA A100-SXM4-80GB'), registerNode(east, 4, 'NVIDIA H100 80GB HBM3')]);
    const [westSelf, eastSelf] = await Promise.all([west.operator.regionPeers(), east.operator.regionPeers()]);
    await west.operator.addPeer({ url: east.coord.url, key: eastSelf.self.keyFingerprint, name: 'frankfurt' });
    await east.operator.addPeer({ url: west.coord.url, key: westSelf.self.keyFingerprint, name: 'west' });
    await waitFor('west to see east ok with its H100s', async () => {
      const p = (await west.operator.regionPeers()).peers.find((x) => x.name === 'frankfurt');
      return p?.status === 'ok' && p.summary?.classes.some((c) => c.class === 'nvidia-h100-80gb' && c.freeGpus === 4) ? p : undefined;
    });
    buyerToken = (await west.operator.createToken({ role: 'buyer', name: 'ada' })).token;
    specFile = join(dir, 'h100.yaml');
    writeFileSync(specFile, 'name: needs-h100\nimage: busybox\ncommand: ["true"]\ntimeoutSeconds: 600\nresources:\n  gpu:\n    count: 4\n    models: ["H100"]\n');
  });
  after(async () => {
    await Promise.all([west?.coord.close(), east?.coord.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  test('dry run: a buyer gets the peer region and its figures, not its URL; an operator gets the URL', async () => {
    const dry = await gpux(buyerToken, 'job', 'submit', specFile, '--dry-run');
    assert.equal(dry.code, 0, dry.err);
    assert.match(dry.out, /^wait:\s+never, as specified/m);
    assert.match(dry.out, /^regions:\n {2}- region eu-east could run it now: 4 free nvidia-h100-80gb \(a class-level estimate from its summary\), \d+\.\d{6} USDC per GPU-hour \(class index\), \d+ ms away \(summary \d+ s old, 0 queued\)\n/m);
    assert.match(dry.out, /^ {2}region choice: no node here can run it as specified; the nearest region with capacity: region eu-east could run it now: .*\. Forwarding is off in this region \(GPUX_FORWARD=off\): to run it there, submit it to region eu-east's coordinator yourself \(its operator gives the address\)\n/m);
    assert.ok(!dry.out.includes(east.coord.url), 'a buyer does not see the peer URL');
    assert.ok(!dry.out.includes('frankfurt'), "nor the operator's name for the peer");

    const json = await gpux(buyerToken, 'job', 'submit', specFile, '--dry-run', '--json');
    const q = JSON.parse(json.out) as QuoteJobResponse;
    assert.equal(q.regions?.verdict.rule, 'no-local-capacity');
    assert.equal(q.regions?.verdict.region, 'eu-east');
    const option = q.regions?.options.find((o) => o.region === 'eu-east');
    assert.deepEqual([option?.fitsNow, option?.freeGpus, option?.class, option?.url, option?.peer], [true, 4, 'nvidia-h100-80gb', null, null]);

    const op = await gpux(west.coord.bootstrapOperatorToken ?? '', 'job', 'submit', specFile, '--dry-run');
    assert.equal(op.code, 0, op.err);
    assert.ok(op.out.includes(`Forwarding is off in this region (GPUX_FORWARD=off): submit it to ${east.coord.url} yourself`), op.out);
    assert.ok(op.out.includes(`[${east.coord.url}]`), 'the option shows the URL to an operator');
    const opQuote = await west.operator.quoteJob({ name: 'needs-h100', image: 'busybox', command: ['true'], timeoutSeconds: 600, resources: { gpu: { count: 4, models: ['H100'] } } });
    const seen = opQuote.regions?.options.find((o) => o.region === 'eu-east');
    assert.deepEqual([seen?.peer, seen?.url], ['frankfurt', east.coord.url]);
  });

  test('explain of the queued job shows the same choice', async () => {
    const buyer = new GpuxClient({ url: west.coord.url, token: buyerToken });
    const { job } = await buyer.submitJob({ name: 'needs-h100', image: 'busybox', command: ['true'], timeoutSeconds: 600, resources: { gpu: { count: 4, models: ['H100'] } } });
    const shown = await gpux(buyerToken, 'job', 'explain', job.id);
    assert.equal(shown.code, 0, shown.err);
    assert.match(shown.out, /\nregions:\n {2}- region eu-east could run it now: 4 free nvidia-h100-80gb/);
    assert.match(shown.out, /region choice: no node here can run it as specified; the nearest region with capacity: region eu-east/);
    assert.ok(!shown.out.includes(east.coord.url));
    const e = await buyer.explainJob(job.id);
    assert.equal(e.regions?.verdict.region, 'eu-east');
    // A job that fits here is advised to stay.
    const a100 = await buyer.quoteJob({ name: 'fits-here', image: 'busybox', command: ['true'], timeoutSeconds: 600, resources: { gpu: { count: 2, models: ['A100'] } } });
    assert.equal(a100.regions?.verdict.rule, 'stay');
    assert.deepEqual(
      a100.regions?.options.map((o) => o.region),
      ['us-west'],
      'east has no A100: it is left out with why',
    );
    assert.match(a100.regions?.skipped[0] ?? '', /^region eu-east: no class it accepts with 2 GPUs/);
    await buyer.cancelJob(job.id);
  });
});
