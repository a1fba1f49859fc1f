/** requireComponent and tempDir: the skip-or-fail rule and throwaway directories. */
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { requireComponent, tempDir } from '../src/index.js';

function withEnv<T>(value: string | undefined, fn: () => T): T {
  const before = process.env.GPUX_REQUIRE_ALL;
  if (value === undefined) delete process.env.GPUX_REQUIRE_ALL;
  else process.env.GPUX_REQUIRE_ALL = value;
  try {
    return fn();
  } finally {
    if (before === undefined) delete process.env.GPUX_REQUIRE_ALL;
    else process.env.GPUX_REQUIRE_ALL = before;
  }
}

test('an available component never skips', () => {
  assert.deepEqual(
    withEnv(undefined, () => requireComponent('docker', true, 'dockerd answers')),
    { skip: false },
  );
  assert.deepEqual(
    withEnv('1', () => requireComponent('docker', true, 'dockerd answers')),
    { skip: false },
  );
});

test('a missing component is skipped with its reason locally', () => {
  const r = withEnv(undefined, () => requireComponent('docker', false, 'no dockerd socket'));
  assert.equal(typeof r.skip, 'string');
  assert.match(r.skip as string, /docker.*no dockerd socket/);
  assert.equal(typeof withEnv('0', () => requireComponent('docker', false, 'x')).skip, 'string');
});

test('under GPUX_REQUIRE_ALL=1 a missing component is a failure, never a skip', () => {
  assert.throws(() => withEnv('1', () => requireComponent('chromium', false, 'not installed')), /chromium.*not installed.*GPUX_REQUIRE_ALL=1/);
});

test('tempDir creates a directory and cleanup removes it with its contents', async () => {
  const d = tempDir('gpux test/dir');
  assert.ok(existsSync(d.path));
  writeFileSync(join(d.path, 'f.txt'), 'x');
  await d.cleanup();
  assert.equal(existsSync(d.path), false);
  await d.cleanup(); // twice is fine
});
