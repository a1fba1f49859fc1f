import assert from 'node:assert/strict';
import http from 'node:http';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { type DockerStatus, detectHardware, execFileRunner, type HostInfo, probeDocker } from '../src/index.js';
import { fixture, ok, scriptedRunner, tempDir } from './helpers.js';

const host: HostInfo = { hostname: 'box', os: 'linux 6.8.0', arch: 'x64', cpuCores: 32, memoryMb: 257_000 };
const dockerWith = (gpuRuntime: DockerStatus['gpuRuntime']) => async (): Promise<DockerStatus> => ({ available: true, version: '27.3.1', gpuRuntime, runtimes: [] });

describe('detectHardware', () => {
  test('NVIDIA host with the container toolkit registered: no problems', async () => {
    const run = scriptedRunner({ 'nvidia-smi': ok(fixture('nvidia-smi/h100x8-query.txt')) });
    const hw = await detectHardware({ run, docker: dockerWith('nvidia'), host: () => host });
    assert.equal(hw.gpus.length, 8);
    assert.deepEqual(hw.problems, []);
    assert.deepEqual(hw.docker, { available: true, version: '27.3.1', gpuRuntime: 'nvidia' });
    assert.equal(hw.cpuCores, 32);
  });

  test('NVIDIA GPUs but Docker without the NVIDIA runtime: says what to install', async () => {
    const run = scriptedRunner({ 'nvidia-smi': ok(fixture('nvidia-smi/h100x8-query.txt')) });
    const hw = await detectHardware({ run, docker: dockerWith('none'), host: () => host });
    assert.equal(hw.problems.length, 1);
    assert.match(hw.problems[0] ?? '', /^NVIDIA GPUs found but the NVIDIA container toolkit is not registered with Docker/);
    assert.equal(hw.docker.problem, hw.problems[0]);
  });

  test('AMD host: amd-smi answers, the missing nvidia-smi is no problem', async () => {
    const run = scriptedRunner({ 'amd-smi': ok(fixture('amd-smi/mi300x-x2-array-reconstructed.json')) });
    const hw = await detectHardware({ run, docker: dockerWith('amd'), host: () => host });
    assert.deepEqual(
      hw.gpus.map((g) => g.model),
      ['AMD Instinct MI300X', 'AMD Instinct MI300X'],
    );
    assert.deepEqual(hw.problems, []);
  });

  test('no GPU tools and no Docker: CPU-only node, every reason listed', async () => {
    const docker = async (): Promise<DockerStatus> => ({ available: false, gpuRuntime: 'none', runtimes: [], problem: 'Docker engine not reachable at /var/run/docker.sock: connect ENOENT' });
    const hw = await detectHardware({ run: scriptedRunner({}), docker, host: () => host });
    assert.deepEqual(hw.gpus, []);
    assert.deepEqual(hw.problems, [
      'no NVIDIA GPUs: nvidia-smi not found',
      'no AMD GPUs: amd-smi not found; rocm-smi not found',
      'Docker engine not reachable at /var/run/docker.sock: connect ENOENT',
    ]);
  });

  test('the real runner on this machine never throws', async () => {
    const hw = await detectHardware({ docker: { socketPath: '/nonexistent/docker.sock' } });
    assert.ok(hw.cpuCores >= 1);
    assert.ok(hw.memoryMb > 0);
    assert.equal(hw.docker.available, false);
    assert.ok(Array.isArray(hw.gpus));
  });
});

describe('execFileRunner', () => {
  const run = execFileRunner(1000);
  test('missing command', async () => {
    assert.deepEqual(await run('gpux-no-such-tool', []), { code: null, stdout: '', stderr: '', failure: 'not-found' });
  });
  test('failing command keeps its code and output', async () => {
    const r = await run('/bin/sh', ['-c', 'echo out; echo err >&2; exit 3']);
    assert.deepEqual(r, { code: 3, stdout: 'out\n', stderr: 'err\n' });
  });
  test('hanging command is killed at the timeout', async () => {
    const r = await run('/bin/sh', ['-c', 'sleep 30']);
    assert.equal(r.failure, 'timeout');
  });
});

describe('probeDocker over a unix socket', () => {
  async function fakeEngine(t: { after(fn: () => unknown): void }, runtimes: Record<string, unknown>): Promise<string> {
    const socketPath = join(await tempDir(t), 'docker.sock');
    const server = http.createServer((req, res) => {
      if (req.url === '/_ping') return res.end('OK');
      if (req.url === '/version') return res.end(JSON.stringify({ Version: '26.1.5+dfsg1', ApiVersion: '1.45' }));
      if (req.url === '/info') return res.end(JSON.stringify({ Runtimes: runtimes }));
      res.statusCode = 404;
      res.end();
    });
    await new Promise<void>((r) => server.listen(socketPath, r));
    t.after(() => new Promise((r) => server.close(r)));
    return socketPath;
  }

  test('engine with the nvidia runtime', async (t) => {
    const socketPath = await fakeEngine(t, { 'io.containerd.runc.v2': {}, nvidia: { path: 'nvidia-container-runtime' }, runc: {} });
    const s = await probeDocker({ socketPath, hasDevKfd: () => false });
    assert.deepEqual(s, { available: true, version: '26.1.5+dfsg1', gpuRuntime: 'nvidia', runtimes: ['io.containerd.runc.v2', 'nvidia', 'runc'] });
  });

  test('engine without GPU runtime; AMD when /dev/kfd exists', async (t) => {
    const socketPath = await fakeEngine(t, { runc: {} });
    assert.equal((await probeDocker({ socketPath, hasDevKfd: () => false })).gpuRuntime, 'none');
    assert.equal((await probeDocker({ socketPath, hasDevKfd: () => true })).gpuRuntime, 'amd');
  });

  test('DOCKER_HOST over tcp is reported, not followed', async () => {
    const s = await probeDocker({ env: { DOCKER_HOST: 'tcp://10.0.0.1:2375' } });
    assert.equal(s.available, false);
    assert.match(s.problem ?? '', /not a unix socket/);
  });

  test('no engine', async () => {
    const s = await probeDocker({ socketPath: '/nonexistent/docker.sock' });
    assert.equal(s.available, false);
    assert.match(s.problem ?? '', /^Docker engine not reachable at \/nonexistent\/docker.sock: /);
  });
});
