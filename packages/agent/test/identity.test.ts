import assert from 'node:assert/strict';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { nodeIdFromPublicKey, signRequest, verifySignature, publicKeyFromRaw } from '@gpux/protocol';
import { KEY_FILE, loadOrCreateIdentity } from '../src/index.js';
import { tempDir } from './helpers.js';

test('created once with mode 0600 in a 0700 dir, then reused', async (t) => {
  const dir = join(await tempDir(t), 'node');
  const first = await loadOrCreateIdentity(dir);
  assert.equal(first.nodeId, nodeIdFromPublicKey(first.publicKey));
  assert.equal((await stat(join(dir, KEY_FILE))).mode & 0o777, 0o600);
  assert.equal((await stat(dir)).mode & 0o777, 0o700);
  const again = await loadOrCreateIdentity(dir);
  assert.deepEqual(again, first);

  const parts = { method: 'GET', path: '/v1/agent/work', body: '', nodeId: first.nodeId, timestamp: 1, nonce: 'n' };
  const headers = signRequest(parts, again.privateKeyPem);
  assert.ok(verifySignature(parts, headers['x-gpux-signature'] ?? '', publicKeyFromRaw(first.publicKey)));
});

test('a corrupt key file is a clear error naming the file', async (t) => {
  const dir = await tempDir(t);
  const file = join(dir, KEY_FILE);
  await writeFile(file, '{"publicKey": 1');
  await assert.rejects(loadOrCreateIdentity(dir), (e: Error) => e.message.includes(file) && /corrupt/.test(e.message));
  await writeFile(file, JSON.stringify({ publicKey: 'AAAA', privateKeyPem: 'nope' }));
  await assert.rejects(loadOrCreateIdentity(dir), (e: Error) => e.message.includes(file));
  // The file is never overwritten by a new key.
  assert.match(await readFile(file, 'utf8'), /nope/);
});

test('a key file whose public key does not match its private key is rejected', async (t) => {
  const [a, b] = [await tempDir(t), await tempDir(t)];
  const ka = await loadOrCreateIdentity(a);
  const kb = await loadOrCreateIdentity(b);
  await writeFile(join(a, KEY_FILE), JSON.stringify({ publicKey: kb.publicKey, privateKeyPem: ka.privateKeyPem }));
  await assert.rejects(loadOrCreateIdentity(a), /does not belong/);
});
