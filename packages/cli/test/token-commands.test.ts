/**
 * `gpux token …` and `gpux enrollment …` through main() against a real coordinator: create with expiry,
 * list (own vs all), revoke; an enrollment made, listed and revoked; bad durations fail before any request.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { parseExpiresIn } from '../src/commands/token.js';
import { main } from '../src/main.js';
import { argv, captureIo } from './helpers.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

describe('gpux token and gpux enrollment', () => {
  let coord: RunningCoordinator;
  let dir: string;
  let operator: string;
  const run = async (...args: string[]) => {
    const io = captureIo({ GPUX_HOME: join(dir, 'home') });
    const code = await main(argv(...args, '--coordinator', coord.url), io);
    return { code, out: io.stdout(), err: io.stderr() };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gpux-cli-token-'));
    coord = await startCoordinator(loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), host: '127.0.0.1', port: 0, logLevel: 'silent', market: false }));
    operator = coord.bootstrapOperatorToken ?? '';
  });
  after(async () => {
    await coord?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test('durations', () => {
    assert.equal(parseExpiresIn('90m'), 5400);
    assert.equal(parseExpiresIn('30d'), 30 * 86_400);
    assert.equal(parseExpiresIn('3600'), 3600);
    assert.throws(() => parseExpiresIn('10s'), /at least 1 minute/);
    assert.throws(() => parseExpiresIn('soon'), /a duration like/);
  });

  test('create with expiry, list own and all, revoke: the token is refused after', async () => {
    const created = await run('token', 'create', '--role', 'buyer', '--name', 'alice', '--expires-in', '30d', '--json', '--token', operator);
    assert.equal(created.code, 0, created.err);
    const alice = JSON.parse(created.out) as { token: string; id: string; accountId: string; expiresAt: number };
    assert.ok(alice.expiresAt > Date.now() + 29 * 86_400_000);
    const own = await run('token', 'list', '--token', alice.token);
    assert.equal(own.code, 0, own.err);
    assert.match(own.out, new RegExp(`${alice.id}\\s+${alice.accountId}\\s+buyer\\s+alice\\s+active`));
    assert.equal(own.out.trim().split('\n').length, 2, 'a buyer sees only its own token');
    const all = await run('token', 'list', '--all', '--token', operator);
    assert.match(all.out, /bootstrap/);
    const bad = await run('token', 'create', '--role', 'buyer', '--name', 'x', '--expires-in', 'tomorrow', '--token', operator);
    assert.notEqual(bad.code, 0);
    assert.match(bad.err, /--expires-in must be a duration/);

    const enr = await run('enrollment', 'create', '--name', 'rack-1', '--max-nodes', '4', '--token', alice.token);
    assert.equal(enr.code, 0, enr.err);
    assert.match(enr.out, /--enrollment-token gpux_enroll_/);
    const listed = await run('enrollment', 'list', '--token', alice.token);
    assert.match(listed.out, /rack-1\s+active\s+0\/4/);
    const id = /created enrollment (\S+)/.exec(enr.out)?.[1] ?? '';
    const revokedEnr = await run('enrollment', 'revoke', id, '--remove-nodes', '--token', alice.token);
    assert.equal(revokedEnr.code, 0, revokedEnr.err);
    assert.match(revokedEnr.out, new RegExp(`enrollment ${id} revoked at`));

    const revoked = await run('token', 'revoke', alice.id, '--token', alice.token);
    assert.equal(revoked.code, 0, revoked.err);
    assert.match(revoked.out, new RegExp(`token ${alice.id} of account ${alice.accountId} revoked at`));
    const after = await run('token', 'list', '--token', alice.token);
    assert.notEqual(after.code, 0);
    assert.match(after.err, /was revoked at/);
  });
});
