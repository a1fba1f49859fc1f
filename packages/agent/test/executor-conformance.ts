/**
 * The Executor conformance suite: every executor (process, docker) must pass it: the same jobs, the same observable results.
 * Call `executorConformance(name, factory)` from a *.test.ts file; the factory builds a fresh harness per test.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, test } from 'node:test';
import type { ExecutionOutcome, ExecutionRequest, Executor } from '@gpux/core';
import { JobSpec, type JobSpecInput, outputRootDigest } from '@gpux/protocol';

export interface ExecutorHarness {
  executor: Executor;
  /** Wraps a POSIX sh script into this executor's command, e.g. ['/bin/sh', '-c', script]. */
  shell(script: string): string[];
  /** Image for the spec (docker); the process executor ignores it. */
  image?: string;
  /**
   * What the GPU visibility variables hold inside the job for these host GPUs. Default: each holds the host
   * indices ("1,3"). A container sees only its GPUs, renumbered from 0, and NVIDIA_VISIBLE_DEVICES names their UUIDs.
   */
  gpuEnv?(indices: number[], uuids: string[]): GpuEnv;
}

export interface GpuEnv {
  CUDA_VISIBLE_DEVICES: string;
  NVIDIA_VISIBLE_DEVICES: string;
  ROCR_VISIBLE_DEVICES: string;
  HIP_VISIBLE_DEVICES: string;
}

const hostIndices = (indices: number[]): GpuEnv => {
  const v = indices.join(',');
  return { CUDA_VISIBLE_DEVICES: v, NVIDIA_VISIBLE_DEVICES: v, ROCR_VISIBLE_DEVICES: v, HIP_VISIBLE_DEVICES: v };
};

type TestContext = { after(fn: () => unknown): void };
export type HarnessFactory = (t: TestContext) => Promise<ExecutorHarness>;

export interface Captured {
  stdout: string;
  stderr: string;
  system: string;
}

let seq = 0;

export function request(h: ExecutorHarness, spec: Partial<JobSpecInput> & Pick<JobSpecInput, 'command'>, gpuIndices: number[] = []): ExecutionRequest {
  seq++;
  return {
    attemptId: `a-conformance-${process.pid}-${seq}`,
    jobId: `j-conformance-${seq}`,
    spec: JobSpec.parse({ name: 'conformance', image: h.image ?? 'busybox', ...spec }),
    gpuIndices,
    gpuUuids: gpuIndices.map((i) => `GPU-test-${i}`),
  };
}

export async function run(
  h: ExecutorHarness,
  req: ExecutionRequest,
): Promise<{ outcome: ExecutionOutcome; logs: Captured; events: { type: string; data: Record<string, unknown> }[] }> {
  const logs: Captured = { stdout: '', stderr: '', system: '' };
  const events: { type: string; data: Record<string, unknown> }[] = [];
  const execution = await h.executor.start(
    req,
    (stream, data) => {
      logs[stream] += data;
    },
    (type, data) => events.push({ type, data }),
  );
  return { outcome: await execution.done, logs, events };
}

const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

export function executorConformance(name: string, factory: HarnessFactory): void {
  describe(`Executor conformance: ${name}`, () => {
    test('success: exit 0, stdout and stderr captured', async (t) => {
      const h = await factory(t);
      const { outcome, logs } = await run(h, request(h, { command: h.shell('echo hello; echo "héllo wörld" >&2; printf "no newline"') }));
      assert.equal(outcome.outcome, 'succeeded');
      assert.equal(outcome.exitCode, 0);
      assert.equal(outcome.error, null);
      assert.equal(logs.stdout, 'hello\nno newline');
      assert.equal(logs.stderr, 'héllo wörld\n');
      assert.deepEqual(outcome.outputs, []);
      assert.equal(outcome.outputDigest, outputRootDigest([]));
      assert.ok(outcome.durationMs >= 0);
    });

    test('inputs are readable at GPUX_INPUTS (utf8 and base64, nested paths)', async (t) => {
      const h = await factory(t);
      const inputs = [
        { path: 'hello.txt', content: 'hi there\n' },
        { path: 'data/bytes.bin', content: Buffer.from([0, 1, 2, 255]).toString('base64'), encoding: 'base64' as const },
      ];
      const { outcome, logs } = await run(h, request(h, { command: h.shell('cat "$GPUX_INPUTS/hello.txt"; od -An -tu1 "$GPUX_INPUTS/data/bytes.bin"'), inputs }));
      assert.equal(outcome.outcome, 'succeeded', logs.stderr);
      assert.match(logs.stdout, /^hi there\n/);
      assert.deepEqual(logs.stdout.split('\n')[1]?.trim().split(/\s+/), ['0', '1', '2', '255']);
    });

    test('outputs are collected recursively with sha256, inline content and the root digest', async (t) => {
      const h = await factory(t);
      const script = 'printf "result" > "$GPUX_OUTPUTS/out.txt"; mkdir -p "$GPUX_OUTPUTS/sub/deeper"; printf "x%.0s" $(seq 1 10) > "$GPUX_OUTPUTS/sub/deeper/x.txt"; : > "$GPUX_OUTPUTS/empty"';
      const { outcome, logs } = await run(h, request(h, { command: h.shell(script) }));
      assert.equal(outcome.outcome, 'succeeded', logs.stderr);
      const expected = [
        { path: 'empty', size: 0, sha256: sha256(''), content: '' },
        { path: 'out.txt', size: 6, sha256: sha256('result'), content: Buffer.from('result').toString('base64') },
        { path: 'sub/deeper/x.txt', size: 10, sha256: sha256('x'.repeat(10)), content: Buffer.from('x'.repeat(10)).toString('base64') },
      ];
      assert.deepEqual(outcome.outputs, expected);
      assert.equal(outcome.outputDigest, outputRootDigest(expected));
    });

    test('a file over 1 MiB is hashed but not inlined', async (t) => {
      const h = await factory(t);
      const { outcome } = await run(h, request(h, { command: h.shell('head -c 1100000 /dev/zero > "$GPUX_OUTPUTS/big.bin"') }));
      assert.equal(outcome.outcome, 'succeeded');
      assert.deepEqual(outcome.outputs, [{ path: 'big.bin', size: 1_100_000, sha256: sha256(Buffer.alloc(1_100_000)) }]);
    });

    test('non-zero exit: failed with that exit code', async (t) => {
      const h = await factory(t);
      const { outcome, logs } = await run(h, request(h, { command: h.shell('echo failing >&2; exit 42') }));
      assert.equal(outcome.outcome, 'failed');
      assert.equal(outcome.exitCode, 42);
      assert.equal(logs.stderr, 'failing\n');
    });

    test('timeout: the job and its children are killed, failed with no exit code', async (t) => {
      const h = await factory(t);
      const started = Date.now();
      const { outcome } = await run(h, request(h, { command: h.shell('echo start; sleep 60 & sleep 60; wait'), timeoutSeconds: 1 }));
      assert.equal(outcome.outcome, 'failed');
      assert.equal(outcome.exitCode, null);
      assert.equal(outcome.error, 'timed out after 1 s');
      assert.ok(Date.now() - started < 30_000, 'the background sleep must not keep the attempt alive');
    });

    test('stop: cancelled with no exit code; stopping twice is safe', async (t) => {
      const h = await factory(t);
      let out = '';
      const execution = await h.executor.start(request(h, { command: h.shell('echo ready; sleep 60') }), (s, d) => {
        if (s === 'stdout') out += d;
      });
      const deadline = Date.now() + 20_000;
      while (!out.includes('ready') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await Promise.all([execution.stop('cancelled'), execution.stop('cancelled')]);
      const outcome = await execution.done;
      assert.equal(outcome.outcome, 'cancelled');
      assert.equal(outcome.exitCode, null);
      await execution.stop('shutdown'); // after the end: a no-op
    });

    test('a command that does not exist: failed, no exit code, the error names it', async (t) => {
      const h = await factory(t);
      const { outcome } = await run(h, request(h, { command: ['gpux-no-such-command', '--flag'] }));
      assert.equal(outcome.outcome, 'failed');
      assert.equal(outcome.exitCode, null);
      assert.match(outcome.error ?? '', /gpux-no-such-command/);
    });

    test('spec env and the gpux variables reach the job', async (t) => {
      const h = await factory(t);
      const req = request(h, { command: h.shell('echo "$FOO|$GPUX_JOB_ID|$GPUX_ATTEMPT_ID|$GPUX_INPUTS|$GPUX_OUTPUTS"'), env: { FOO: 'bar baz' } });
      const { outcome, logs } = await run(h, req);
      assert.equal(outcome.outcome, 'succeeded');
      const [foo, job, attempt, inputs, outputs] = logs.stdout.trim().split('|');
      assert.deepEqual([foo, job, attempt], ['bar baz', req.jobId, req.attemptId]);
      assert.match(inputs ?? '', /inputs$/);
      assert.match(outputs ?? '', /outputs$/);
    });

    test('GPU visibility variables hold the assigned GPUs (and are empty for none)', async (t) => {
      const h = await factory(t);
      // The last field tells "set to empty" from "unset" (sh's ${VAR+set}).
      const script = ['echo "$CUDA_VISIBLE_DEVICES;$NVIDIA_VISIBLE_DEVICES;$ROCR_VISIBLE_DEVICES;$HIP_VISIBLE_DEVICES;', '$', '{CUDA_VISIBLE_DEVICES+set}"'].join('');
      const req = request(h, { command: h.shell(script), env: { CUDA_VISIBLE_DEVICES: '0,1,2,3' } }, [1, 3]);
      const withGpus = await run(h, req);
      const v = (h.gpuEnv ?? hostIndices)(req.gpuIndices, req.gpuUuids);
      assert.equal(withGpus.logs.stdout.trim(), `${v.CUDA_VISIBLE_DEVICES};${v.NVIDIA_VISIBLE_DEVICES};${v.ROCR_VISIBLE_DEVICES};${v.HIP_VISIBLE_DEVICES};set`);
      const none = await run(h, request(h, { command: h.shell(script) }, []));
      assert.equal(none.logs.stdout.trim(), ';;;;set');
    });
  });
}
