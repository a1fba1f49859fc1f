/** `gpux coordinator key show|rotate` through main(), offline on a key file (issue 19). */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadOrCreateKeyFile, readKeyFile } from '@gpux/coordinator';
import { parseActivateIn } from '../src/commands/coordinator-key.js';
import { main } from '../src/main.js';
import { argv, captureIo, tempDir } from './helpers.js';

test('gpux coordinator key show and rotate work on the key file', async (t) => {
  const dir = tempDir(t);
  const keyFile = join(dir, 'coordinator-key.json');
  const io = captureIo({});
  assert.equal(await main(argv('coordinator', 'key', 'show', '--key-file', keyFile), io), 2, 'no file yet');
  assert.match(io.stderr(), /no coordinator key file/);

  const { file } = loadOrCreateKeyFile(keyFile, Date.now());
  const show = captureIo({ GPUX_DATA_DIR: dir });
  assert.equal(await main(argv('coordinator', 'key', 'show', '--json'), show), 0, show.stderr());
  const first = JSON.parse(show.stdout());
  assert.equal(first.keys.length, 1);
  assert.equal(first.signingKey, first.keys[0].fingerprint);

  const rotate = captureIo({});
  assert.equal(await main(argv('coordinator', 'key', 'rotate', '--data-dir', dir, '--activate-in', '2h'), rotate), 0, rotate.stderr());
  assert.match(rotate.stdout(), /added key [0-9a-f]{64}, signing from /);
  const after = readKeyFile(keyFile);
  assert.equal(after?.keys.length, 2);
  assert.deepEqual(after?.keys[0], file.keys[0]);
  const again = captureIo({});
  assert.equal(await main(argv('coordinator', 'key', 'show', '--key-file', keyFile), again), 0);
  assert.match(again.stdout(), new RegExp(`signing key ${first.signingKey}`), 'the old key signs until the new one activates');
});

test('--activate-in durations', () => {
  assert.equal(parseActivateIn('0'), 0);
  assert.equal(parseActivateIn('30m'), 30 * 60_000);
  assert.equal(parseActivateIn('24h'), 24 * 3_600_000);
  assert.throws(() => parseActivateIn('10'), /duration/);
  assert.throws(() => parseActivateIn('soon'), /duration/);
});
