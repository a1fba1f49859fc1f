/**
 * Checkpoints on the agent (issue 13) against a fake coordinator: the checkpoints dir is archived and uploaded
 * periodically only when it changed, once more when the attempt is stopped (before the result), a retry's
 * checkpoint is restored before the program starts, and hostile archives are refused before a byte is written.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, test } from 'node:test';
import { type Assignment, parseJobSpec, type ResultReport } from '@gpux/protocol';
import { buildBusyboxImage, requireDocker, TEST_IMAGE } from '@gpux/testing';
import { Header } from 'tar';
import { extractArchive, writeArchive } from '../src/data/checkpoint-archive.js';
import { DockerExecutor, } from '../src/index.js';
import { type AttemptContext, AttemptRunner } from '../src/loop/attempt-runner.js';
import { type DataPlaneFake, nodeOnFake } from './data-plane-fake.js';
import { until } from './fake-coordinator.js';
import { tempDir } from './helpers.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const LIMITS = { maxBytes: 1024 * 1024, maxEntries: 100 };

async function setup(t: { after(fn: () => unknown): void }, checkpointEveryMs = 100) {
  const { fake, ctx, workRoot } = await nodeOnFake(t, { prefix: 'gpux-checkpoints-', killGraceMs: 2000, ctx: { transfer: { retryDelayMs: 10, checkpointEveryMs } } });
  return { fake, ctx, workRoot };
}

function assignment(command: string, checkpoint?: Assignment['checkpoint'], image = 'busybox'): Assignment {
  const parsed = parseJobSpec({ name: 'ckpt', image, command: ['sh', '-c', command], timeoutSeconds: 60, checkpoint: { everySeconds: 10 }, resources: { gpu: { count: 0 } } });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
  return {
    attemptId: `att_${randomBytes(4).toString('hex')}`,
    jobId: 'job_ckpt',
    spec: parsed.spec,
    gpuIndices: [],
    leaseExpiresAt: Date.now() + 60_000,
    ...(checkpoint ? { checkpoint } : {}),
  };
}

async function run(ctx: AttemptContext, fake: DataPlaneFake, a: Assignment): Promise<ResultReport> {
  await new AttemptRunner(a, ctx).run();
  const r = fake.results.find((x) => x.attemptId === a.attemptId);
  assert.ok(r, 'a result was reported');
  return r.report;
}

/** The files of an archive, extracted into a fresh dir: path → content. */
async function filesOf(t: { after(fn: () => unknown): void }, archive: Buffer): Promise<Record<string, string>> {
  const dir = await tempDir(t, 'gpux-ckpt-read-');
  await writeFile(join(dir, 'a.tar'), archive);
  await mkdir(join(dir, 'x'));
  await extractArchive(join(dir, 'a.tar'), join(dir, 'x'), LIMITS, 'test');
  const out: Record<string, string> = {};
  const walk = async (rel: string) => {
    for (const e of await readdir(join(dir, 'x', rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) await walk(p);
      else out[p] = await readFile(join(dir, 'x', p), 'utf8');
    }
  };
  await walk('');
  return out;
}

/** A tar built by hand, entry by entry, so it can say what node-tar would never write. */
function rawTar(entries: { path: string; type?: 'File' | 'Directory' | 'SymbolicLink' | 'Link' | 'FIFO'; body?: string; linkpath?: string }[]): Buffer {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const body = Buffer.from(e.body ?? '');
    const block = Buffer.alloc(512);
    new Header({ path: e.path, type: e.type ?? 'File', size: body.length, mode: e.type === 'Directory' ? 0o755 : 0o644, mtime: new Date(0), ...(e.linkpath ? { linkpath: e.linkpath } : {}) }).encode(block, 0);
    blocks.push(block, body, Buffer.alloc((512 - (body.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

async function archiveOf(t: { after(fn: () => unknown): void }, files: Record<string, string>): Promise<Buffer> {
  const dir = await tempDir(t, 'gpux-ckpt-src-');
  for (const [p, content] of Object.entries(files)) {
    await mkdir(join(dir, 'src', p, '..'), { recursive: true });
    await writeFile(join(dir, 'src', p), content);
  }
  await mkdir(join(dir, 'src'), { recursive: true });
  await writeArchive(join(dir, 'src'), join(dir, 'a.tar'), LIMITS);
  return readFile(join(dir, 'a.tar'));
}

const refOf = (archive: Buffer): NonNullable<Assignment['checkpoint']> => ({ sha256: sha(archive), size: archive.length, attemptId: 'att_before', createdAt: 1 });

test('the dir is uploaded at each tick only when it changed; the last state after the exit; never two at once', async (t) => {
  const { fake, ctx } = await setup(t);
  // State 1, several ticks, state 2, several ticks, exit: exactly two uploads.
  const a = assignment('echo 1 > "$GPUX_CHECKPOINTS/n" && sleep 1 && mkdir "$GPUX_CHECKPOINTS/sub" && echo 2 > "$GPUX_CHECKPOINTS/sub/n" && sleep 1');
  const report = await run(ctx, fake, a);
  assert.equal(report.outcome, 'succeeded', report.error ?? '');
  assert.equal(fake.checkpoints.length, 2, `uploads: ${fake.checkpoints.map((c) => c.sha256.slice(0, 8)).join(', ')}`);
  assert.deepEqual(await filesOf(t, fake.checkpoints[0]?.data ?? Buffer.alloc(0)), { n: '1\n' });
  assert.deepEqual(await filesOf(t, fake.checkpoints[1]?.data ?? Buffer.alloc(0)), { n: '1\n', 'sub/n': '2\n' });
  assert.ok(fake.checkpoints.every((c) => c.attemptId === a.attemptId));
  assert.equal([...fake.uploads.values()].filter((u) => u.kind === 'checkpoint' && !u.done).length, 0, 'no upload left open: one at a time, each finished');
});

test('nothing written, nothing uploaded; a program that writes only at the end still leaves its state', async (t) => {
  const { fake, ctx } = await setup(t, 60_000);
  const none = await run(ctx, fake, assignment('sleep 0.3'));
  assert.equal(none.outcome, 'succeeded');
  assert.equal(fake.checkpoints.length, 0);
  const late = await run(ctx, fake, assignment('echo done > "$GPUX_CHECKPOINTS/state"'));
  assert.equal(late.outcome, 'succeeded');
  assert.equal(fake.checkpoints.length, 1, 'uploaded once after the exit, before the result');
  assert.deepEqual(fake.order.slice(-2), [`checkpoint ${fake.checkpoints[0]?.sha256}`, `result ${fake.results.at(-1)?.attemptId}`]);
});

test('the assigned checkpoint is restored before the program starts; unchanged, it is not uploaded again', async (t) => {
  const { fake, ctx } = await setup(t);
  const archive = await archiveOf(t, { n: '7\n', 'deep/dir/state.bin': 'abc' });
  fake.checkpoint = archive;
  const a = assignment('cat "$GPUX_CHECKPOINTS/n" > "$GPUX_OUTPUTS/n" && cat "$GPUX_CHECKPOINTS/deep/dir/state.bin" > "$GPUX_OUTPUTS/state" && sleep 0.5', refOf(archive));
  const report = await run(ctx, fake, a);
  assert.equal(report.outcome, 'succeeded', report.error ?? '');
  const out = Object.fromEntries((report.outputs ?? []).map((f) => [f.path, Buffer.from(f.content ?? '', 'base64').toString()]));
  assert.deepEqual(out, { n: '7\n', state: 'abc' });
  assert.equal(fake.checkpoints.length, 0, 'the restored state hashes as it came: nothing to upload');
});

test('a checkpoint whose bytes do not match the sealed digest fails the attempt before the program runs', async (t) => {
  const { fake, ctx, workRoot } = await setup(t);
  const archive = await archiveOf(t, { n: '7\n' });
  fake.checkpoint = await archiveOf(t, { n: '8\n' });
  const report = await run(ctx, fake, assignment('touch "$GPUX_OUTPUTS/ran"', refOf(archive)));
  assert.equal(report.outcome, 'failed');
  assert.equal(report.exitCode, null, 'an infrastructure failure: the job is retried');
  assert.match(report.error ?? '', /checkpoint .*hash to sha256/);
  assert.deepEqual(report.outputs, []);
  assert.deepEqual(await readdir(workRoot), [], 'the work dir and the archive are gone');
});

test('hostile archives are refused whole and nothing is written outside (or inside) the dir', async (t) => {
  const root = await tempDir(t, 'gpux-ckpt-hostile-');
  const cases: [string, Buffer, RegExp][] = [
    ['a .. path', rawTar([{ path: 'ok', body: 'x' }, { path: '../escaped', body: 'pwned' }]), /"\.\.\/escaped" climbs out/],
    ['a deeper .. path', rawTar([{ path: 'a/../../escaped', body: 'pwned' }]), /climbs out/],
    ['an absolute path', rawTar([{ path: `${root}/escaped`, body: 'pwned' }]), /absolute path/],
    ['a symlink out', rawTar([{ path: 'link', type: 'SymbolicLink', linkpath: '../../..' }, { path: 'link/escaped', body: 'pwned' }]), /"link" is a symbolic link/],
    ['a symlink inside', rawTar([{ path: 'n', body: '1' }, { path: 'alias', type: 'SymbolicLink', linkpath: 'n' }]), /symbolic link/],
    ['a hard link', rawTar([{ path: 'h', type: 'Link', linkpath: '/etc/passwd' }]), /hard link/],
    ['a FIFO', rawTar([{ path: 'pipe', type: 'FIFO' }]), /is a FIFO/],
    ['gzip', gzipSync(rawTar([{ path: 'n', body: '1' }])), /not an uncompressed tar/],
    ['garbage', randomBytes(2048), /not an uncompressed tar/],
    ['too many entries', rawTar(Array.from({ length: 101 }, (_, i) => ({ path: `f${i}`, body: '' }))), /more than 100 entries/],
    ['too many bytes', rawTar([{ path: 'a', body: 'x'.repeat(600_000) }, { path: 'b', body: 'x'.repeat(600_000) }]), /more than 1048576 bytes/],
  ];
  for (const [name, archive, why] of cases) {
    const dir = join(root, name.replaceAll(' ', '-'), 'in', 'checkpoints');
    await mkdir(dir, { recursive: true });
    const file = join(root, `${name.replaceAll(' ', '-')}.tar`);
    await writeFile(file, archive);
    await assert.rejects(extractArchive(file, dir, LIMITS, 'checkpoint'), (e: Error) => {
      assert.equal(e.name, 'DataPlaneError', name);
      assert.match(e.message, why, name);
      return true;
    });
    assert.deepEqual(await readdir(dir), [], `${name}: nothing extracted`);
  }
  assert.equal(existsSync(join(root, 'escaped')), false);
  assert.equal(existsSync('/escaped'), false);
});

test('a hostile checkpoint fails the attempt (infrastructure) and the program never runs', async (t) => {
  const { fake, ctx } = await setup(t);
  const archive = rawTar([{ path: 'link', type: 'SymbolicLink', linkpath: '/' }]);
  fake.checkpoint = archive;
  const report = await run(ctx, fake, assignment('touch "$GPUX_OUTPUTS/ran"', refOf(archive)));
  assert.equal(report.outcome, 'failed');
  assert.equal(report.exitCode, null);
  assert.match(report.error ?? '', /refused: the entry "link" is a symbolic link/);
  assert.deepEqual(report.outputs, []);
});

test('a stop uploads the state the program left (after its SIGTERM handler) before the result is reported', async (t) => {
  const { fake, ctx, workRoot } = await setup(t, 60_000);
  const a = assignment('trap \'echo 2 > "$GPUX_CHECKPOINTS/n"; exit 0\' TERM; echo 1 > "$GPUX_CHECKPOINTS/n"; while true; do sleep 0.1; done');
  const runner = new AttemptRunner(a, ctx);
  const done = runner.run();
  await until('the job wrote its state', () => {
    return readdirSync(workRoot).some((d) => existsSync(join(workRoot, d, 'checkpoints', 'n'))) ? true : undefined;
  });
  runner.stop('cancelled');
  await done;
  const report = fake.results.find((r) => r.attemptId === a.attemptId)?.report;
  assert.equal(report?.outcome, 'cancelled');
  assert.equal(fake.checkpoints.length, 1);
  assert.deepEqual(await filesOf(t, fake.checkpoints[0]?.data ?? Buffer.alloc(0)), { n: '2\n' });
  assert.deepEqual(fake.order, [`checkpoint ${fake.checkpoints[0]?.sha256}`, `result ${a.attemptId}`]);
});

test('a failed upload is logged and tried again at the next tick', async (t) => {
  const { fake, ctx } = await setup(t, 150);
  fake.failCheckpointOpens = { status: 400, times: 1 };
  const report = await run(ctx, fake, assignment('echo 1 > "$GPUX_CHECKPOINTS/n" && sleep 1'));
  assert.equal(report.outcome, 'succeeded');
  assert.equal(fake.failCheckpointOpens.times, 0, 'the first try failed');
  assert.equal(fake.checkpoints.length, 1, 'a later tick uploaded it, once');
});

describe('checkpoints in a container', requireDocker(), () => {
  test('mounted read-write at /gpux/checkpoints ($GPUX_CHECKPOINTS), restored writable for the job\'s user, bounded by the outputs quota', async (t) => {
    await buildBusyboxImage();
    const { fake, ctx, workRoot } = await setup(t, 60_000);
    ctx.executor = new DockerExecutor({ nodeId: `n-ckpt-${process.pid}`, workRoot, killGraceMs: 1000, gpuHostConfig: () => ({}), limits: { totalBytes: 64 * 1024 } });
    const archive = await archiveOf(t, { n: '7\n', 'deep/state': 'a' });
    fake.checkpoint = archive;
    const job = 'n=$(cat "$GPUX_CHECKPOINTS/n"); echo $((n+1)) > "$GPUX_CHECKPOINTS/n" && echo b >> "$GPUX_CHECKPOINTS/deep/state" && mkdir "$GPUX_CHECKPOINTS/new" && echo "$GPUX_CHECKPOINTS" > "$GPUX_OUTPUTS/where"';
    const report = await run(ctx, fake, assignment(job, refOf(archive), TEST_IMAGE));
    assert.equal(report.outcome, 'succeeded', report.error ?? '');
    assert.equal(Buffer.from(report.outputs?.find((f) => f.path === 'where')?.content ?? '', 'base64').toString(), '/gpux/checkpoints\n');
    assert.equal(fake.checkpoints.length, 1, 'the state after the exit');
    assert.deepEqual(await filesOf(t, fake.checkpoints[0]?.data ?? Buffer.alloc(0)), { n: '8\n', 'deep/state': 'ab\n' });

    const over = await run(ctx, fake, assignment('head -c 200000 /dev/zero > "$GPUX_CHECKPOINTS/big"; sleep 5', undefined, TEST_IMAGE));
    assert.equal(over.outcome, 'failed');
    assert.match(over.error ?? '', /checkpoints exceeded the 64 KiB quota of this node \(GPUX_NODE_MAX_OUTPUT_BYTES\)/);
    assert.equal(fake.checkpoints.length, 1, 'a dir past its bound is not uploaded');
  });
});
