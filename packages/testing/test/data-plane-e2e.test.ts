/**
 * The data plane end to end (issue 13), with the real CLI as processes and a real Docker container: `gpux blob put`
 * of a 200 MiB file; a job whose spec names it as a {path, blob} input and a small local file as {path, file}
 * (uploaded by `gpux job submit`); the container copies the big input to its outputs, writes a variant of it (so
 * one output is new to the blob store and really uploaded, the other is deduplicated) and a marker; the agent
 * streams the input in and the outputs up; `gpux job result --out` streams them back with every digest checked.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, writeFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { describe, test } from 'node:test';
import { issueToken, openStore } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { downloadJobOutputs, GpuxClient } from '@gpux/sdk';
import { buildBusyboxImage, requireDocker, TEST_IMAGE } from '../src/docker.js';
import { freePort, type GpuxProcess, spawnGpux, waitFor, testRandom } from '../src/processes.js';
import { tempDir } from '../src/temp-dir.js';

const MiB = 1024 * 1024;
const BIG = 200 * MiB;
const random = testRandom;
const env = { GPUX_HEARTBEAT_MS: '500', GPUX_SCHEDULE_PASS_MS: '100', GPUX_LOG_LEVEL: 'info', GPUX_MARKET: 'off' };

/** Writes `size` random bytes in 1 MiB pieces (never all in memory) and returns their sha256. */
async function writeRandomFile(path: string, size: number): Promise<string> {
  const hash = createHash('sha256');
  const out = createWriteStream(path);
  for (let done = 0; done < size; done += MiB) {
    const piece = randomBytes(Math.min(MiB, size - done));
    hash.update(piece);
    if (!out.write(piece)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  out.end();
  await finished(out);
  return hash.digest('hex');
}

async function sha256File(path: string, extra = ''): Promise<string> {
  const hash = createHash('sha256');
  for await (const c of createReadStream(path)) hash.update(c as Buffer);
  return hash.update(extra).digest('hex');
}

/** Runs the CLI to its exit; its output and exit code. */
async function cli(args: string[], extraEnv: NodeJS.ProcessEnv = {}, timeoutMs = 300_000): Promise<{ code: number; out: string }> {
  const p = spawnGpux(args, { ...env, ...extraEnv });
  const code = await waitFor(`gpux ${args.slice(0, 2).join(' ')} to exit`, () => p.child.exitCode ?? undefined, timeoutMs);
  return { code, out: p.output() };
}

describe('the data plane end to end (real CLI, coordinator, agent and Docker container)', requireDocker(), () => {
  test('a 200 MiB blob input in, two 200 MiB outputs and a marker back, every digest checked', { timeout: 600_000 }, async () => {
    await buildBusyboxImage();
    const dir = tempDir('gpux-data-e2e');
    const dataDir = join(dir.path, 'coord');
    const db = `sqlite:${join(dataDir, 'coordinator.db')}`;
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const procs: GpuxProcess[] = [];
    try {
      procs.push(spawnGpux(['coordinator', 'start', '--db', db, '--port', String(port), '--data-dir', dataDir], { ...env, GPUX_HOME: join(dir.path, 'coord-home') }));
      await waitFor('coordinator ready', async () => ((await fetch(`${url}/readyz`).catch(() => null))?.ok ? true : undefined), 60_000);
      const store = await openStore(db);
      const operator = (await issueToken(store, { role: 'operator', name: 'data-e2e' }, systemClock, random)).token;
      const buyer = (await issueToken(store, { role: 'buyer', name: 'data-e2e-buyer' }, systemClock, random)).token;
      await store.close();
      const enrollment = (await new GpuxClient({ url, token: operator }).createEnrollment({ name: 'nodes' })).token;
      procs.push(
        spawnGpux(['node', 'start', '--coordinator', url, '--enrollment-token', enrollment, '--executor', 'docker', '--data-dir', join(dir.path, 'node'), '--name', 'data-node'], {
          ...env,
          GPUX_HOME: join(dir.path, 'node-home'),
        }),
      );
      const buyerEnv = { GPUX_HOME: join(dir.path, 'buyer-home'), GPUX_URL: url, GPUX_TOKEN: buyer };

      const big = join(dir.path, 'big.bin');
      const bigSha = await writeRandomFile(big, BIG);
      const put = await cli(['blob', 'put', big, '--json'], buyerEnv);
      assert.equal(put.code, 0, put.out);
      assert.equal(JSON.parse(put.out).sha256, bigSha);

      const marker = `marker ${randomBytes(8).toString('hex')}\n`;
      writeFileSync(join(dir.path, 'note.txt'), marker);
      const specFile = join(dir.path, 'job.json');
      writeFileSync(
        specFile,
        JSON.stringify({
          name: 'data-plane-e2e',
          image: TEST_IMAGE,
          command: ['sh', '-c', 'cat "$GPUX_INPUTS/data/big.bin" > "$GPUX_OUTPUTS/copy.bin" && cat "$GPUX_INPUTS/data/big.bin" "$GPUX_INPUTS/note.txt" > "$GPUX_OUTPUTS/variant.bin" && cat "$GPUX_INPUTS/note.txt" > "$GPUX_OUTPUTS/marker.txt"'],
          inputs: [
            { path: 'data/big.bin', blob: bigSha, size: BIG },
            { path: 'note.txt', file: './note.txt' },
          ],
          resources: { gpu: { count: 0 }, cpuCores: 1, memoryGb: 1 },
          timeoutSeconds: 300,
        }),
      );
      const submitted = await cli(['job', 'submit', specFile, '--wait', '--json'], buyerEnv, 420_000);
      assert.equal(submitted.code, 0, `${submitted.out}\n--- agent ---\n${procs[1]?.output().slice(-4000)}`);
      const jobId = (JSON.parse(submitted.out) as { job: { id: string; state: string } }).job.id;

      const outDir = join(dir.path, 'out');
      const result = await cli(['job', 'result', jobId, '--out', outDir, '--json'], buyerEnv);
      assert.equal(result.code, 0, result.out);
      const res = JSON.parse(result.out) as { outputs: { path: string; size: number; sha256: string; blob?: boolean; content?: string }[]; written: { path: string }[] };
      const byPath = new Map(res.outputs.map((o) => [o.path, o]));
      assert.equal(byPath.get('copy.bin')?.blob, true, 'the copy is in the blob store');
      assert.equal(byPath.get('variant.bin')?.blob, true, 'the variant was uploaded to the blob store');
      assert.ok(byPath.get('marker.txt')?.content !== undefined, 'the marker came back inline');
      assert.deepEqual(res.written.map((w) => w.path).sort(), ['copy.bin', 'marker.txt', 'variant.bin']);

      assert.equal((await stat(join(outDir, 'copy.bin'))).size, BIG);
      assert.equal(await sha256File(join(outDir, 'copy.bin')), bigSha, 'the copy has the bytes of the input');
      assert.equal(await sha256File(join(outDir, 'variant.bin')), await sha256File(big, marker), 'the variant is the input and the marker');
      assert.equal(await sha256File(join(outDir, 'marker.txt')), createHash('sha256').update(marker).digest('hex'));

      // The SDK's helper does the same.
      const sdkOut = join(dir.path, 'sdk-out');
      const got = await downloadJobOutputs(new GpuxClient({ url, token: buyer }), jobId, sdkOut);
      assert.deepEqual(got.missing, []);
      assert.deepEqual(got.written.map((w) => `${w.path}:${w.from}`).sort(), ['copy.bin:blob', 'marker.txt:inline', 'variant.bin:blob']);
      assert.equal(await sha256File(join(sdkOut, 'variant.bin')), byPath.get('variant.bin')?.sha256);
    } finally {
      for (const p of procs.reverse()) await p.stop();
      await dir.cleanup();
    }
  });
});
