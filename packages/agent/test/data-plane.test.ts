/**
 * The agent's data plane (issue 13) against a fake coordinator: blob inputs streamed in (resumed after a cut,
 * refused on a wrong digest or too many bytes), URL inputs only with network, and outputs too large to return
 * inline uploaded in chunks (resumed after a cut) before the result is reported.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { type Assignment, type InputFile, inputRootDigest, parseJobSpec, type ResultReport } from '@gpux/protocol';
import { attemptDataPlane } from '../src/data/attempt-data.js';
import { silentLogger } from '../src/index.js';
import { type AttemptContext, AttemptRunner } from '../src/loop/attempt-runner.js';
import { type DataPlaneFake, nodeOnFake } from './data-plane-fake.js';
import { until } from './fake-coordinator.js';
import { tempDir } from './helpers.js';

const MiB = 1024 * 1024;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function setup(t: { after(fn: () => unknown): void }, o: { allowNetwork?: boolean; urlFetch?: typeof fetch } = {}) {
  return nodeOnFake(t, { prefix: 'gpux-data-plane-', ctx: { allowNetwork: o.allowNetwork === true, ...(o.urlFetch ? { urlFetch: o.urlFetch } : {}) } });
}

function assignment(command: string, inputs: InputFile[], extra: Record<string, unknown> = {}): Assignment {
  const parsed = parseJobSpec({ name: 'data', image: 'busybox', command: ['sh', '-c', command], inputs, timeoutSeconds: 60, ...extra });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return { attemptId: `att_${randomBytes(4).toString('hex')}`, jobId: 'job_data', spec: parsed.spec, gpuIndices: [], leaseExpiresAt: Date.now() + 60_000 };
}

async function run(ctx: AttemptContext, fake: DataPlaneFake, a: Assignment): Promise<ResultReport> {
  await new AttemptRunner(a, ctx).run();
  const r = fake.results.find((x) => x.attemptId === a.attemptId);
  assert.ok(r, 'a result was reported');
  return r.report;
}

test('a blob input is streamed in and resumed after a cut; a large output is uploaded in chunks, resumed after a cut, before the result', async (t) => {
  const { fake, ctx, workRoot } = await setup(t);
  const data = randomBytes(3 * MiB + 123);
  const blob = fake.addBlob(data);
  fake.cutDownloadsAfter = { bytes: MiB, times: 1 };
  fake.cutChunksAfter = { bytes: 10_000, times: 1 };
  fake.chunkBytes = 256 * 1024;
  const a = assignment('sha256sum "$GPUX_INPUTS/data/in.bin" | cut -d" " -f1 > "$GPUX_OUTPUTS/sum.txt" && cp "$GPUX_INPUTS/data/in.bin" "$GPUX_OUTPUTS/copy.bin"', [
    { path: 'data/in.bin', blob, size: data.length },
  ]);
  const report = await run(ctx, fake, a);
  assert.equal(report.outcome, 'succeeded', report.error ?? '');
  assert.equal(fake.rangeRequests.length, 1, 'the cut download resumed with one Range request');
  assert.match(fake.rangeRequests[0] ?? '', /^bytes=\d+-$/);
  const sum = report.outputs?.find((f) => f.path === 'sum.txt');
  assert.equal(Buffer.from(sum?.content ?? '', 'base64').toString().trim(), blob, 'the job read the exact bytes');
  const copy = report.outputs?.find((f) => f.path === 'copy.bin');
  assert.ok(copy && copy.content === undefined, 'the large output is reported without content');
  assert.equal(copy.sha256, blob);
  const up = [...fake.uploads.values()].find((u) => u.path === 'copy.bin');
  assert.ok(up?.done, 'the upload completed');
  assert.ok(up.data.equals(data), 'the uploaded bytes are the output');
  assert.ok(fake.chunkPuts > data.length / fake.chunkBytes, `several chunks, one of them cut (${fake.chunkPuts})`);
  assert.equal(fake.statusReads, 1, 'after the cut the uploader asked the server where to resume');
  assert.equal(report.commitment.inputDigest, inputRootDigest(a.spec.inputs), 'the commitment covers the blob input by its digest');
  assert.deepEqual(fake.badSignatures, []);
  assert.deepEqual(await readdir(workRoot), [], 'the work dir is gone');
});

test('a server that ignores the Range of a resumed download: the input restarts from byte 0 and is still exact', async (t) => {
  const { fake, ctx } = await setup(t);
  const data = randomBytes(2 * MiB);
  const blob = fake.addBlob(data);
  fake.cutDownloadsAfter = { bytes: MiB, times: 1 };
  fake.ignoreRange = true;
  const report = await run(ctx, fake, assignment('sha256sum "$GPUX_INPUTS/in.bin" | cut -d" " -f1 > "$GPUX_OUTPUTS/sum.txt"', [{ path: 'in.bin', blob, size: data.length }]));
  assert.equal(report.outcome, 'succeeded', report.error ?? '');
  assert.equal(Buffer.from(report.outputs?.[0]?.content ?? '', 'base64').toString().trim(), blob);
});

test('bytes with the wrong digest fail the attempt before the job runs, and the file is removed', async (t) => {
  const { fake, ctx, workRoot } = await setup(t);
  const data = randomBytes(512 * 1024);
  const claimed = sha(Buffer.from('something else'));
  fake.blobs.set(claimed, data);
  const report = await run(ctx, fake, assignment('touch "$GPUX_OUTPUTS/ran"', [{ path: 'in.bin', blob: claimed, size: data.length }]));
  assert.equal(report.outcome, 'failed');
  assert.match(report.error ?? '', /input "in\.bin" .*hash to sha256 [0-9a-f]{64}, not the declared/);
  assert.deepEqual(report.outputs, [], 'the job never ran');
  assert.deepEqual(await readdir(workRoot), [], 'nothing is left on disk');
});

test('more bytes than the declared size are refused', async (t) => {
  const { fake, ctx, workRoot } = await setup(t);
  const data = randomBytes(300 * 1024);
  const blob = fake.addBlob(data);
  const report = await run(ctx, fake, assignment('true', [{ path: 'in.bin', blob, size: 1000 }]));
  assert.equal(report.outcome, 'failed');
  assert.match(report.error ?? '', /more than the declared size of 1000 bytes/);
  assert.deepEqual(await readdir(workRoot), []);
});

test('a missing blob fails the attempt at once with the coordinator\'s answer', async (t) => {
  const { fake, ctx } = await setup(t);
  const report = await run(ctx, fake, assignment('true', [{ path: 'in.bin', blob: sha(Buffer.from('x')), size: 1 }]));
  assert.equal(report.outcome, 'failed');
  assert.match(report.error ?? '', /input "in\.bin".*no such input/);
});

test('a cancel while an input is downloading stops the download; the attempt is reported cancelled and nothing is left', async (t) => {
  const { fake, ctx, workRoot } = await setup(t);
  const data = randomBytes(2 * MiB);
  const blob = fake.addBlob(data);
  fake.stallDownloadsAfter = 100_000;
  const a = assignment('touch "$GPUX_OUTPUTS/ran"', [{ path: 'in.bin', blob, size: data.length }]);
  const runner = new AttemptRunner(a, ctx);
  const done = runner.run();
  await until('the download to start', () => (readdirSync(workRoot).length > 0 ? true : undefined));
  runner.stop('cancelled');
  await done;
  const report = fake.results.find((x) => x.attemptId === a.attemptId)?.report;
  assert.equal(report?.outcome, 'cancelled', report?.error ?? '');
  assert.deepEqual(await readdir(workRoot), []);
});

const urlInput = (data: Buffer, url = 'https://data.example/in.bin'): InputFile => ({ path: 'in.bin', url, sha256: sha(data), size: data.length });

test('a URL input is refused on a node that does not allow network, saying so', async (t) => {
  let fetched = 0;
  const { fake, ctx } = await setup(t, { urlFetch: async () => {
      fetched++;
      return new Response('x');
    },
  });
  const report = await run(ctx, fake, assignment('true', [urlInput(Buffer.from('x'))], { network: true }));
  assert.equal(report.outcome, 'failed');
  assert.match(report.error ?? '', /does not allow network.*--allow-network/);
  assert.equal(fetched, 0);
});

test('a URL input is fetched over https with bounded redirects, size and digest checked', async (t) => {
  const data = randomBytes(100_000);
  const seen: string[] = [];
  const urlFetch = (async (url: string | URL | Request) => {
    seen.push(String(url));
    const u = new URL(String(url)).pathname;
    if (u.endsWith('/loop')) return new Response(null, { status: 302, headers: { location: '/loop' } });
    if (u.endsWith('/plain')) return new Response(null, { status: 301, headers: { location: 'http://data.example/x' } });
    if (u.endsWith('/moved')) return new Response(null, { status: 302, headers: { location: '/in.bin' } });
    return new Response(data, { headers: { 'content-length': String(data.length) } });
  }) as typeof fetch;
  const { fake, ctx } = await setup(t, { allowNetwork: true, urlFetch });
  const ok = await run(ctx, fake, assignment('sha256sum "$GPUX_INPUTS/in.bin" | cut -d" " -f1 > "$GPUX_OUTPUTS/sum.txt"', [urlInput(data, 'https://data.example/moved?sig=secret')], { network: true }));
  assert.equal(ok.outcome, 'succeeded', ok.error ?? '');
  assert.equal(Buffer.from(ok.outputs?.[0]?.content ?? '', 'base64').toString().trim(), sha(data));
  assert.deepEqual(seen, ['https://data.example/moved?sig=secret', 'https://data.example/in.bin']);

  const loop = await run(ctx, fake, assignment('true', [urlInput(data, 'https://data.example/loop')], { network: true }));
  assert.match(loop.error ?? '', /more than 5 redirects/);
  const plain = await run(ctx, fake, assignment('true', [urlInput(data, 'https://data.example/plain')], { network: true }));
  assert.match(plain.error ?? '', /redirects to http: \(only https is followed\)/);
  const short = await run(ctx, fake, assignment('true', [{ ...urlInput(data), size: 10 } as InputFile], { network: true }));
  assert.match(short.error ?? '', /more than the declared size of 10 bytes/);
  assert.doesNotMatch(`${loop.error} ${plain.error}`, /secret/, 'query strings (credentials) stay out of messages');
});

test('an output the coordinator already holds is not sent again', async (t) => {
  const { fake, client } = await setup(t);
  const dir = await tempDir(t);
  const data = randomBytes(2 * MiB);
  const { writeFile } = await import('node:fs/promises');
  await writeFile(join(dir, 'big.bin'), data);
  fake.stored.add(sha(data));
  const plane = attemptDataPlane({ client, attemptId: 'att_1', jobNetwork: false, nodeAllowsNetwork: false, signal: new AbortController().signal, logger: silentLogger });
  const summary = await plane.uploadOutputs(dir, [{ path: 'big.bin', size: data.length, sha256: sha(data) }]);
  assert.deepEqual(summary, { uploaded: ['big.bin'], failed: [] });
  assert.equal(fake.chunkPuts, 0);
});

test('an upload that keeps failing is logged and left out; the result is still reported', async (t) => {
  const { fake, ctx } = await setup(t);
  fake.cutChunksAfter = { bytes: 1000, times: 1000 };
  const report = await run(ctx, fake, assignment('head -c 2000000 /dev/zero > "$GPUX_OUTPUTS/big.bin"', []));
  assert.equal(report.outcome, 'succeeded');
  const big = report.outputs?.find((f) => f.path === 'big.bin');
  assert.ok(big && big.content === undefined && big.size === 2_000_000, 'reported with its digest, without its bytes');
  assert.equal([...fake.uploads.values()][0]?.done, false);
});
