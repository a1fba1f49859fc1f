/** Writing job outputs: paths cannot escape the directory and every sha256 is checked. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { outputRootDigest } from '@gpux/protocol';
import { safeTarget, verifyOutputDigest, writeOutputs } from '../src/job-outputs.js';
import { tempDir } from './helpers.js';

const file = (path: string, text: string) => ({
  path,
  size: Buffer.byteLength(text),
  sha256: createHash('sha256').update(text).digest('hex'),
  content: Buffer.from(text).toString('base64'),
});

describe('job outputs', () => {
  test('writes nested files and verifies the digest', (t) => {
    const dir = tempDir(t);
    const outputs = [file('a.txt', 'hello\n'), file('deep/b.txt', 'b')];
    assert.equal(verifyOutputDigest(outputs, outputRootDigest(outputs)), true);
    assert.equal(verifyOutputDigest(outputs, 'f'.repeat(64)), false);
    const res = writeOutputs(join(dir, 'out'), outputs);
    assert.deepEqual(
      res.written.map((w) => w.path),
      ['a.txt', 'deep/b.txt'],
    );
    assert.equal(readFileSync(join(dir, 'out', 'deep', 'b.txt'), 'utf8'), 'b');
  });

  test('refuses paths that escape the directory', (t) => {
    const root = tempDir(t);
    for (const bad of ['../x', '/etc/passwd', 'a/../../x', '.', '']) assert.throws(() => safeTarget(root, bad), /refusing to write output/, bad);
    assert.equal(safeTarget(root, 'a/b'), join(root, 'a', 'b'));
    assert.throws(() => writeOutputs(root, [file('../escape.txt', 'x')]), /outside/);
  });

  test('refuses to follow a symlink planted in the directory', (t) => {
    const root = tempDir(t);
    const elsewhere = tempDir(t);
    mkdirSync(join(root, 'out'));
    symlinkSync(elsewhere, join(root, 'out', 'link'));
    assert.throws(() => writeOutputs(join(root, 'out'), [file('link/x.txt', 'x')]), /leads outside/);
  });

  test('a corrupt file is refused; a file without inline content is skipped', (t) => {
    const dir = tempDir(t);
    const bad = { ...file('a.txt', 'hello'), sha256: '0'.repeat(64) };
    assert.throws(() => writeOutputs(dir, [bad]), /output "a.txt" is corrupt/);
    const { content: _, ...big } = file('big.bin', 'x');
    assert.deepEqual(writeOutputs(dir, [big]).skipped, ['big.bin']);
  });
});
