/** `{path, file}` inputs in a spec file (issue 13): resolved next to the spec, checked before anything is sent. */
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { CliError } from '../src/errors.js';
import { loadSpecFile, loadSpecWithFiles } from '../src/spec-file.js';
import { tempDir } from './helpers.js';

const spec = (inputs: unknown[]) => JSON.stringify({ name: 's', image: 'i', command: ['c'], inputs });

test('a {path, file} input is resolved relative to the spec file and stands in as a blob input until uploaded', async (t) => {
  const dir = tempDir(t);
  mkdirSync(join(dir, 'jobs'));
  writeFileSync(join(dir, 'jobs', 'data.bin'), 'twelve bytes');
  writeFileSync(join(dir, 'jobs', 'job.json'), spec([{ path: 'in.txt', content: 'x' }, { path: 'data/d.bin', file: './data.bin' }]));
  const loaded = await loadSpecWithFiles(join(dir, 'jobs', 'job.json'));
  assert.deepEqual(loaded.localInputs, [{ index: 1, path: 'data/d.bin', file: join(dir, 'jobs', 'data.bin'), size: 12 }]);
  assert.deepEqual(loaded.spec.inputs[1], { path: 'data/d.bin', blob: '0'.repeat(64), size: 12 });
  await assert.rejects(loadSpecFile(join(dir, 'jobs', 'job.json')), /has \{path, file\} inputs: submit it with `gpux job submit`/);
});

test('a missing file, a directory or extra keys are usage errors naming the input', async (t) => {
  const dir = tempDir(t);
  writeFileSync(join(dir, 'job.json'), spec([{ path: 'a', file: 'nope.bin' }, { path: 'b', file: '.' }, { path: 'c', file: 'job.json', size: 3 }]));
  const err = await loadSpecWithFiles(join(dir, 'job.json')).then(
    () => assert.fail('expected a usage error'),
    (e: unknown) => e as CliError,
  );
  assert.ok(err instanceof CliError);
  assert.match(err.message, /names local input files that cannot be uploaded/);
  const problems = JSON.stringify((err as CliError & { problems?: unknown }).problems ?? err);
  assert.match(problems, /inputs\.0\.file.*nope\.bin does not exist/);
  assert.match(problems, /inputs\.1\.file.*is not a regular file/);
  assert.match(problems, /inputs\.2.*only those two keys \(found size\)/);
});
