/** Image pulls on a real engine from a local registry: progress in the job's log, digest pinning, a wrong digest refused. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { requireDocker } from '@gpux/testing';
import { connectDocker, DockerExecutor } from '../src/index.js';
import { type FakeRegistry, startFakeRegistry } from './fake-registry.js';
import { type ExecutorHarness, request, run } from './executor-conformance.js';
import { tempDir } from './helpers.js';

type T = { after(fn: () => unknown): void };

describe('docker executor image pulls', requireDocker(), () => {
  const docker = connectDocker();
  let registry: FakeRegistry;
  let repo: string;

  before(async () => {
    registry = await startFakeRegistry('gpux-test/pulled', 'v1');
    repo = `${registry.host}/gpux-test/pulled`;
  });
  after(async () => {
    for (const ref of [`${repo}:v1`, `${repo}@${registry.manifestDigest}`]) await docker.getImage(ref).remove({ force: true }).catch(() => {});
    await registry.close();
  });

  const harness = async (t: T): Promise<ExecutorHarness> => ({
    executor: new DockerExecutor({ nodeId: `n-docker-pull-${process.pid}`, workRoot: await tempDir(t), killGraceMs: 1000, pullProgressIntervalMs: 100 }),
    shell: (s) => ['sh', '-c', s],
  });
  const withImage = (h: ExecutorHarness, image: string, script: string) => {
    const req = request(h, { command: h.shell(script) });
    return { ...req, spec: { ...req.spec, image } };
  };

  test('a missing image is pulled, with progress in the job’s system log, then runs', async (t) => {
    const h = await harness(t);
    const { outcome, logs, events } = await run(h, withImage(h, `${repo}:v1`, 'echo pulled-and-ran'));
    assert.equal(outcome.outcome, 'succeeded', logs.system + logs.stderr);
    assert.equal(logs.stdout, 'pulled-and-ran\n');
    const lines = logs.system.split('\n');
    assert.match(lines[0] ?? '', new RegExp(`^image: ${repo}:v1 is not on this node; pulling ${repo}:v1$`));
    assert.ok(
      lines.some((l) => /^image: pulling \S+: \d+\/1 layers done, [\d.]+ MiB of [\d.]+ MiB downloaded$/.test(l)),
      `a progress line:\n${logs.system}`,
    );
    assert.ok(lines.some((l) => l === `image: Digest: ${registry.manifestDigest}`), logs.system);
    assert.ok(
      lines.some((l) => new RegExp(`^image: pulled ${repo}:v1 in [\\d.]+ s \\(id sha256:[0-9a-f]{64}, digest ${repo}@${registry.manifestDigest}\\)$`).test(l)),
      logs.system,
    );
    assert.ok(registry.blobRequests > 0);
    // The same pull, as job events: started, throttled progress, finished (in that order).
    const types = events.map((e) => e.type);
    assert.equal(types[0], 'image.pull.started', types.join());
    assert.equal(types.at(-1), 'image.pull.finished', types.join());
    assert.ok(types.slice(1, -1).every((ty) => ty === 'image.pull.progress'), types.join());
    assert.deepEqual(events[0]?.data, { image: `${repo}:v1`, ref: `${repo}:v1` });
    for (const p of events.slice(1, -1)) assert.equal(typeof p.data.layers, 'number');
    const finished = events.at(-1)?.data ?? {};
    assert.match(String(finished.imageId), /^sha256:[0-9a-f]{64}$/);
    assert.deepEqual(finished.digests, [`${repo}@${registry.manifestDigest}`]);
    assert.equal(typeof finished.seconds, 'number');
  });

  test('pinned by digest: runs the image with that digest; a digest the registry does not have fails the attempt', async (t) => {
    const h = await harness(t);
    const pinned = await run(h, withImage(h, `${repo}@${registry.manifestDigest}`, 'echo pinned'));
    assert.equal(pinned.outcome.outcome, 'succeeded', pinned.logs.system + pinned.logs.stderr);
    assert.match(pinned.logs.system, new RegExp(`is present on this node \\(id sha256:[0-9a-f]{64}, digest ${repo}@${registry.manifestDigest}\\)`));
    assert.deepEqual(pinned.events, [], 'no pull, no pull events');

    const wrong = `${repo}@sha256:${'0'.repeat(64)}`;
    const { outcome, events } = await run(h, withImage(h, wrong, 'echo never'));
    assert.equal(outcome.outcome, 'failed');
    assert.deepEqual(
      events.map((e) => e.type),
      ['image.pull.started', 'image.pull.failed'],
    );
    assert.equal(events[1]?.data.error, outcome.error);
    assert.equal(outcome.exitCode, null);
    assert.match(outcome.error ?? '', new RegExp(`^pulling ${wrong.replace(/[.]/g, '\\.')} failed: .*(not found|unknown)`, 'i'));
  });
});

test('a pull that takes too long fails the attempt', requireDocker(), async (t) => {
  const slow = await startFakeRegistry('gpux-test/slow', 'v1', { chunk: 1024, delayMs: 500 });
  t.after(() => slow.close());
  const executor = new DockerExecutor({ nodeId: `n-docker-pull-${process.pid}`, workRoot: await tempDir(t), pullTimeoutMs: 1500 });
  const h: ExecutorHarness = { executor, shell: (s) => ['sh', '-c', s] };
  const req = request(h, { command: ['true'] });
  const started = Date.now();
  const { outcome } = await run(h, { ...req, spec: { ...req.spec, image: `${slow.host}/gpux-test/slow:v1` } });
  assert.deepEqual([outcome.outcome, outcome.exitCode], ['failed', null]);
  assert.equal(outcome.error, `pulling ${slow.host}/gpux-test/slow:v1 took longer than 1.5 s`);
  assert.ok(Date.now() - started < 30_000);
});
