/**
 * End-to-end encryption, the proof (issue 13), with the real CLI as the buyer, a real coordinator and real agents
 * as processes:
 * - a 200 MiB input whose plaintext holds a random marker at known offsets goes through `gpux job submit` of an
 *   `encrypted: true` spec (with --wait, which releases the data key to the assigned node) into a Docker container
 *   that copies it to its outputs and prints the marker; `gpux job result --out` decrypts the output, bytes equal,
 *   and `gpux job logs` decrypts the marker line. Then the coordinator's data dir (database files with the WAL,
 *   the blob store) and its whole stdout/stderr contain neither the marker nor the data key (base64 or hex).
 * - an encrypted job's retry on another node: the first node's agent is SIGKILLed mid-job; the retry on a second
 *   node gets its own key release from the buyer's client and succeeds.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { describe, test } from 'node:test';
import { issueToken, openStore } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { GpuxClient } from '@gpux/sdk';
import { buildBusyboxImage, requireDocker, TEST_IMAGE } from '../src/docker.js';
import { FAST_TIMING_ENV, freePort, type GpuxProcess, spawnGpux, waitFor, testRandom } from '../src/processes.js';
import { tempDir } from '../src/temp-dir.js';

const MiB = 1024 * 1024;
const BIG = 200 * MiB;
/** The marker is at the start of every MARK_EVERY bytes of the input. */
const MARK_EVERY = 16 * MiB;
const random = testRandom;
const env = { ...FAST_TIMING_ENV, GPUX_LOG_LEVEL: 'info', GPUX_MARKET: 'off' };

/** `size` random bytes with `marker` at each multiple of MARK_EVERY, written in 1 MiB pieces; their sha256. */
async function writeMarkedFile(path: string, size: number, marker: string): Promise<string> {
  const hash = createHash('sha256');
  const out = createWriteStream(path);
  for (let done = 0; done < size; done += MiB) {
    const piece = randomBytes(Math.min(MiB, size - done));
    if (done % MARK_EVERY === 0) piece.write(marker, 0, 'latin1');
    hash.update(piece);
    if (!out.write(piece)) await new Promise<void>((r) => out.once('drain', () => r()));
  }
  out.end();
  await finished(out);
  return hash.digest('hex');
}

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const c of createReadStream(path)) hash.update(c as Buffer);
  return hash.digest('hex');
}

/** The needles found in the file, streamed (a needle across two reads is found too). */
async function needlesIn(path: string, needles: readonly Buffer[]): Promise<number[]> {
  const keep = Math.max(...needles.map((n) => n.length)) - 1;
  const found = new Set<number>();
  let tail = Buffer.alloc(0);
  for await (const c of createReadStream(path, { highWaterMark: 4 * MiB })) {
    const buf = Buffer.concat([tail, c as Buffer]);
    needles.forEach((n, i) => {
      if (buf.includes(n)) found.add(i);
    });
    tail = buf.subarray(Math.max(0, buf.length - keep));
  }
  return [...found];
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

async function cli(args: string[], extraEnv: NodeJS.ProcessEnv, timeoutMs = 300_000): Promise<{ code: number; out: string }> {
  const p = spawnGpux(args, { ...env, ...extraEnv });
  const code = await waitFor(`gpux ${args.slice(0, 2).join(' ')} to exit`, () => p.child.exitCode ?? undefined, timeoutMs);
  return { code, out: p.output() };
}

/** A coordinator with an operator (its enrollment token) and a buyer, as processes under `dir`. */
async function cluster(dir: string, procs: GpuxProcess[]) {
  const dataDir = join(dir, 'coord');
  const db = `sqlite:${join(dataDir, 'coordinator.db')}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const coordinator = spawnGpux(['coordinator', 'start', '--db', db, '--port', String(port), '--data-dir', dataDir], { ...env, GPUX_HOME: join(dir, 'coord-home') });
  procs.push(coordinator);
  await waitFor('coordinator ready', async () => ((await fetch(`${url}/readyz`).catch(() => null))?.ok ? true : undefined), 60_000);
  const store = await openStore(db);
  const operator = (await issueToken(store, { role: 'operator', name: 'e2e-enc' }, systemClock, random)).token;
  const buyerToken = (await issueToken(store, { role: 'buyer', name: 'e2e-enc-buyer' }, systemClock, random)).token;
  await store.close();
  const enrollment = (await new GpuxClient({ url, token: operator }).createEnrollment({ name: 'nodes' })).token;
  const buyerEnv = { GPUX_HOME: join(dir, 'buyer-home'), GPUX_URL: url, GPUX_TOKEN: buyerToken };
  const node = (name: string, executor: 'docker' | 'process') => {
    const p = spawnGpux(
      ['node', 'start', '--coordinator', url, '--enrollment-token', enrollment, '--executor', executor, ...(executor === 'process' ? ['--allow-unsafe-process'] : []), '--data-dir', join(dir, name), '--name', name],
      { ...env, GPUX_HOME: join(dir, `${name}-home`) },
    );
    procs.push(p);
    return p;
  };
  const online = (n: number) =>
    waitFor(`${n} node(s) online`, async () => ((await new GpuxClient({ url, token: operator }).listNodes({ status: 'online' })).nodes.length === n ? true : undefined), 60_000);
  const created = await cli(['keys', 'create'], buyerEnv);
  assert.equal(created.code, 0, created.out);
  return { url, dataDir, coordinator, buyerEnv, buyer: new GpuxClient({ url, token: buyerToken }), node, online };
}

describe('end-to-end encryption (real CLI, coordinator, agents; Docker for the proof)', () => {
  test('200 MiB encrypted through a real container: outputs and logs decrypt for the buyer; the coordinator holds neither the plaintext nor the key', { ...requireDocker(), timeout: 600_000 }, async (t) => {
    await buildBusyboxImage();
    const dir = tempDir('gpux-e2e-enc');
    const procs: GpuxProcess[] = [];
    try {
      const c = await cluster(dir.path, procs);
      c.node('docker-node', 'docker');
      await c.online(1);

      const marker = randomBytes(16).toString('hex'); // 32 characters
      const big = join(dir.path, 'big.bin');
      const began = Date.now();
      const bigSha = await writeMarkedFile(big, BIG, marker);
      const specFile = join(dir.path, 'job.json');
      writeFileSync(
        specFile,
        JSON.stringify({
          name: 'e2e-encryption',
          image: TEST_IMAGE,
          command: ['sh', '-c', 'cat "$GPUX_INPUTS/data/big.bin" > "$GPUX_OUTPUTS/copy.bin" && echo "marker: $(head -c 32 "$GPUX_INPUTS/data/big.bin")"'],
          inputs: [{ path: 'data/big.bin', file: './big.bin' }],
          encrypted: true,
          resources: { gpu: { count: 0 }, cpuCores: 1, memoryGb: 1 },
          timeoutSeconds: 300,
        }),
      );
      const submitted = await cli(['job', 'submit', specFile, '--wait', '--json'], c.buyerEnv, 420_000);
      assert.equal(submitted.code, 0, `${submitted.out}\n--- agent ---\n${procs[1]?.output().slice(-4000)}`);
      const jobId = (JSON.parse(submitted.out.slice(submitted.out.indexOf('{'))) as { job: { id: string } }).job.id;
      const ran = Date.now();

      const outDir = join(dir.path, 'out');
      const result = await cli(['job', 'result', jobId, '--out', outDir], c.buyerEnv);
      assert.equal(result.code, 0, result.out);
      assert.equal(statSync(join(outDir, 'copy.bin')).size, BIG);
      assert.equal(await sha256File(join(outDir, 'copy.bin')), bigSha, 'the decrypted output has the bytes of the input');
      const res = await c.buyer.jobResult(jobId);
      const copy = res.outputs.find((o) => o.path === 'copy.bin');
      assert.equal(copy?.blob, true, 'uploaded to the blob store');
      assert.deepEqual(copy?.encrypted, { sha256: bigSha, size: BIG }, 'the plaintext digest the commitment covers');
      assert.notEqual(copy?.sha256, bigSha, 'the blob is ciphertext');

      const logs = await cli(['job', 'logs', jobId], c.buyerEnv);
      assert.equal(logs.code, 0, logs.out);
      assert.ok(logs.out.includes(`marker: ${marker}`), `the CLI decrypts the log line: ${logs.out.slice(-2000)}`);
      const took = Date.now();

      // What the coordinator kept: database files (with -wal, -shm), the blob store, and everything it printed.
      const kept = JSON.parse(readFileSync(join(dir.path, 'buyer-home', 'e2e-jobs', `${jobId}.json`), 'utf8')) as { dataKey: string };
      const needles = [Buffer.from(marker), Buffer.from(kept.dataKey), Buffer.from(Buffer.from(kept.dataKey, 'base64').toString('hex'))];
      assert.deepEqual(await needlesIn(big, needles), [0], 'the search finds the marker in the plaintext');
      const files = filesUnder(c.dataDir);
      assert.ok(files.some((f) => f.endsWith('-wal')), `the WAL is searched too: ${files.join(', ')}`);
      assert.ok(files.filter((f) => statSync(f).size >= BIG).length >= 2, 'the blob store holds the input and output ciphertexts');
      for (const f of files) assert.deepEqual(await needlesIn(f, needles), [], `${f} holds the marker or the data key`);
      const printed = Buffer.from(c.coordinator.output());
      assert.ok(printed.length > 0);
      assert.ok(!needles.some((n) => printed.includes(n)), 'the coordinator never printed the marker or the data key');
      t.diagnostic(`200 MiB: written in ${Math.round((ran - began) / 1000)} s incl. the job; result and logs ${Math.round((took - ran) / 1000)} s; ${files.length} coordinator files searched`);
    } finally {
      for (const p of procs.reverse()) await p.stop();
      await dir.cleanup();
    }
  });

  test("an encrypted job's retry on another node gets its own key release and succeeds", { timeout: 180_000 }, async () => {
    const dir = tempDir('gpux-e2e-enc-retry');
    const procs: GpuxProcess[] = [];
    try {
      const c = await cluster(dir.path, procs);
      const first = c.node('node-a', 'process');
      await c.online(1);
      const input = randomBytes(4 * MiB);
      writeFileSync(join(dir.path, 'in.bin'), input);
      const specFile = join(dir.path, 'job.json');
      // The job stops when its agent is gone ($PPID), as it would with the machine.
      const cmd = 'echo started; i=0; while [ $i -lt 8 ]; do sleep 1; kill -0 "$PPID" 2>/dev/null || exit 3; i=$((i+1)); done; cp "$GPUX_INPUTS/in.bin" "$GPUX_OUTPUTS/out.bin"';
      writeFileSync(specFile, JSON.stringify({ name: 'e2e-retry', image: 'busybox', command: ['sh', '-c', cmd], inputs: [{ path: 'in.bin', file: './in.bin' }], encrypted: true, maxRetries: 3, resources: { gpu: { count: 0 }, cpuCores: 1 }, timeoutSeconds: 120 }));
      const submit = spawnGpux(['job', 'submit', specFile, '--wait', '--json'], { ...env, ...c.buyerEnv });
      procs.push(submit);
      const jobId = await waitFor('the job submitted', async () => {
        const page = await c.buyer.listJobs({});
        return page.jobs[0]?.id;
      });
      await waitFor('the first attempt running', async () => ((await c.buyer.getJob(jobId)).attempts[0]?.state === 'running' ? true : undefined), 60_000);
      await first.stop('SIGKILL');
      c.node('node-b', 'process');
      const code = await waitFor('the submit --wait to end', () => submit.child.exitCode ?? undefined, 120_000);
      const done = await c.buyer.getJob(jobId);
      assert.equal(code, 0, `${submit.output()}\n${JSON.stringify(done.attempts)}`);
      assert.equal(done.job.state, 'succeeded');
      assert.deepEqual(
        done.attempts.map((a) => a.state),
        ['lost', 'succeeded'],
      );
      const [lost, retry] = done.attempts;
      assert.notEqual(lost?.nodeId, retry?.nodeId);
      for (const a of done.attempts) assert.match(submit.output(), new RegExp(`released the data key to node ${a.nodeId}`), 'a release per attempt');
      const out = join(dir.path, 'out');
      const res = await cli(['job', 'result', jobId, '--out', out], c.buyerEnv);
      assert.equal(res.code, 0, res.out);
      assert.deepEqual(readFileSync(join(out, 'out.bin')), input);
    } finally {
      for (const p of procs.reverse()) await p.stop();
      await dir.cleanup();
    }
  });
});
