/**
 * Prices before launch (issue 16) with the real CLI against a real coordinator and simulated H100 agents:
 * `gpux offers` with its filters and -o formats, `gpux job submit --dry-run` (the hold, the wallet, the price range,
 * the nodes that fit, the expected wait; nothing submitted), `gpux run --dry-run`, and the hold a plain submit prints.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { grossAsk } from '@gpux/core';
import { formatAmount, type OffersResponse, type QuoteJobResponse } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import { main } from '../src/main.js';
import { argv, captureIo, tempDir } from './helpers.js';
import { H100, H100_ASK, type PricedNetwork, startPricedNetwork, USDC } from './priced-network.js';

describe('gpux offers and gpux job submit --dry-run, on a real coordinator', () => {
  let net: PricedNetwork;
  let price: string;

  before(async () => {
    net = await startPricedNetwork(2);
    const fee = (await new GpuxClient({ url: net.url, token: net.buyer }).offers()).feeBps;
    price = formatAmount(grossAsk(H100_ASK, fee), 'usdc', { symbol: false });
  });
  after(() => net?.stop());

  /** Runs the CLI in process as the buyer (the connection flags go before any `--`). */
  const gpux = async (...args: string[]) => {
    const io = captureIo({ GPUX_HOME: '/nonexistent-gpux-home' });
    const dash = args.indexOf('--');
    const code = await main(argv(...(dash < 0 ? [...args, ...net.as()] : [...args.slice(0, dash), ...net.as(), ...args.slice(dash)])), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };
  const specFile = (dir: string, body: string) => {
    const f = join(dir, 'job.yaml');
    writeFileSync(f, body);
    return f;
  };

  test('gpux offers: one row for two identical nodes, at the ask plus the fee, cheapest first', async () => {
    const r = await gpux('offers');
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^prices per GPU-hour \(cpu: per job-hour\) as a job pays them, the network fee of \d+\.\d\d% included$/m);
    assert.match(r.out, /^CLASS +GPUS FREE\/TOTAL +NODES +PRICE \(USDC\) +REGION +RELIABILITY +PROVEN +ONLINE$/m);
    assert.match(r.out, new RegExp(`^${H100} +8/8 +2 +${price.replace('.', '\\.')} +eu +0\\.50 +no +yes$`, 'm'));
    for (const id of net.nodeIds) assert.ok(!r.out.includes(id), 'no node id in an offer');
  });

  test('gpux offers --gpu H100 --count 8 --max-price 3: the filters; a bad price is a usage error', async () => {
    assert.match((await gpux('offers', '--gpu', 'H100', '--count', '8', '--max-price', '3')).out, new RegExp(`^${H100} `, 'm'));
    assert.match((await gpux('offers', '--max-price', '3 USDC')).out, new RegExp(`^${H100} `, 'm'));
    assert.match((await gpux('offers', '--max-price', '2')).out, /^no offers match: /m);
    assert.match((await gpux('offers', '--gpu', 'A100')).out, /^no offers match: /m);
    assert.match((await gpux('offers', '--count', '9')).out, /^no offers match: /m);
    assert.match((await gpux('offers', '--region', 'us')).out, /^no offers match: /m);
    assert.match((await gpux('offers', '--proven')).out, /^no offers match: /m);
    const bad = await gpux('offers', '--max-price', '3 EUR');
    assert.equal(bad.code, 2, bad.err);
    assert.match(bad.err, /--max-price "3 EUR" names "EUR", which is not an asset/);
    assert.equal((await gpux('offers', '--count', 'eight')).code, 2);
  });

  test('gpux offers -o wide|json|yaml', async () => {
    const wide = await gpux('offers', '-o', 'wide');
    assert.match(wide.out, /MODEL +CPU +MEMORY +TIER +LOWEST CAP +AVAILABLE$/m);
    assert.match(wide.out, /nvidia h100 80gb hbm3 80 GB +32 +256 GB +open +\d+\.\d{6} +yes$/m);
    const json = JSON.parse((await gpux('offers', '-o', 'json')).out) as OffersResponse;
    assert.deepEqual(json.offers.map((o) => [o.class, o.nodes, o.gpusPerNode]), [[H100, 2, 8]]);
    assert.match((await gpux('offers', '-o', 'yaml')).out, /^offers:\n {2}- class: nvidia-h100-80gb$/m);
  });

  test('gpux job submit --dry-run: valid here and there, the hold, the wallet, the price, the nodes, the wait; nothing submitted', async (t) => {
    const f = specFile(tempDir(t), 'name: train\nimage: busybox:1.36\ncommand: ["true"]\nresources:\n  gpu:\n    count: 2\ntimeoutSeconds: 600\nmaxPricePerGpuHour: 3 USDC\n');
    const r = await gpux('job', 'submit', '--dry-run', f);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /: a valid job spec "train" \(checked here and by the coordinator\); dry run, nothing was submitted$/m);
    assert.match(r.out, /^hold: +1\.000000 USDC in escrow \(cap 3\.000000 USDC per GPU-hour × 2 GPUs × 1 node × 600 s\)$/m);
    assert.match(r.out, /^wallet: +100\.000000 USDC available: enough$/m);
    assert.match(r.out, new RegExp(`^price: +${price.replace('.', '\\.')} USDC per GPU-hour \\(the cheapest and the dearest node that fits, as this job would pay there\\)$`, 'm'));
    assert.match(r.out, /^nodes: +2 can take it now, 0 fit but are busy \(of 2\); it needs 1$/m);
    assert.match(r.out, /^wait: +none expected: 2 nodes fit and are free now: a submit is placed in the next scheduling pass/m);
    const json = JSON.parse((await gpux('job', 'submit', '--dry-run', f, '--json')).out) as QuoteJobResponse;
    assert.equal(json.holdTotal, 1 * USDC);
    assert.equal(json.wait.kind, 'now');
    assert.equal((await new GpuxClient({ url: net.url, token: net.buyer }).listJobs()).jobs.length, 0, 'nothing was submitted');
  });

  test('--dry-run: refused by the coordinator as submit would be (exit 2, a bad spec); a gang no fleet holds says never and what to change; --wait is a usage error', async (t) => {
    const dir = tempDir(t);
    const low = await gpux('job', 'submit', '--dry-run', specFile(dir, 'name: cheap\nimage: busybox:1.36\ncommand: [sh]\nresources:\n  gpu:\n    count: 1\nmaxPricePerGpuHour: 0.000001\n'));
    assert.equal(low.code, 2, low.out);
    assert.match(low.err, /below the price floor of every class this job accepts/);
    const gang = await gpux('job', 'submit', '--dry-run', specFile(dir, 'name: big\nimage: busybox:1.36\ncommand: [sh]\nnodes: 3\nresources:\n  gpu:\n    count: 8\ntimeoutSeconds: 600\nmaxPricePerGpuHour: 3 USDC\n'));
    assert.equal(gang.code, 0, gang.err);
    assert.match(gang.out, /^wait: +never, as specified: 2 of the 3 nodes it needs fit, even when idle/m);
    assert.match(gang.out, /^what to change:\n {2}- /m);
    const both = await gpux('job', 'submit', '--dry-run', '--wait', specFile(dir, 'name: x\nimage: busybox:1.36\ncommand: [sh]\n'));
    assert.equal(both.code, 2);
    assert.match(both.err, /--dry-run submits nothing/);
  });

  test('gpux run --dry-run builds the job from flags and quotes it; a plain submit prints what it held', async (t) => {
    const run = await gpux('run', '--dry-run', '--gpus', '1', '--max-price', '3', '--timeout', '3600', 'busybox:1.36', '--', 'nvidia-smi');
    assert.equal(run.code, 0, run.err);
    assert.match(run.out, /^gpux run: a valid job spec "run-busybox"/m);
    assert.match(run.out, /^hold: +3\.000000 USDC in escrow \(cap 3\.000000 USDC per GPU-hour × 1 GPU × 1 node × 3600 s\)$/m);
    const sub = await gpux('job', 'submit', specFile(tempDir(t), 'name: paid\nimage: busybox:1.36\ncommand: ["true"]\nresources:\n  gpu:\n    count: 2\ntimeoutSeconds: 600\nmaxPricePerGpuHour: 3 USDC\n'));
    assert.equal(sub.code, 0, sub.err);
    assert.match(sub.out, /^submitted job job-\S+ \(paid\): queued\nheld 1\.000000 USDC in escrow \(cap 3\.000000 USDC per GPU-hour × 2 GPUs × 1 node × 600 s\)$/m);
  });
});
