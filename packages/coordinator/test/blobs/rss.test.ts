/**
 * 128 MiB (two 64 MiB upload chunks) up and down through the blob API keeps memory flat: the coordinator streams chunks to disk and
 * blobs back out, the SDK streams from and to files. Coordinator and client share this process, so the bound
 * covers both. Garbage is collected every 50 ms, so the figures are not the collector's lag. Live memory (heap +
 * buffers) once rose by a whole 64 MiB chunk per upload PUT: undici's fetch tees a request body to replay it on
 * a redirect and keeps the copy to the end of the request, so the SDK sends chunks with `redirect: 'error'`.
 * Measured since: 20 to 26 MiB of growth (RSS and live; buffers freed by the collector leave the count a little
 * later), whatever the chunk size; the bounds (RSS < 64 MiB, live < 40 MiB) leave room for that and still fail
 * if a 64 MiB chunk is held again.
 */
import assert from 'node:assert/strict';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { blobsOf, GpuxClient, hashFile } from '@gpux/sdk';
import { seededBytes } from '@gpux/testing';
import { type Harness, startHarness } from '../helpers.js';

const MiB = 2 ** 20;
/** Two 64 MiB upload chunks, twice the RSS bound: a chunk or the whole blob held in memory would show. */
const BLOB_MIB = 128;
// A collector to call, so live memory is measured apart from garbage not yet collected.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const live = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};
let h: Harness;
before(async () => {
  h = await startHarness();
});
after(async () => {
  await h?.close();
});

async function writeFile(path: string, mib: number): Promise<void> {
  const out = createWriteStream(path);
  const block = seededBytes(MiB, 42);
  for (let i = 0; i < mib; i++) {
    block[0] = i & 0xff; // no two MiB alike
    if (!out.write(block)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
}

test('a 128 MiB upload and download keep RSS roughly flat', async (t) => {
  const blobs = blobsOf(new GpuxClient({ url: h.url, token: await h.buyer(), timeoutMs: 120_000 }));
  const warm = join(h.dir, 'warm.bin');
  await writeFile(warm, 2);
  await blobs.downloadToFile((await blobs.uploadFile(warm)).sha256, join(h.dir, 'warm.out'));
  const input = join(h.dir, 'big.bin');
  await writeFile(input, BLOB_MIB);
  gc();
  const base = process.memoryUsage().rss;
  const liveBase = live();
  let peak = base;
  let livePeak = liveBase;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
    gc();
    livePeak = Math.max(livePeak, live());
  }, 50);
  try {
    const view = await blobs.uploadFile(input);
    assert.equal(view.size, BLOB_MIB * MiB);
    const got = await blobs.downloadToFile(view.sha256, join(h.dir, 'big.out'));
    assert.equal(got.sha256, (await hashFile(input)).sha256);
  } finally {
    clearInterval(sampler);
  }
  const growth = (peak - base) / MiB;
  const liveGrowth = (livePeak - liveBase) / MiB;
  t.diagnostic(`RSS before ${(base / MiB).toFixed(0)} MiB, peak ${(peak / MiB).toFixed(0)} MiB, growth ${growth.toFixed(1)} MiB; live (heap + buffers) growth ${liveGrowth.toFixed(1)} MiB`);
  // Well below one 64 MiB chunk, never near the 128 MiB blob (see the file comment).
  assert.ok(growth < 64, `RSS grew ${growth.toFixed(1)} MiB moving ${2 * BLOB_MIB} MiB`);
  assert.ok(liveGrowth < 40, `live memory grew ${liveGrowth.toFixed(1)} MiB (a 64 MiB upload chunk held whole would show here)`);
});
