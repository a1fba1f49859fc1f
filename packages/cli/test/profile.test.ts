/** The CLI profile: read/write, file mode, and flag > env > profile precedence. */
import assert from 'node:assert/strict';
import { chmodSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { CliError } from '../src/errors.js';
import { gpuxHome, profilePath, readProfile, resolveConnection, writeProfile } from '../src/profile.js';
import { tempDir } from './helpers.js';

describe('profile file', () => {
  test('GPUX_HOME wins over ~/.gpux', () => {
    assert.equal(gpuxHome({ GPUX_HOME: '/x/y', HOME: '/home/u' }), '/x/y');
    assert.equal(gpuxHome({ HOME: '/home/u' }), '/home/u/.gpux');
    assert.equal(profilePath({ GPUX_HOME: '/x' }), '/x/profile.json');
  });

  test('a missing profile reads as empty', (t) => {
    assert.deepEqual(readProfile({ GPUX_HOME: join(tempDir(t), 'nope') }), {});
  });

  test('write then read round-trips, with mode 0600 in a 0700 dir, even over a wider file', (t) => {
    const home = join(tempDir(t), 'home');
    const env = { GPUX_HOME: home };
    const path = writeProfile(env, { url: 'http://127.0.0.1:7070', token: 'gpux_b', operatorToken: 'gpux_o' });
    assert.equal(path, join(home, 'profile.json'));
    assert.deepEqual(readProfile(env), { url: 'http://127.0.0.1:7070', token: 'gpux_b', operatorToken: 'gpux_o' });
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.equal(statSync(home).mode & 0o777, 0o700);

    writeFileSync(path, '{}', { mode: 0o644 });
    writeProfile(env, { url: 'http://other:1' });
    assert.equal(statSync(path).mode & 0o777, 0o600);
    assert.deepEqual(readProfile(env), { url: 'http://other:1' });
  });

  test('an existing profile or GPUX_HOME open to other users is tightened (0600 on read, 0700 on write)', (t) => {
    const home = join(tempDir(t), 'home');
    const env = { GPUX_HOME: home };
    const path = writeProfile(env, { token: 'gpux_b' });
    chmodSync(path, 0o644);
    chmodSync(home, 0o755);
    assert.deepEqual(readProfile(env), { token: 'gpux_b' });
    assert.equal(statSync(path).mode & 0o777, 0o600, 'fixed on read');
    writeProfile(env, { token: 'gpux_c' });
    assert.equal(statSync(home).mode & 0o777, 0o700, 'fixed on write');
  });

  test('a broken profile is a clear error', (t) => {
    const home = tempDir(t);
    writeFileSync(join(home, 'profile.json'), '{not json');
    assert.throws(() => readProfile({ GPUX_HOME: home }), (e: unknown) => e instanceof CliError && /not valid JSON/.test(e.message));
    writeFileSync(join(home, 'profile.json'), '[1]');
    assert.throws(() => readProfile({ GPUX_HOME: home }), /must hold a JSON object/);
  });
});

describe('resolveConnection precedence', () => {
  const profile = { url: 'http://profile:1', token: 'p-buyer', operatorToken: 'p-op' };

  test('flags beat env beat profile', () => {
    assert.deepEqual(resolveConnection({}, {}, profile), { url: 'http://profile:1', token: 'p-buyer' });
    assert.deepEqual(resolveConnection({}, { GPUX_URL: 'http://env:2', GPUX_TOKEN: 'e-buyer' }, profile), { url: 'http://env:2', token: 'e-buyer' });
    assert.deepEqual(resolveConnection({ coordinator: 'http://flag:3', token: 'f' }, { GPUX_URL: 'http://env:2', GPUX_TOKEN: 'e' }, profile), { url: 'http://flag:3', token: 'f' });
  });

  test('operator commands prefer operator tokens, then fall back to the main token', () => {
    assert.equal(resolveConnection({}, {}, profile, 'operator').token, 'p-op');
    assert.equal(resolveConnection({}, { GPUX_TOKEN: 'e-buyer' }, profile, 'operator').token, 'p-op');
    assert.equal(resolveConnection({}, { GPUX_OPERATOR_TOKEN: 'e-op' }, profile, 'operator').token, 'e-op');
    assert.equal(resolveConnection({ token: 'f' }, { GPUX_OPERATOR_TOKEN: 'e-op' }, profile, 'operator').token, 'f');
    assert.equal(resolveConnection({}, {}, { url: 'http://p:1', token: 'only' }, 'operator').token, 'only');
  });

  test('empty values are ignored and no URL at all is a helpful error', () => {
    assert.equal(resolveConnection({ coordinator: '' }, { GPUX_URL: ' ' }, profile).url, 'http://profile:1');
    assert.throws(() => resolveConnection({}, {}, {}), /no coordinator URL: pass --coordinator URL, set GPUX_URL, or start a local network with `gpux dev`/);
    assert.equal(resolveConnection({}, {}, { url: 'http://p:1' }).token, undefined);
  });
});
