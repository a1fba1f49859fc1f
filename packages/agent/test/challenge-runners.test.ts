/**
 * Challenge runners (issue 12). The cpu runner computes in a worker and its reveals pass core's checks. The
 * nvidia-torch runner cannot run here (no GPU, no torch): its script is checked statically (TF32 off, exact
 * float32, device order), its generator and whole protocol are run with the script's numpy backend when
 * python3 and numpy exist — the same code but for the torch calls — and the runner choice is tested with a
 * scripted probe.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { blockLeaves, entryAt, generateMatrix, matrixKey, merkleLayers, merkleRoot, multiplyInt, productDigest } from '@gpux/core';
import {
  chooseChallengeRunner,
  CpuChallengeRunner,
  DEFAULT_CHALLENGE_IMAGE,
  NVIDIA_TORCH_SCRIPT,
  NvidiaTorchChallengeRunner,
  nvidiaTorchCommand,
  runChallenge,
  silentLogger,
  TORCH_PROBE,
} from '../src/index.js';
import { assignment, CheckingCoordinator } from './challenge-helpers.js';
import { notFound, ok, scriptedRunner } from './helpers.js';

const digestsOf = (a: ReturnType<typeof assignment>, gpu: number) =>
  Array.from({ length: a.products }, (_, p) => productDigest(multiplyInt(generateMatrix(a.seed, gpu, p, 'A', a.n), generateMatrix(a.seed, gpu, p, 'B', a.n), a.n), a.n, a.rowBlock));

function numpyAvailable(): string | null {
  try {
    execFileSync('python3', ['-c', 'import numpy'], { stdio: 'ignore', timeout: 20_000 });
    return null;
  } catch {
    return 'python3 with numpy is not installed here: the nvidia-torch script protocol test needs it';
  }
}

describe('cpu challenge runner', () => {
  test('an honest CPU node: digests equal core’s, and the reveal passes Merkle and Freivalds', async () => {
    const a = assignment();
    const coord = new CheckingCoordinator(a);
    const verdict = await runChallenge(a, { client: coord, runner: new CpuChallengeRunner(), logger: silentLogger, signal: new AbortController().signal });
    assert.deepEqual(coord.digests?.gpus.map((g) => g.index), [0]);
    assert.deepEqual(coord.digests?.gpus[0]?.digests, digestsOf(a, 0));
    assert.equal(coord.digests?.runner, 'cpu');
    assert.ok(coord.reveal.length >= 2);
    assert.equal(verdict?.outcome, 'passed', verdict?.reason ?? '');
    assert.equal(verdict?.provenClass, 'cpu');
  });

  test('a node claiming GPUs on the cpu runner computes each in turn (and recomputes rows when too big to keep)', async () => {
    const a = assignment({ gpuIndices: [0, 2], n: 24, products: 2, rowBlock: 5 });
    const run = await new CpuChallengeRunner().run(a, new AbortController().signal);
    try {
      assert.deepEqual(run.gpus.map((g) => g.index), [0, 2]);
      assert.deepEqual(run.gpus[1]?.digests, digestsOf(a, 2));
      const [block] = await run.reveal([{ gpu: 2, product: 1, block: 4 }]);
      assert.equal(Buffer.from(block!.data, 'base64').length, 4 * 24 * 4); // the short last block: rows 20..23
    } finally {
      await run.dispose();
    }
  });

  test('an aborted challenge frees the worker and rejects', async () => {
    const ctl = new AbortController();
    const p = new CpuChallengeRunner().run(assignment({ n: 256, products: 200 }), ctl.signal);
    setTimeout(() => ctl.abort(), 50);
    await assert.rejects(p, /aborted|exited/);
  });
});

describe('nvidia-torch challenge runner', () => {
  const script = readFileSync(NVIDIA_TORCH_SCRIPT, 'utf8');

  test('the script keeps float32 exact: TF32 and reduced-precision reductions off, highest matmul precision (static check: no GPU here)', () => {
    assert.match(script, /torch\.backends\.cuda\.matmul\.allow_tf32 = False/);
    assert.match(script, /torch\.backends\.cudnn\.allow_tf32 = False/);
    assert.match(script, /allow_fp16_reduced_precision_reduction = False/);
    assert.match(script, /set_float32_matmul_precision\("highest"\)/);
    assert.match(script, /dtype=t\.float32/);
    assert.match(script, /barrier\.wait\(\)/, 'all GPUs start together');
  });

  test('runs on the host python or in a container with every GPU, no network and the script read-only', () => {
    assert.deepEqual(nvidiaTorchCommand({ kind: 'host', python: '/opt/py/bin/python3' }, 'x', '/s.py'), { command: '/opt/py/bin/python3', args: ['-u', '/s.py'] });
    const d = nvidiaTorchCommand({ kind: 'docker', image: DEFAULT_CHALLENGE_IMAGE }, 'gpux-challenge-1', '/s.py');
    assert.equal(d.command, 'docker');
    for (const want of [['--gpus', 'all'], ['--network', 'none'], ['--name', 'gpux-challenge-1'], ['-v', '/s.py:/gpux/challenge.py:ro'], ['-e', 'CUDA_DEVICE_ORDER=PCI_BUS_ID']]) {
      const i = d.args.indexOf(want[0]!);
      assert.ok(i >= 0 && d.args[i + 1] === want[1], want.join(' '));
    }
  });

  test('the script’s generator is core’s, bit for bit (numpy int64, as torch computes it)', (t) => {
    const skip = numpyAvailable();
    if (skip) return t.skip(skip);
    const code = `import importlib.util, json, numpy as np
spec = importlib.util.spec_from_file_location('c', ${JSON.stringify(NVIDIA_TORCH_SCRIPT)}); m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
out = []
for seed, g, p, w in [('ff' * 32, 3, 7, 'A'), ('0123456789abcdef' * 4, 0, 4095, 'B'), ('00' * 32, 63, 0, 'A')]:
    k = m.matrix_key(seed, g, p, w)
    idx = np.array([0, 1, 2, 1000, 2**20 + 17, 2**32 - 1], dtype=np.int64)
    out.append([list(k), m.entries(idx, *k).tolist()])
print(json.dumps(out))`;
    const got = JSON.parse(execFileSync('python3', ['-c', code], { encoding: 'utf8' })) as [number[], number[]][];
    const cases: [string, number, number, 'A' | 'B'][] = [
      ['ff'.repeat(32), 3, 7, 'A'],
      ['0123456789abcdef'.repeat(4), 0, 4095, 'B'],
      ['00'.repeat(32), 63, 0, 'A'],
    ];
    cases.forEach(([seed, g, p, w], i) => {
      const k = matrixKey(seed, g, p, w);
      assert.deepEqual(got[i]![0], k);
      assert.deepEqual(got[i]![1], [0, 1, 2, 1000, 2 ** 20 + 17, 2 ** 32 - 1].map((idx) => entryAt(k[0], k[1], idx)));
    });
  });

  test('the script’s whole protocol (numpy backend): digests equal core’s, reveals pass core’s checks', async (t) => {
    const skip = numpyAvailable();
    if (skip) return t.skip(skip);
    const a = assignment({ gpuIndices: [0, 1], n: 40, products: 3, rowBlock: 6 });
    const coord = new CheckingCoordinator(a);
    const runner = new NvidiaTorchChallengeRunner({ kind: 'host', python: 'python3' }, silentLogger, { GPUX_CHALLENGE_BACKEND: 'numpy' });
    const verdict = await runChallenge(a, { client: coord, runner, logger: silentLogger, signal: new AbortController().signal });
    assert.deepEqual(coord.digests?.gpus[1]?.digests, digestsOf(a, 1));
    assert.equal(coord.digests?.gpus[0]?.digests[2], merkleRoot(merkleLayers(blockLeaves(multiplyInt(generateMatrix(a.seed, 0, 2, 'A', a.n), generateMatrix(a.seed, 0, 2, 'B', a.n), a.n), a.n, a.rowBlock))));
    assert.equal(verdict?.outcome, 'passed', verdict?.reason ?? '');
  });

  test('a script that cannot start fails the run with the reason', async () => {
    const runner = new NvidiaTorchChallengeRunner({ kind: 'host', python: '/nonexistent/python3' });
    await assert.rejects(runner.run(assignment(), new AbortController().signal), /could not start|exited/);
  });
});

describe('choosing the runner', () => {
  const nvidiaGpu = { index: 0, uuid: 'GPU-1', vendor: 'nvidia' as const, model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 };
  const choose = (o: Partial<Parameters<typeof chooseChallengeRunner>[0]>, probe = notFound) =>
    chooseChallengeRunner({ setting: 'auto', gpus: [], dockerGpuRuntime: 'none', logger: silentLogger, run: scriptedRunner({ python3: probe }), ...o });

  test('auto: cpu without NVIDIA GPUs; nvidia-torch on the host when torch sees CUDA; in a container otherwise; cpu as the last resort', async () => {
    assert.equal((await choose({})).kind, 'cpu');
    const host = await choose({ gpus: [nvidiaGpu] }, ok(''));
    assert.equal(host.kind, 'nvidia-torch');
    const docker = await choose({ gpus: [nvidiaGpu], dockerGpuRuntime: 'nvidia' });
    assert.equal(docker.kind, 'nvidia-torch');
    assert.equal((await choose({ gpus: [nvidiaGpu] })).kind, 'cpu');
    assert.equal((await choose({ gpus: [nvidiaGpu], setting: 'cpu' }, ok(''))).kind, 'cpu');
    const probe = scriptedRunner({ python3: ok('') });
    await chooseChallengeRunner({ setting: 'nvidia-torch', gpus: [nvidiaGpu], dockerGpuRuntime: 'none', logger: silentLogger, run: probe });
    assert.deepEqual(probe.calls, [['python3', '-c', TORCH_PROBE]]);
  });
});
