import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { test } from 'node:test';
import { ProcessExecutor } from '../src/index.js';
import { executorConformance, request, run } from './executor-conformance.js';
import { tempDir } from './helpers.js';

executorConformance('process', async (t) => ({
  executor: new ProcessExecutor({ allowUnsafe: true, workRoot: await tempDir(t), killGraceMs: 1000 }),
  shell: (script) => ['/bin/sh', '-c', script],
}));

test('refuses to exist without the explicit opt-in, and says how to opt in', async (t) => {
  const workRoot = await tempDir(t);
  assert.throws(() => new ProcessExecutor({ allowUnsafe: false, workRoot }), (e: Error & { code?: string }) => {
    return e.code === 'FORBIDDEN' && /untrusted/.test(e.message) && /--allow-unsafe-process/.test(e.message);
  });
});

test('the work dir is removed after the attempt', async (t) => {
  const workRoot = await tempDir(t);
  const h = { executor: new ProcessExecutor({ allowUnsafe: true, workRoot }), shell: (s: string) => ['/bin/sh', '-c', s] };
  const { outcome, logs } = await run(h, request(h, { command: h.shell('pwd; echo x > "$GPUX_OUTPUTS/o"'), inputs: [{ path: 'i', content: 'x' }] }));
  assert.equal(outcome.outcome, 'succeeded');
  assert.ok(!existsSync(logs.stdout.trim()), 'work dir still exists');
  assert.deepEqual(await readdir(workRoot), []);
});

test('outputs over the size cap fail the attempt with a clear error', async (t) => {
  const workRoot = await tempDir(t);
  const executor = new ProcessExecutor({ allowUnsafe: true, workRoot, limits: { totalBytes: 1000 } });
  const h = { executor, shell: (s: string) => ['/bin/sh', '-c', s] };
  const { outcome } = await run(h, request(h, { command: h.shell('head -c 2000 /dev/zero > "$GPUX_OUTPUTS/big"') }));
  assert.equal(outcome.outcome, 'failed');
  assert.equal(outcome.exitCode, 0);
  assert.equal(outcome.error, 'outputs are 2000 bytes, more than the limit of 1000 bytes');
  assert.deepEqual(outcome.outputs, []);
});

test('an output file name the coordinator would refuse (a control character) fails the attempt with a clear error', async (t) => {
  const workRoot = await tempDir(t);
  const h = { executor: new ProcessExecutor({ allowUnsafe: true, workRoot }), shell: (s: string) => ['/bin/sh', '-c', s] };
  const { outcome } = await run(h, request(h, { command: h.shell('printf x > "$GPUX_OUTPUTS/$(printf \'a\\033[2Jb\')"') }));
  assert.equal(outcome.outcome, 'failed');
  assert.match(outcome.error ?? '', /^output file "a\\u001b\[2Jb" has a name outputs may not have \(must not contain control characters\); rename it$/);
  assert.deepEqual(outcome.outputs, []);
});

test('inline content stops at the running total; symlinks are not followed', async (t) => {
  const workRoot = await tempDir(t);
  const executor = new ProcessExecutor({ allowUnsafe: true, workRoot, limits: { inlineTotalBytes: 15 } });
  const h = { executor, shell: (s: string) => ['/bin/sh', '-c', s] };
  const script = 'cd "$GPUX_OUTPUTS"; printf 0123456789 > a; printf 0123456789 > b; ln -s /etc/passwd leak';
  const { outcome } = await run(h, request(h, { command: h.shell(script) }));
  assert.equal(outcome.outcome, 'succeeded');
  assert.deepEqual(
    outcome.outputs.map((o) => [o.path, o.content !== undefined]),
    [
      ['a', true],
      ['b', false],
    ],
  );
});

test('a job killed by a signal it did not get from us: failed, no exit code', async (t) => {
  const h = { executor: new ProcessExecutor({ allowUnsafe: true, workRoot: await tempDir(t) }), shell: (s: string) => ['/bin/sh', '-c', s] };
  const { outcome } = await run(h, request(h, { command: h.shell('kill -9 $$') }));
  assert.equal(outcome.outcome, 'failed');
  assert.equal(outcome.exitCode, null);
  assert.equal(outcome.error, 'killed by signal SIGKILL');
});
