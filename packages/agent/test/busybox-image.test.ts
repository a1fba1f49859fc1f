/** The busybox image's parts that need no engine: the static-binary check and the root filesystem archive (read back by tar). */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { busyboxRootfs, findStaticBusybox, isStaticElf, tarArchive } from '../src/index.js';

test('a dynamically linked program is not static; a non-ELF file is neither', () => {
  assert.equal(isStaticElf(readFileSync(process.execPath)), false);
  assert.equal(isStaticElf(Buffer.from('#!/bin/sh\necho hi\n'.padEnd(200))), false);
});

test('the host busybox, when there is one, is found and static', (t) => {
  const found = findStaticBusybox();
  if ('problem' in found) return t.skip(found.problem);
  assert.equal(isStaticElf(readFileSync(found.path)), true);
  assert.match(found.version, /^BusyBox v\d/);
});

test('the root filesystem archive: busybox, applet links, passwd with nobody, /tmp sticky, readable by tar', () => {
  const archive = busyboxRootfs(Buffer.from('fake busybox'), ['sh', 'echo']);
  const listing = spawnSync('tar', ['-tvf', '-'], { input: archive, encoding: 'utf8' });
  assert.equal(listing.status, 0, listing.stderr);
  const lines = listing.stdout.trim().split('\n');
  assert.ok(lines.some((l) => /^-rwxr-xr-x root\/root\s+12 .* usr\/bin\/busybox$/.test(l)), listing.stdout);
  assert.ok(lines.some((l) => /^lrwxrwxrwx .* bin\/sh -> \/usr\/bin\/busybox$/.test(l)), listing.stdout);
  assert.ok(lines.some((l) => /^drwxrwxrwt .* tmp\/$/.test(l)), listing.stdout);
  const passwd = spawnSync('tar', ['-xOf', '-', 'etc/passwd'], { input: archive, encoding: 'utf8' });
  assert.match(passwd.stdout, /^nobody:x:65534:65534:/m);
});

test('tar: file contents survive, padded to 512-byte blocks', () => {
  const data = Buffer.alloc(700, 7);
  const archive = tarArchive([{ type: 'file', path: 'a/b.bin', data }]);
  assert.equal(archive.length % 512, 0);
  const out = spawnSync('tar', ['-xOf', '-', 'a/b.bin'], { input: archive });
  assert.deepEqual(out.stdout, data);
});
