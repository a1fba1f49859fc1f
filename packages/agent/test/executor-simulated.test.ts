import assert from 'node:assert/strict';
import { test } from 'node:test';
import { outputRootDigest } from '@gpux/protocol';
import { SimulatedExecutor } from '../src/index.js';
import { request, run } from './executor-conformance.js';

const h = { executor: new SimulatedExecutor(), shell: (s: string) => ['sh', '-c', s] };

test('sleeps for GPUX_SIM_SECONDS, logs a line, succeeds with no outputs', async () => {
  const { outcome, logs } = await run(h, request(h, { command: ['train'], env: { GPUX_SIM_SECONDS: '0.05' } }, [0, 1]));
  assert.equal(outcome.outcome, 'succeeded');
  assert.equal(outcome.exitCode, 0);
  assert.deepEqual(outcome.outputs, []);
  assert.equal(outcome.outputDigest, outputRootDigest([]));
  assert.match(logs.stdout, /simulated run of train on GPUs \[0,1\]/);
  assert.ok(outcome.durationMs >= 40);
});

test('GPUX_SIM_EXIT_CODE injects a failure', async () => {
  const { outcome } = await run(h, request(h, { command: ['x'], env: { GPUX_SIM_SECONDS: '0', GPUX_SIM_EXIT_CODE: '3' } }));
  assert.deepEqual([outcome.outcome, outcome.exitCode, outcome.error], ['failed', 3, 'exited with code 3']);
});

test('longer than the timeout: runs until the timeout, then fails as timed out', async () => {
  const { outcome } = await run(h, request(h, { command: ['x'], env: { GPUX_SIM_SECONDS: '3600' }, timeoutSeconds: 1 }));
  assert.deepEqual([outcome.outcome, outcome.exitCode, outcome.error], ['failed', null, 'timed out after 1 s']);
});

test('stoppable', async () => {
  const execution = await h.executor.start(request(h, { command: ['x'], env: { GPUX_SIM_SECONDS: '3600' } }), () => {});
  await execution.stop('cancelled');
  const outcome = await execution.done;
  assert.deepEqual([outcome.outcome, outcome.exitCode], ['cancelled', null]);
});
