/** The docker executor's isolation on a real engine: user, capabilities, read-only root, devices, network, memory, caps. */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { buildBusyboxImage, requireDocker, TEST_IMAGE } from '@gpux/testing';
import { connectDocker, DockerExecutor, type DockerExecutorOptions, managedFilter } from '../src/index.js';
import { type ExecutorHarness, request, run } from './executor-conformance.js';
import { tempDir } from './helpers.js';

type T = { after(fn: () => unknown): void };
const nodeId = `n-docker-isolation-${process.pid}`;

async function harness(t: T, opts: Partial<DockerExecutorOptions> = {}): Promise<ExecutorHarness> {
  const executor = new DockerExecutor({ nodeId, workRoot: await tempDir(t), killGraceMs: 1000, ...opts });
  return { executor, shell: (s) => ['sh', '-c', s], image: TEST_IMAGE };
}

/** Lines "key=value" of the probe script, as an object. */
function fields(stdout: string): Record<string, string> {
  return Object.fromEntries(
    stdout
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).trim()]),
  );
}

describe('docker executor isolation', requireDocker(), () => {
  before(() => buildBusyboxImage());

  test('by default: nobody, no capabilities, no new privileges, read-only root, writable outputs/scratch/tmp, limits, no devices', async (t) => {
    const h = await harness(t, { pidsLimit: 128 });
    const script = [
      'echo "user=$(id -u):$(id -g)"',
      'echo "capeff=$(grep ^CapEff /proc/self/status | cut -f2)"',
      'echo "nnp=$(grep ^NoNewPrivs /proc/self/status | tr -dc 0-9)"',
      'touch /rootfile 2>/dev/null && echo root=writable || echo root=readonly',
      'touch /gpux/inputs/x 2>/dev/null && echo inputs=writable || echo inputs=readonly',
      'touch /tmp/x /gpux/scratch/x "$GPUX_OUTPUTS/x" && echo scratch=writable',
      'echo "home=$HOME pwd=$(pwd)"',
      'echo "nets=$(ls /sys/class/net | tr "\\n" " ")"',
      'echo "gpudevs=$(ls -d /dev/nvidia* /dev/kfd /dev/dri 2>/dev/null | tr "\\n" " ")"',
      'echo "gpuenv=$NVIDIA_VISIBLE_DEVICES|$CUDA_VISIBLE_DEVICES|$ROCR_VISIBLE_DEVICES"',
      'echo "pids=$(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max)"',
      'echo "memory=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max)"',
      // cgroup v2 file first, else the v1 pair: both read "quota period".
      'echo "cpu=$(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us))"',
    ].join('\n');
    const inputs = [{ path: 'in.txt', content: 'x' }];
    const { outcome, logs } = await run(h, request(h, { command: h.shell(script), inputs, resources: { memoryGb: 0.25, cpuCores: 0.5 } }));
    assert.equal(outcome.outcome, 'succeeded', logs.stderr + logs.system);
    const f = fields(logs.stdout);
    assert.equal(f.user, '65534:65534');
    assert.equal(f.capeff, '0000000000000000');
    assert.equal(f.nnp, '1');
    assert.equal(f.root, 'readonly');
    assert.equal(f.inputs, 'readonly');
    assert.equal(f.scratch, 'writable');
    assert.equal(f.home, '/gpux/scratch pwd=/gpux/scratch');
    assert.equal(f.nets, 'lo', 'no network interface but loopback');
    assert.equal(f.gpudevs, '', 'no GPU device nodes when none are assigned');
    assert.equal(f.gpuenv, '||', 'NVIDIA_VISIBLE_DEVICES is set empty, overriding an image "all"');
    assert.equal(f.pids, '128');
    assert.equal(f.memory, String(256 * 1024 * 1024));
    assert.equal(f.cpu, '50000 100000');
    assert.deepEqual(
      outcome.outputs.map((o) => o.path),
      ['x'],
    );
    assert.match(logs.system, /^image: gpux-test\/busybox:latest is present on this node \(id sha256:[0-9a-f]{64}\)$/m);
    assert.match(logs.system, /^container: gpux-\S+ \(network none, user 65534:65534, pids ≤ 128, read-only root, no capabilities, memory 256 MiB, cpus 0.5, outputs ≤ 1 GiB, scratch ≤ 10 GiB, no GPUs\)$/m);
  });

  describe('network', () => {
    let url: { port: number; hosts: string[] };
    const server = createServer((_req, res) => res.end('gpux-network-probe\n'));
    after(() => server.close());
    before(async () => {
      await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
      const hosts = Object.values(networkInterfaces())
        .flat()
        .filter((i) => i && i.family === 'IPv4')
        .map((i) => i?.address ?? '');
      url = { port: (server.address() as AddressInfo).port, hosts };
    });
    const probe = () =>
      [
        ...url.hosts.map((ip) => `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${ip} ${url.port} 2>&1 | grep -q gpux-network-probe && echo "reached=${ip}"`),
        'nslookup example.com >/dev/null 2>&1; echo "dns=$?"',
        'true',
      ].join('\n');

    test('none by default: the host (127.0.0.1, its other addresses) is unreachable and names do not resolve', async (t) => {
      const h = await harness(t);
      const { outcome, logs } = await run(h, request(h, { command: h.shell(probe()) }));
      assert.equal(outcome.outcome, 'succeeded', logs.stderr);
      assert.ok(url.hosts.includes('127.0.0.1') && url.hosts.length >= 2, `host addresses: ${url.hosts}`);
      assert.doesNotMatch(logs.stdout, /reached=/);
      assert.notEqual(fields(logs.stdout).dns, '0');
    });

    test('a job that asks gets a network only on a node that allows it', async (t) => {
      const refused = await harness(t);
      const ask = (h: ExecutorHarness) => request(h, { command: h.shell(probe()), network: true });
      const no = await run(refused, ask(refused));
      assert.equal(no.outcome.outcome, 'failed');
      assert.match(no.outcome.error ?? '', /asks for network access .* this node does not allow it/);

      const allowed = await harness(t, { allowNetwork: true });
      const yes = await run(allowed, ask(allowed));
      assert.equal(yes.outcome.outcome, 'succeeded', yes.logs.stderr);
      assert.match(yes.logs.stdout, /reached=/, 'with a network, the same probe reaches the host (the probe works)');
    });
  });

  test('memory limit exceeded: failed as out of memory', async (t) => {
    const h = await harness(t);
    // dd's 64 MiB buffer under a 32 MiB limit; exec, so the killed process is the job itself.
    const { outcome, logs } = await run(h, request(h, { command: h.shell('echo start; exec dd if=/dev/zero of=/dev/null bs=64M count=1'), resources: { memoryGb: 1 / 32 } }));
    assert.equal(outcome.outcome, 'failed', logs.stdout + logs.stderr);
    assert.equal(outcome.exitCode, null);
    assert.match(outcome.error ?? '', /^out of memory: the job went over its memory limit of 32 MiB and was killed \(OOM\)$/);
    assert.equal(logs.stdout, 'start\n');
  });

  test('outputs over the size cap fail the attempt', async (t) => {
    const h = await harness(t, { limits: { totalBytes: 1000 } });
    const { outcome } = await run(h, request(h, { command: h.shell('head -c 2000 /dev/zero > "$GPUX_OUTPUTS/big"') }));
    assert.deepEqual(
      [outcome.outcome, outcome.exitCode, outcome.error, outcome.outputs],
      ['failed', null, 'outputs exceeded the 1000 bytes quota of this node (GPUX_NODE_MAX_OUTPUT_BYTES); the job was stopped and its outputs are not reported', []],
    );
  });

  test('a denied image is refused before anything is pulled or created', async (t) => {
    const h = await harness(t, { imagePolicy: { allow: ['docker.io/library/*'], deny: ['docker.io/gpux-test/*'] } });
    const { outcome, logs } = await run(h, request(h, { command: ['true'] }));
    assert.equal(outcome.outcome, 'failed');
    assert.equal(outcome.error, 'image not allowed: image docker.io/gpux-test/busybox:latest is denied on this node (deny pattern "docker.io/gpux-test/*")');
    assert.equal(logs.system, '');
  });

  test('a missing image that cannot be pulled fails with the engine’s reason', async (t) => {
    const h = await harness(t);
    const { outcome, logs } = await run(h, { ...request(h, { command: ['true'] }), spec: { ...request(h, { command: ['true'] }).spec, image: '127.0.0.1:1/gpux/none:1' } });
    assert.equal(outcome.outcome, 'failed');
    assert.match(outcome.error ?? '', /^pulling 127\.0\.0\.1:1\/gpux\/none:1 failed: .*(connection refused|connect)/);
    assert.match(logs.system, /is not on this node; pulling 127\.0\.0\.1:1\/gpux\/none:1/);
  });

  test('reconcile removes this node’s leftover containers, and only those', async () => {
    const docker = connectDocker();
    const mine = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ['true'], Labels: { 'gpux.managed': 'true', 'gpux.node': nodeId, 'gpux.attempt': 'a-left' } });
    const other = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ['true'], Labels: { 'gpux.managed': 'true', 'gpux.node': `${nodeId}-other` } });
    try {
      const executor = new DockerExecutor({ nodeId, workRoot: '/nonexistent' });
      const report = await executor.reconcile();
      assert.deepEqual(
        report.containers.map((c) => [c.id, c.attemptId, c.state]),
        [[mine.id, 'a-left', 'created']],
      );
      assert.deepEqual(report.failures, []);
      const left = await docker.listContainers({ all: true, filters: JSON.stringify(managedFilter(nodeId)) });
      assert.deepEqual(left, []);
      assert.equal((await other.inspect()).Id, other.id, 'another node’s container stays');
    } finally {
      await other.remove({ force: true });
      await mine.remove({ force: true }).catch(() => {});
    }
  });
});
