/**
 * Abuse suite, container attacks (issue 10, items 9 and 11) on a real engine: a job that sets no limits still gets
 * the node's; scratch and outputs cannot fill the host's disk; a denied image cannot be run by its id, its
 * sha256 id, a Docker Hub alias, a tag-less name or a local re-tag.
 */
import assert from 'node:assert/strict';
import { totalmem } from 'node:os';
import { after, before, describe, test } from 'node:test';
import type { ExecutionRequest } from '@gpux/core';
import { buildBusyboxImage, requireDocker, TEST_IMAGE } from '@gpux/testing';
import { connectDocker, DockerExecutor, type DockerExecutorOptions, managedFilter, measureTree } from '../src/index.js';
import { type ExecutorHarness, request, run } from './executor-conformance.js';
import { startFakeRegistry } from './fake-registry.js';
import { tempDir } from './helpers.js';

type T = { after(fn: () => unknown): void };
const nodeId = `n-docker-abuse-${process.pid}`;
const MiB = 1024 * 1024;

async function harness(t: T, opts: Partial<DockerExecutorOptions> = {}): Promise<ExecutorHarness & { workRoot: string }> {
  const workRoot = await tempDir(t);
  const executor = new DockerExecutor({ nodeId, workRoot, killGraceMs: 1000, ...opts });
  return { executor, shell: (s) => ['sh', '-c', s], image: TEST_IMAGE, workRoot };
}

/** Starts the request, waits for its container to run, and returns the container's inspect data; then cancels it. */
async function inspectRunning(h: ExecutorHarness, req: ExecutionRequest) {
  const docker = connectDocker();
  const execution = await h.executor.start(req, () => {});
  try {
    for (let i = 0; i < 200; i++) {
      const [c] = await docker.listContainers({ filters: JSON.stringify({ ...managedFilter(nodeId), label: [...managedFilter(nodeId).label, `gpux.attempt=${req.attemptId}`] }) });
      if (c) return await docker.getContainer(c.Id).inspect();
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the container never ran');
  } finally {
    await execution.stop('cancelled');
  }
}

/** Runs the request while sampling the size of everything under the work root; returns the outcome and the largest size seen. */
async function runMeasured(h: ExecutorHarness & { workRoot: string }, req: ExecutionRequest) {
  let largest = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      largest = Math.max(largest, (await measureTree(h.workRoot)).bytes);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  try {
    return { ...(await run(h, req)), largest: () => largest };
  } finally {
    sampling = false;
    await sampler;
  }
}

describe('abuse: containers without limits (item 9)', requireDocker(), () => {
  before(() => buildBusyboxImage());

  test('a spec with no memoryGb/cpuCores gets the node defaults (HostConfig and the cgroup)', async (t) => {
    const h = await harness(t, { defaultCpus: 1.5, defaultMemoryBytes: 300 * MiB });
    const info = await inspectRunning(h, request(h, { command: h.shell('sleep 30') }));
    assert.equal(info.HostConfig.Memory, 300 * MiB);
    assert.equal(info.HostConfig.MemorySwap, 300 * MiB, 'no swap on top');
    assert.equal(info.HostConfig.NanoCpus, 1.5e9);

    const probe = [
      'echo "memory=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max)"',
      'echo "cpu=$(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us))"',
    ].join('\n');
    const { outcome, logs } = await run(h, request(h, { command: h.shell(probe) }));
    assert.equal(outcome.outcome, 'succeeded', logs.stderr);
    assert.match(logs.stdout, new RegExp(`^memory=${300 * MiB}$`, 'm'));
    assert.match(logs.stdout, /^cpu=150000 100000$/m);
    assert.match(logs.system, /memory 300 MiB \(node default\), cpus 1\.5 \(node default\)/);
  });

  test('without node options: 4 GiB and 2 CPUs (capped at the host), whatever the spec leaves out', async (t) => {
    const h = await harness(t, { hostCpus: 1 });
    const info = await inspectRunning(h, request(h, { command: h.shell('sleep 30'), resources: { memoryGb: 0.5 } }));
    assert.equal(info.HostConfig.Memory, 512 * MiB, 'the spec’s memory');
    assert.equal(info.HostConfig.NanoCpus, 1e9, 'the default 2 CPUs, capped at the host’s 1');
    const defaults = await harness(t);
    const info2 = await inspectRunning(defaults, request(defaults, { command: h.shell('sleep 30') }));
    assert.equal(info2.HostConfig.Memory, Math.min(4 * 1024 * MiB, totalmem()));
    assert.ok((info2.HostConfig.NanoCpus ?? 0) > 0);
  });

  test('the default memory limit holds: a job that sets none and takes more is killed (OOM) with a hint', async (t) => {
    const h = await harness(t, { defaultMemoryBytes: 32 * MiB });
    const { outcome } = await run(h, request(h, { command: h.shell('exec dd if=/dev/zero of=/dev/null bs=64M count=1') }));
    assert.deepEqual([outcome.outcome, outcome.exitCode], ['failed', null]);
    assert.equal(outcome.error, "out of memory: the job went over its memory limit of 32 MiB (this node's default: the spec sets no resources.memoryGb) and was killed (OOM)");
  });

  test('outputs: a job writing without end is killed past the quota, fails with the quota error, reports nothing; the host dir stays bounded', async (t) => {
    const h = await harness(t, { limits: { totalBytes: 4 * MiB }, quotaCheckMs: 100 });
    const writer = 'i=0; while true; do i=$((i+1)); head -c 1048576 /dev/zero > "$GPUX_OUTPUTS/part-$i"; done';
    const { outcome, logs, largest } = await runMeasured(h, request(h, { command: h.shell(writer), timeoutSeconds: 120 }));
    assert.equal(outcome.outcome, 'failed');
    assert.equal(outcome.exitCode, null);
    assert.equal(outcome.error, 'outputs exceeded the 4 MiB quota of this node (GPUX_NODE_MAX_OUTPUT_BYTES); the job was stopped and its outputs are not reported');
    assert.deepEqual(outcome.outputs, [], 'nothing past the quota is reported');
    assert.match(logs.system, /^container: outputs exceeded the 4 MiB quota/m);
    // Unchecked, the loop writes until the 120 s timeout; the watcher stops it within a check or two.
    assert.ok(largest() < 256 * MiB, `the host dir stayed bounded (largest seen: ${largest()} bytes)`);
    t.diagnostic(`outputs quota 4 MiB: the largest work dir seen was ${(largest() / MiB).toFixed(1)} MiB`);
    assert.deepEqual(await measureTree(h.workRoot), { bytes: 0, entries: 0, stoppedEarly: false }, 'the work dir is removed');
  });

  test('scratch: same, with its own quota; many empty files hit the file-count quota', async (t) => {
    const h = await harness(t, { scratchBytes: 3 * MiB, quotaCheckMs: 100 });
    const writer = 'i=0; while true; do i=$((i+1)); head -c 1048576 /dev/zero > "$GPUX_SCRATCH/part-$i"; done';
    const { outcome, largest } = await runMeasured(h, request(h, { command: h.shell(writer), timeoutSeconds: 120 }));
    assert.deepEqual(
      [outcome.outcome, outcome.exitCode, outcome.error],
      ['failed', null, 'scratch exceeded the 3 MiB quota of this node (GPUX_NODE_MAX_SCRATCH_BYTES); the job was stopped and its outputs are not reported'],
    );
    assert.ok(largest() < 256 * MiB, `largest seen: ${largest()} bytes`);

    const files = await harness(t, { scratchMaxEntries: 50, quotaCheckMs: 100 });
    const touch = 'i=0; while true; do i=$((i+1)); touch "$GPUX_SCRATCH/f-$i"; done';
    const many = await run(files, request(files, { command: files.shell(touch), timeoutSeconds: 120 }));
    assert.equal(many.outcome.error, 'scratch exceeded the quota of 50 files and dirs of this node; the job was stopped and its outputs are not reported');
  });

  test('what was written after the last check still counts: a quick job over the quota that exits 0 fails', async (t) => {
    const h = await harness(t, { scratchBytes: 2 * MiB, quotaCheckMs: 60_000 });
    const { outcome } = await run(h, request(h, { command: h.shell('head -c 3145728 /dev/zero > "$GPUX_SCRATCH/big"; echo hi > "$GPUX_OUTPUTS/small"') }));
    assert.deepEqual([outcome.outcome, outcome.outputs], ['failed', []]);
    assert.match(outcome.error ?? '', /^scratch exceeded the 2 MiB quota/);
    const fits = await run(h, request(h, { command: h.shell('head -c 1048576 /dev/zero > "$GPUX_SCRATCH/ok"; echo hi > "$GPUX_OUTPUTS/small"') }));
    assert.equal(fits.outcome.outcome, 'succeeded', 'under the quota: as before');
    assert.deepEqual(
      fits.outcome.outputs.map((o) => o.path),
      ['small'],
    );
  });
});

describe('abuse: image deny list bypass (item 11)', requireDocker(), () => {
  const docker = connectDocker();
  const aliasTag = { repo: 'busybox', tag: `gpux-abuse-${process.pid}` };
  const retag = { repo: 'gpux-abuse/retag', tag: `${process.pid}` };
  let imageId = '';
  before(async () => {
    const image = await buildBusyboxImage();
    imageId = (await docker.getImage(TEST_IMAGE).inspect()).Id;
    assert.ok(image);
    // The test image under a docker.io/library/busybox name too, as on a node that pulled busybox.
    await docker.getImage(TEST_IMAGE).tag(aliasTag);
    await docker.getImage(TEST_IMAGE).tag(retag);
  });
  after(async () => {
    await docker.getImage(`${aliasTag.repo}:${aliasTag.tag}`).remove({ noprune: true }).catch(() => {});
    await docker.getImage(`${retag.repo}:${retag.tag}`).remove({ noprune: true }).catch(() => {});
  });

  const refs = () => [
    { how: 'short id', image: imageId.slice('sha256:'.length, 'sha256:'.length + 12) },
    { how: 'sha256 id', image: imageId },
    { how: 'bare 64-hex id', image: imageId.slice('sha256:'.length) },
    { how: 'registry alias', image: `registry-1.docker.io/library/busybox:${aliasTag.tag}` },
    { how: 'index alias', image: `index.docker.io/busybox:${aliasTag.tag}` },
    { how: 'docker.io, no library/', image: `docker.io/busybox:${aliasTag.tag}` },
    { how: 'a local re-tag', image: `${retag.repo}:${retag.tag}` },
  ];

  test('--image-deny busybox stops the image by id, sha256 id, Docker Hub aliases and re-tags: failed, nothing created', async (t) => {
    const h = await harness(t, { imagePolicy: { allow: [], deny: ['busybox'] } });
    for (const { how, image } of refs()) {
      const req = request(h, { command: h.shell('echo ran > "$GPUX_OUTPUTS/ran"') });
      const { outcome, logs } = await run(h, { ...req, spec: { ...req.spec, image } });
      assert.equal(outcome.outcome, 'failed', `${how}: ${image}`);
      assert.match(outcome.error ?? '', /^image not allowed: image \S+ .*is denied on this node \(deny pattern "busybox"\)$/, how);
      assert.deepEqual(outcome.outputs, [], how);
      assert.doesNotMatch(logs.system, /^container:/m, `${how}: no container was created`);
    }
    assert.deepEqual(await docker.listContainers({ all: true, filters: JSON.stringify(managedFilter(nodeId)) }), []);
  });

  test('a tag-less name and every alias are refused before any pull; the test image itself is denied by its repository', async (t) => {
    const h = await harness(t, { imagePolicy: { allow: [], deny: ['gpux-test/busybox', 'busybox'] } });
    for (const image of ['busybox', 'registry-1.docker.io/library/busybox', 'gpux-test/busybox', 'registry-1.docker.io/gpux-test/busybox:latest', TEST_IMAGE]) {
      const req = request(h, { command: ['true'] });
      const { outcome, logs } = await run(h, { ...req, spec: { ...req.spec, image } });
      assert.equal(outcome.outcome, 'failed', image);
      assert.match(outcome.error ?? '', /^image not allowed: image docker\.io\/(library|gpux-test)\/busybox:latest is denied on this node/, image);
      assert.equal(logs.system, '', `${image}: refused before the engine was asked anything`);
    }
  });

  test('an allow list admits an id only through the names of the image it resolves to', async (t) => {
    const denied = await harness(t, { imagePolicy: { allow: ['docker.io/library/python'], deny: [] } });
    const req = request(denied, { command: ['true'] });
    const refused = await run(denied, { ...req, spec: { ...req.spec, image: imageId.slice(7, 19) } });
    assert.match(refused.outcome.error ?? '', /^image not allowed: .* is not in this node's allow list \(docker\.io\/library\/python\)$/);

    const allowed = await harness(t, { imagePolicy: { allow: ['gpux-test/*'], deny: [] } });
    const req2 = request(allowed, { command: ['true'] });
    const ok = await run(allowed, { ...req2, spec: { ...req2.spec, image: imageId.slice(7, 19) } });
    assert.equal(ok.outcome.outcome, 'succeeded', `${ok.outcome.error}`);
  });

  test('a name that only turns out to be a denied image once pulled: refused after the pull, before anything runs', async (t) => {
    const registry = await startFakeRegistry('gpux-test/mirror', 'v1', { chunk: 1024 * 1024, delayMs: 0 });
    const mirror = `${registry.host}/gpux-test/mirror:v1`;
    const denied = { repo: 'busybox', tag: `gpux-abuse-mirror-${process.pid}` };
    t.after(async () => {
      await docker.getImage(`${denied.repo}:${denied.tag}`).remove({ force: true }).catch(() => {});
      await docker.getImage(mirror).remove({ force: true }).catch(() => {});
      await registry.close();
    });
    // The node has this content as busybox (denied); the mirror's name is gone from the engine.
    const pull = await docker.pull(mirror);
    await new Promise((resolve, reject) => docker.modem.followProgress(pull, (e: unknown) => (e ? reject(e) : resolve(null))));
    await docker.getImage(mirror).tag(denied);
    await docker.getImage(mirror).remove({ noprune: true });

    const h = await harness(t, { imagePolicy: { allow: [], deny: ['busybox'] } });
    const req = request(h, { command: h.shell('echo ran') });
    const { outcome, logs } = await run(h, { ...req, spec: { ...req.spec, image: mirror } });
    assert.match(logs.system, /is not on this node; pulling/, 'the reference passed the first check and was pulled');
    assert.equal(outcome.outcome, 'failed');
    assert.match(outcome.error ?? '', new RegExp(`^image not allowed: image ${mirror.replace(/[.:/]/g, '\\$&')} \\(id sha256:[0-9a-f]{12}, known here as .*busybox:${denied.tag}.*\\) is denied on this node \\(deny pattern "busybox"\\)$`));
    assert.doesNotMatch(logs.system, /^container:/m);
    assert.equal(logs.stdout, '');
  });
});
