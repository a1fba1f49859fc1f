/** Abuse suite, issue 10 item 14 (node side): the node's data dir, key and work dirs are private, whatever the umask. */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { systemClock } from '@gpux/core';
import { secureNodeDataDir } from '../src/data-dir-modes.js';
import { createExecutor, KEY_FILE, loadAgentConfig, loadOrCreateIdentity, silentLogger } from '../src/index.js';
import { tempDir } from './helpers.js';

const mode = (path: string) => statSync(path).mode & 0o777;

describe('node data dir modes', () => {
  test('a new identity: the dir 0700 and the key 0600, even under umask 000', async (t) => {
    const dataDir = join(await tempDir(t), 'node');
    const before = process.umask(0);
    try {
      await loadOrCreateIdentity(dataDir);
    } finally {
      process.umask(before);
    }
    assert.equal(mode(dataDir), 0o700);
    assert.equal(mode(join(dataDir, KEY_FILE)), 0o600);
  });

  test('an existing dir 0755, key 0644 and work dir 0777: tightened at start, one notice each', async (t) => {
    const dataDir = join(await tempDir(t), 'node');
    await loadOrCreateIdentity(dataDir);
    mkdirSync(join(dataDir, 'work'));
    chmodSync(dataDir, 0o755);
    chmodSync(join(dataDir, KEY_FILE), 0o644);
    chmodSync(join(dataDir, 'work'), 0o777);
    const notices: string[] = [];
    await secureNodeDataDir(dataDir, (m) => notices.push(m));
    assert.deepEqual([mode(dataDir), mode(join(dataDir, KEY_FILE)), mode(join(dataDir, 'work'))], [0o700, 0o600, 0o700]);
    assert.equal(notices.length, 3);
    assert.match(notices[1] ?? '', /node-key\.json was open to other local users \(mode 0644\); now 0600$/);
    const again: string[] = [];
    await secureNodeDataDir(dataDir, (m) => again.push(m));
    assert.deepEqual(again, [], 'nothing left to fix');
  });

  test('the executor’s work root is made 0700 whatever the umask', async (t) => {
    const dataDir = join(await tempDir(t), 'node');
    const config = loadAgentConfig({}, { coordinatorUrl: 'http://c', dataDir, executor: 'process', allowUnsafeProcess: true });
    const before = process.umask(0);
    try {
      await createExecutor(config, { clock: systemClock, nodeId: 'n-modes', gpus: [], logger: silentLogger });
    } finally {
      process.umask(before);
    }
    assert.equal(mode(join(dataDir, 'work')), 0o700);
    assert.equal(mode(dataDir), 0o700);
  });
});
