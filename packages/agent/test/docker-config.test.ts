/** The docker executor's pure parts: the container config per vendor and GPU count, image refs and policy, pull progress, demux. */
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import type { ExecutionRequest } from '@gpux/core';
import { type GpuDevice, JobSpec, type JobSpecInput } from '@gpux/protocol';
import {
  buildContainerConfig,
  type ContainerPlan,
  canonicalImageRef,
  checkImage,
  checkQuotas,
  checkResolvedImage,
  containerGpuEnv,
  DiskQuotaWatcher,
  formatBytes,
  gpuHostConfig,
  gpuSupportProblem,
  isDigestPinned,
  looksLikeImageId,
  measureTree,
  parseImageRef,
  PullProgress,
  StreamDemuxer,
} from '../src/index.js';
import { tempDir } from './helpers.js';

const nvidia = (index: number): GpuDevice => ({ index, uuid: `GPU-${index}aaa`, vendor: 'nvidia', model: 'NVIDIA H100', vramMb: 81_559 });
const amd = (index: number): GpuDevice => ({ index, uuid: `0x${index}bbb`, vendor: 'amd', model: 'AMD Instinct MI300X', vramMb: 196_592 });

function plan(spec: Partial<JobSpecInput> = {}, over: Partial<ContainerPlan> = {}): ContainerPlan {
  const req: ExecutionRequest = {
    attemptId: 'a-123',
    jobId: 'j-456',
    spec: JobSpec.parse({ name: 'n', image: 'busybox', command: ['python', 'train.py'], args: ['--epochs', '3'], ...spec }),
    gpuIndices: [],
    gpuUuids: [],
  };
  return {
    req,
    imageId: 'sha256:abc',
    nodeId: 'n-1',
    nameSuffix: 'ff',
    dirs: { inputs: '/w/in', outputs: '/w/out', scratch: '/w/scratch' },
    gpu: {},
    gpuEnv: containerGpuEnv([]),
    user: '65534:65534',
    network: false,
    pidsLimit: 4096,
    hostCpus: 8,
    hostMemoryBytes: 64 * 1024 ** 3,
    defaultCpus: 2,
    defaultMemoryBytes: 4 * 1024 ** 3,
    tmpSizeMb: 1024,
    shmSizeMb: 1024,
    logFileBytes: 10 * 1024 * 1024,
    ...over,
  };
}

describe('container config', () => {
  test('isolated by default: no network, no privileges, no capabilities, read-only root, limits, mounts, labels', () => {
    const c = buildContainerConfig(plan());
    const h = c.HostConfig ?? {};
    assert.equal(c.name, 'gpux-a-123-ff');
    assert.equal(c.Image, 'sha256:abc');
    assert.deepEqual([c.Entrypoint, c.Cmd], [['python', 'train.py'], ['--epochs', '3']]);
    assert.equal(c.User, '65534:65534');
    assert.equal(c.WorkingDir, '/gpux/scratch');
    assert.deepEqual(c.Labels, { 'gpux.managed': 'true', 'gpux.node': 'n-1', 'gpux.job': 'j-456', 'gpux.attempt': 'a-123' });
    assert.equal(h.NetworkMode, 'none');
    assert.equal(h.Privileged, false);
    assert.deepEqual(h.CapDrop, ['ALL']);
    assert.equal(h.CapAdd, undefined);
    assert.deepEqual(h.SecurityOpt, ['no-new-privileges:true']);
    assert.equal(h.ReadonlyRootfs, true);
    assert.equal(h.PidsLimit, 4096);
    assert.deepEqual(h.Tmpfs, { '/tmp': 'rw,exec,nosuid,nodev,size=1024m,mode=1777' });
    assert.deepEqual(h.Mounts, [
      { Type: 'bind', Source: '/w/in', Target: '/gpux/inputs', ReadOnly: true },
      { Type: 'bind', Source: '/w/out', Target: '/gpux/outputs', ReadOnly: false },
      { Type: 'bind', Source: '/w/scratch', Target: '/gpux/scratch', ReadOnly: false },
    ]);
    assert.equal(h.Memory, 4 * 1024 ** 3, 'the node default when the spec sets no memory');
    assert.equal(h.MemorySwap, 4 * 1024 ** 3);
    assert.equal(h.NanoCpus, 2e9, 'the node default when the spec sets no CPUs');
    assert.equal(h.DeviceRequests, undefined);
    assert.equal(h.Devices, undefined);
    assert.deepEqual(h.LogConfig, { Type: 'json-file', Config: { 'max-size': '10240k', 'max-file': '1' } });
    assert.equal(h.AutoRemove, false);
  });

  test('memory and CPU limits from the spec (no swap; CPUs capped at the host’s)', () => {
    const h = buildContainerConfig(plan({ resources: { memoryGb: 2, cpuCores: 1.5 } })).HostConfig ?? {};
    assert.deepEqual([h.Memory, h.MemorySwap, h.NanoCpus], [2 * 1024 ** 3, 2 * 1024 ** 3, 1_500_000_000]);
    const capped = buildContainerConfig(plan({ resources: { cpuCores: 64 } }, { hostCpus: 8 })).HostConfig ?? {};
    assert.equal(capped.NanoCpus, 8e9);
  });

  test('every container is limited: node defaults where the spec is silent, never more than the host has', () => {
    const small = buildContainerConfig(plan({}, { hostCpus: 1, hostMemoryBytes: 2 * 1024 ** 3 })).HostConfig ?? {};
    assert.deepEqual([small.NanoCpus, small.Memory, small.MemorySwap], [1e9, 2 * 1024 ** 3, 2 * 1024 ** 3], 'defaults capped at the host');
    const big = buildContainerConfig(plan({ resources: { memoryGb: 1000, cpuCores: 0.25 } })).HostConfig ?? {};
    assert.deepEqual([big.NanoCpus, big.Memory], [0.25e9, 64 * 1024 ** 3], 'the spec is capped at the host too');
    const custom = buildContainerConfig(plan({ resources: { cpuCores: 3 } }, { defaultMemoryBytes: 512 * 1024 ** 2 })).HostConfig ?? {};
    assert.deepEqual([custom.NanoCpus, custom.Memory], [3e9, 512 * 1024 ** 2]);
  });

  test('a network only when the plan says so (the job asked and the node allows it)', () => {
    assert.equal(buildContainerConfig(plan({}, { network: true })).HostConfig?.NetworkMode, 'bridge');
  });

  test('env: spec env, then the gpux variables and GPU visibility (which win)', () => {
    const env = buildContainerConfig(plan({ env: { FOO: 'bar', GPUX_JOB_ID: 'spoofed', NVIDIA_VISIBLE_DEVICES: 'all' } })).Env ?? [];
    assert.ok(env.includes('FOO=bar'));
    assert.ok(env.includes('GPUX_JOB_ID=j-456'));
    assert.ok(env.includes('GPUX_INPUTS=/gpux/inputs') && env.includes('GPUX_OUTPUTS=/gpux/outputs') && env.includes('HOME=/gpux/scratch'));
    assert.ok(env.includes('NVIDIA_VISIBLE_DEVICES='), 'never "all"');
    assert.ok(!env.some((e) => e.startsWith('PATH=')), 'the image keeps its own PATH');
  });
});

describe('GPU devices per vendor and count', () => {
  test('no GPUs: nothing', () => {
    assert.deepEqual(gpuHostConfig([]), {});
    assert.deepEqual(containerGpuEnv([]), { CUDA_VISIBLE_DEVICES: '', NVIDIA_VISIBLE_DEVICES: '', ROCR_VISIBLE_DEVICES: '', HIP_VISIBLE_DEVICES: '' });
  });

  for (const indices of [[2], [0, 3]]) {
    test(`NVIDIA, ${indices.length} GPU(s): one device request for exactly the assigned UUIDs`, () => {
      const gpus = indices.map(nvidia);
      const c = gpuHostConfig(gpus);
      assert.deepEqual(c, { DeviceRequests: [{ Driver: 'nvidia', Count: 0, DeviceIDs: gpus.map((g) => g.uuid), Capabilities: [['gpu']], Options: {} }] });
      const local = indices.map((_, i) => i).join(',');
      assert.deepEqual(containerGpuEnv(gpus), {
        CUDA_VISIBLE_DEVICES: local,
        NVIDIA_VISIBLE_DEVICES: gpus.map((g) => g.uuid).join(','),
        ROCR_VISIBLE_DEVICES: local,
        HIP_VISIBLE_DEVICES: local,
      });
      const h = buildContainerConfig(plan({}, { gpu: c })).HostConfig ?? {};
      assert.deepEqual(h.DeviceRequests?.[0]?.DeviceIDs, gpus.map((g) => g.uuid));
    });

    test(`AMD, ${indices.length} GPU(s): /dev/kfd and only the assigned render nodes, with their groups`, () => {
      const gids: Record<string, number> = { '/dev/kfd': 44, '/dev/dri/renderD128': 110, '/dev/dri/renderD130': 110, '/dev/dri/renderD131': 110 };
      const c = gpuHostConfig(indices.map(amd), { deviceGid: (p) => gids[p] });
      const nodes = ['/dev/kfd', ...indices.map((i) => `/dev/dri/renderD${128 + i}`)];
      assert.deepEqual(
        c.Devices,
        nodes.map((p) => ({ PathOnHost: p, PathInContainer: p, CgroupPermissions: 'rwm' })),
      );
      assert.deepEqual(c.GroupAdd, ['44', '110']);
      assert.equal(c.DeviceRequests, undefined);
      assert.equal(containerGpuEnv(indices.map(amd)).NVIDIA_VISIBLE_DEVICES, '');
      assert.equal(containerGpuEnv(indices.map(amd)).ROCR_VISIBLE_DEVICES, indices.map((_, i) => i).join(','));
    });
  }

  test('AMD: group names when the device groups are unknown; a custom render node map', () => {
    const c = gpuHostConfig([amd(1)], { renderNode: () => '/dev/dri/renderD200' });
    assert.deepEqual(c.GroupAdd, ['video', 'render']);
    assert.deepEqual(
      (c.Devices as { PathOnHost: string }[]).map((d) => d.PathOnHost),
      ['/dev/kfd', '/dev/dri/renderD200'],
    );
  });
});

describe('GPU support at node start', () => {
  test('NVIDIA GPUs need the container toolkit (a registered runtime or its hook); AMD GPUs need /dev/kfd', () => {
    const none = { hasProgram: () => false, hasDevice: () => false };
    assert.match(gpuSupportProblem([nvidia(0)], { runtimes: ['runc'], ...none }) ?? '', /NVIDIA container toolkit is missing.*nvidia-ctk runtime configure/);
    assert.equal(gpuSupportProblem([nvidia(0)], { runtimes: ['nvidia', 'runc'], ...none }), null);
    assert.equal(gpuSupportProblem([nvidia(0)], { runtimes: ['runc'], hasProgram: (p) => p === 'nvidia-container-runtime-hook' }), null);
    assert.match(gpuSupportProblem([amd(0)], { runtimes: ['runc'], ...none }) ?? '', /\/dev\/kfd is missing/);
    assert.equal(gpuSupportProblem([amd(0)], { runtimes: ['runc'], hasProgram: () => false, hasDevice: () => true }), null);
    assert.equal(gpuSupportProblem([], { runtimes: [], ...none }), null);
  });
});

describe('image references and the allow/deny lists', () => {
  test('normalized like the engine does', () => {
    assert.equal(parseImageRef('busybox').full, 'docker.io/library/busybox:latest');
    assert.equal(parseImageRef('busybox:1.36').full, 'docker.io/library/busybox:1.36');
    assert.equal(parseImageRef('pytorch/pytorch:2.3').full, 'docker.io/pytorch/pytorch:2.3');
    assert.equal(parseImageRef('ghcr.io/org/img').full, 'ghcr.io/org/img:latest');
    assert.equal(parseImageRef('localhost:5000/a/b:t').full, 'localhost:5000/a/b:t');
    const digest = `sha256:${'a'.repeat(64)}`;
    assert.deepEqual(parseImageRef(`nvcr.io/nvidia/pytorch@${digest}`), { domain: 'nvcr.io', repository: 'nvcr.io/nvidia/pytorch', digest, full: `nvcr.io/nvidia/pytorch@${digest}` });
    assert.equal(isDigestPinned(`x@${digest}`), true);
    assert.equal(isDigestPinned('x:1'), false);
  });

  test('deny wins; an empty allow list allows the rest; untagged patterns match every tag', () => {
    const policy = { allow: ['docker.io/library/*', 'ghcr.io/org/*', 'nvcr.io/nvidia/pytorch'], deny: ['busybox:1.35', 'ghcr.io/org/bad*'] };
    assert.deepEqual(checkImage('busybox:1.36', policy), { allowed: true });
    assert.deepEqual(checkImage('ghcr.io/org/team/img:1', policy), { allowed: true });
    assert.deepEqual(checkImage(`nvcr.io/nvidia/pytorch@sha256:${'b'.repeat(64)}`, policy), { allowed: true });
    assert.deepEqual(checkImage('nvcr.io/nvidia/pytorch:24.05-py3', policy), { allowed: true });
    assert.deepEqual(checkImage('busybox:1.35', policy), { allowed: false, reason: 'image docker.io/library/busybox:1.35 is denied on this node (deny pattern "busybox:1.35")' });
    assert.equal(checkImage('ghcr.io/org/bad-img', policy).allowed, false);
    assert.match((checkImage('quay.io/x/y', policy) as { reason: string }).reason, /not in this node's allow list/);
    assert.deepEqual(checkImage('anything/at:all', { allow: [], deny: [] }), { allowed: true });
    assert.equal(checkImage('busybox', { allow: ['*'], deny: [] }).allowed, true);
  });

  test('Docker Hub aliases, implicit library/ and :latest, and case are folded before matching', () => {
    assert.equal(canonicalImageRef('registry-1.docker.io/library/busybox:1.36').full, 'docker.io/library/busybox:1.36');
    assert.equal(canonicalImageRef('index.docker.io/busybox').full, 'docker.io/library/busybox:latest');
    assert.equal(canonicalImageRef('Registry.Hub.Docker.com/library/BusyBox:1.36').full, 'docker.io/library/busybox:1.36');
    assert.equal(canonicalImageRef('registry-1.docker.io/busybox').repository, 'docker.io/library/busybox');
    assert.equal(canonicalImageRef('GHCR.io/Org/Img:V1').full, 'ghcr.io/org/img:V1', 'tags keep their case');
    const deny = { allow: [], deny: ['busybox'] };
    for (const image of [
      'busybox',
      'busybox:1.36',
      'library/busybox',
      'docker.io/busybox:latest',
      'docker.io/library/busybox',
      'index.docker.io/library/busybox:1.36',
      'registry-1.docker.io/library/busybox:1.36',
      'registry-1.docker.io/busybox',
      'registry.hub.docker.com/library/busybox',
      'DOCKER.IO/library/busybox',
      `busybox@sha256:${'c'.repeat(64)}`,
      `registry-1.docker.io/library/busybox:1.36@sha256:${'c'.repeat(64)}`,
    ]) {
      assert.equal(checkImage(image, deny).allowed, false, image);
    }
    assert.equal(checkImage('ghcr.io/library/busybox', deny).allowed, true, 'another registry is another image');
    assert.equal(checkImage('busyboxx', deny).allowed, true);
    assert.equal(checkImage('registry-1.docker.io/library/busybox', { allow: ['docker.io/library/*'], deny: [] }).allowed, true, 'allow patterns fold aliases too');
  });

  test('what the reference resolved to: the id and every name the engine has for it', () => {
    const id = `sha256:51805a59db9b${'0'.repeat(52)}`;
    const busybox = { id, repoTags: ['busybox:latest', 'mytools:1'], repoDigests: [`busybox@sha256:${'d'.repeat(64)}`] };
    const deny = { allow: [], deny: ['busybox'] };
    for (const image of ['51805a59db9b', id, id.slice('sha256:'.length), 'sha256:51805a', 'mytools:1']) {
      assert.equal(checkImage(image, deny).allowed, true, `${image} passes the reference check…`);
      const v = checkResolvedImage(image, busybox, deny);
      assert.equal(v.allowed, false, `…but not the resolved one: ${image}`);
      assert.match((v as { reason: string }).reason, /^image \S+ \(id sha256:51805a59db9b, known here as busybox:latest, mytools:1, busybox@sha256:d+\) is denied on this node \(deny pattern "busybox"\)$/);
    }
    assert.equal(looksLikeImageId('51805a59db9b') && looksLikeImageId(id) && !looksLikeImageId('busybox'), true);
    assert.deepEqual(checkResolvedImage('python:3', { id, repoTags: ['python:3'], repoDigests: [] }, deny), { allowed: true });
    // Deny by id: the short id, or sha256: and any prefix of it.
    assert.equal(checkResolvedImage('python:3', { id, repoTags: ['python:3'], repoDigests: [] }, { allow: [], deny: ['51805a59db9b'] }).allowed, false);
    assert.equal(checkResolvedImage('python:3', { id, repoTags: ['python:3'], repoDigests: [] }, { allow: [], deny: ['sha256:51805a'] }).allowed, false);
    assert.equal(checkResolvedImage('python:3', { id, repoTags: ['python:3'], repoDigests: [] }, { allow: [], deny: ['51805a'] }).allowed, true, 'a short bare hex pattern is a name');
    // Allow: an id reference is allowed only through a name (or id pattern) of what it resolved to.
    const allow = { allow: ['docker.io/library/python'], deny: [] };
    assert.equal(checkImage('51805a59db9b', allow).allowed, true, 'decided after the resolution');
    assert.equal(checkResolvedImage('51805a59db9b', busybox, allow).allowed, false);
    assert.equal(checkResolvedImage('51805a59db9b', { id, repoTags: ['python:3'], repoDigests: [] }, allow).allowed, true);
    assert.match((checkResolvedImage('51805a59db9b', { id, repoTags: [], repoDigests: [] }, deny) as { reason: string }).reason, /referenced by id and has no name/);
    assert.deepEqual(checkResolvedImage('51805a59db9b', { id, repoTags: [], repoDigests: [] }, { allow: [], deny: [] }), { allowed: true }, 'no lists: nothing to check');
  });
});

describe('disk quotas', () => {
  test('measured by file size (sparse files at full size), every entry counted, links never followed', async (t) => {
    const dir = await tempDir(t);
    mkdirSync(join(dir, 'a', 'b'), { recursive: true });
    writeFileSync(join(dir, 'a', 'b', 'f'), Buffer.alloc(3000));
    writeFileSync(join(dir, 'g'), 'x');
    truncateSync(join(dir, 'g'), 10 * 1024 * 1024); // sparse: no disk used, still counted
    symlinkSync('/', join(dir, 'root-link'));
    assert.deepEqual(await measureTree(dir), { bytes: 3000 + 10 * 1024 * 1024, entries: 5, stoppedEarly: false });
    assert.equal((await measureTree(dir, { bytes: 100, entries: 1000 })).stoppedEarly, true);
    const tree = { name: 'outputs', path: dir, maxBytes: 1024 * 1024, maxEntries: 100, option: 'GPUX_NODE_MAX_OUTPUT_BYTES' };
    assert.equal(await checkQuotas([tree]), 'outputs exceeded the 1 MiB quota of this node (GPUX_NODE_MAX_OUTPUT_BYTES); the job was stopped and its outputs are not reported');
    assert.match((await checkQuotas([{ ...tree, maxBytes: 1e9, maxEntries: 4 }])) ?? '', /^outputs exceeded the quota of 4 files and dirs/);
    assert.equal(await checkQuotas([{ ...tree, maxBytes: 1e9 }]), null);
    assert.deepEqual(await measureTree(join(dir, 'missing')), { bytes: 0, entries: 0, stoppedEarly: false });
    assert.deepEqual([formatBytes(1000), formatBytes(1024), formatBytes(1536), formatBytes(10 * 1024 ** 3)], ['1000 bytes', '1 KiB', '1.5 KiB', '10 GiB']);
  });

  test('the watcher reports the first tree past its quota once, then stops checking', async (t) => {
    const dir = await tempDir(t);
    const errors: string[] = [];
    const watcher = new DiskQuotaWatcher([{ name: 'scratch', path: dir, maxBytes: 10, maxEntries: 100, option: 'X' }], 5, (e) => errors.push(e));
    watcher.start();
    await new Promise((r) => setTimeout(r, 30));
    assert.deepEqual(errors, [], 'under the quota: nothing');
    writeFileSync(join(dir, 'big'), Buffer.alloc(100));
    for (let i = 0; i < 200 && errors.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 30));
    await watcher.stop();
    assert.deepEqual(errors, ['scratch exceeded the 10 bytes quota of this node (X); the job was stopped and its outputs are not reported']);
  });
});

describe('pull progress', () => {
  test('engine messages pass through; layer progress is summarized at most once per interval', () => {
    const p = new PullProgress('busybox:1.36', 0, 1000);
    assert.deepEqual(p.update({ status: 'Pulling from library/busybox', id: '1.36' }, 0), ['image: 1.36: Pulling from library/busybox']);
    assert.deepEqual(p.update({ status: 'Pulling fs layer', id: 'aaaaaaaaaaaa' }, 10), []);
    assert.deepEqual(p.update({ status: 'Downloading', id: 'aaaaaaaaaaaa', progressDetail: { current: 1024 * 1024, total: 4 * 1024 * 1024 } }, 500), []);
    assert.deepEqual(p.update({ status: 'Downloading', id: 'bbbbbbbbbbbb', progressDetail: { current: 0, total: 2 * 1024 * 1024 } }, 1000), [
      'image: pulling busybox:1.36: 0/2 layers done, 1.0 MiB of 6.0 MiB downloaded',
    ]);
    p.update({ status: 'Pull complete', id: 'aaaaaaaaaaaa' }, 1100);
    assert.deepEqual(p.update({ status: 'Already exists', id: 'bbbbbbbbbbbb' }, 2500), ['image: pulling busybox:1.36: 2/2 layers done, 6.0 MiB of 6.0 MiB downloaded']);
    assert.deepEqual(p.update({ status: 'Digest: sha256:abc' }, 2600), ['image: Digest: sha256:abc']);
    assert.equal(PullProgress.errorOf({ error: 'x', errorDetail: { message: 'manifest unknown' } }), 'manifest unknown');
  });
});

describe('attach stream demultiplexing', () => {
  test('frames split anywhere, UTF-8 split across frames', () => {
    const frame = (type: number, data: Buffer) => {
      const header = Buffer.from([type, 0, 0, 0, 0, 0, 0, 0]);
      header.writeUInt32BE(data.length, 4);
      return Buffer.concat([header, data]);
    };
    const wörld = Buffer.from('wörld\n');
    const bytes = Buffer.concat([frame(1, Buffer.from('hello ')), frame(2, Buffer.from('oops\n')), frame(1, wörld.subarray(0, 2)), frame(1, wörld.subarray(2))]);
    const got: [string, string][] = [];
    const d = new StreamDemuxer((s, t) => got.push([s, t]));
    for (let i = 0; i < bytes.length; i += 3) d.write(bytes.subarray(i, i + 3));
    d.end();
    const text = (s: string) =>
      got
        .filter(([k]) => k === s)
        .map(([, t]) => t)
        .join('');
    assert.equal(text('stdout'), 'hello wörld\n');
    assert.equal(text('stderr'), 'oops\n');
  });
});
