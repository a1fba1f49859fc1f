/** `gpux node start` against a coordinator that is not the one the node is enrolled with: exits non-zero with the reason (issue 19). */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { main } from '@gpux/cli';
import { coordinatorKey, testKey } from './coordinator-seal.js';
import { FakeCoordinator } from './fake-coordinator.js';
import { tempDir } from './helpers.js';

test('gpux node start refuses a coordinator that signs with another key, and exits 1 saying why', async (t) => {
  const dir = await tempDir(t);
  const impostor = await new FakeCoordinator({ key: coordinatorKey() }).listen(t);
  let out = '';
  let err = '';
  const io = { out: { write: (s: string) => (out += s) }, err: { write: (s: string) => (err += s) }, env: { GPUX_HOME: dir }, exitCode: 0 };
  const args = ['node', 'start', '--coordinator', impostor.url, '--enrollment-token', `gpux_enroll_secret.${testKey.keyId}`, '--executor', 'simulated', '--data-dir', join(dir, 'node'), '--log-level', 'silent'];
  const code = await main(['node', 'gpux', ...args], io);
  assert.equal(code, 1, `${out}\n${err}`);
  assert.match(err, new RegExp(`^error: the coordinator at ${impostor.url} is not the one this node is enrolled with: it signs with key ${impostor.key.keyId.slice(0, 16)}…`));
  assert.equal(impostor.started.length, 0);
});
