/** loadCoordinatorConfig: defaults, environment, overrides, and errors that name the variable. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { GpuxError } from '@gpux/core';
import { loadCoordinatorConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';

const env = { HOME: '/home/u' };

describe('loadCoordinatorConfig', () => {
  test('defaults', () => {
    const c = loadCoordinatorConfig(env);
    assert.equal(c.dataDir, join('/home/u', '.gpux', 'coordinator'));
    assert.equal(c.db, `sqlite:${join('/home/u', '.gpux', 'coordinator', 'coordinator.db')}`);
    assert.equal(c.host, '127.0.0.1');
    assert.equal(c.port, 7070);
    assert.equal(c.heartbeatIntervalMs, 5000);
    assert.equal(c.leaseTtlMs, 15000);
    assert.equal(c.nodeOfflineAfterMs, 15000);
    assert.equal(c.schedulePassIntervalMs, 250);
    assert.equal(c.scheduleBatchSize, 1000);
    assert.equal(c.expiryPassIntervalMs, 1000);
    assert.equal(c.bodyLimitBytes, 4 * 1024 * 1024);
    assert.equal(c.resultBodyLimitBytes, 16 * 1024 * 1024);
    assert.equal(c.logLevel, 'info');
    assert.equal(c.retryBaseBackoffMs, 2000);
    assert.equal(c.publicUrl, null);
  });

  test('environment variables', () => {
    const c = loadCoordinatorConfig({
      GPUX_HOME: '/srv/gpux',
      GPUX_PORT: '0',
      GPUX_HOST: '0.0.0.0',
      GPUX_HEARTBEAT_MS: '1000',
      GPUX_LOG_LEVEL: 'debug',
      GPUX_PUBLIC_URL: 'https://gpux.example.org',
      GPUX_SCHEDULE_BATCH: '50',
    });
    assert.equal(c.dataDir, join('/srv/gpux', 'coordinator'));
    assert.equal(c.port, 0);
    assert.equal(c.host, '0.0.0.0');
    assert.equal(c.heartbeatIntervalMs, 1000);
    assert.equal(c.leaseTtlMs, 3000, 'the lease follows the heartbeat');
    assert.equal(c.nodeOfflineAfterMs, 3000);
    assert.equal(c.logLevel, 'debug');
    assert.equal(c.publicUrl, 'https://gpux.example.org');
    assert.equal(c.scheduleBatchSize, 50);
    assert.equal(loadCoordinatorConfig({ GPUX_DB: 'postgres://u:p@db:5432/gpux' }).db, 'postgres://u:p@db:5432/gpux');
  });

  test('overrides win over the environment; derived defaults follow them', () => {
    const c = loadCoordinatorConfig({ ...env, GPUX_PORT: '9000', GPUX_HEARTBEAT_MS: '1000' }, { port: 0, heartbeatIntervalMs: 200, dataDir: '/tmp/x', db: undefined });
    assert.equal(c.port, 0);
    assert.equal(c.heartbeatIntervalMs, 200);
    assert.equal(c.leaseTtlMs, 600);
    assert.equal(c.db, `sqlite:${join('/tmp/x', 'coordinator.db')}`);
    const explicit = loadCoordinatorConfig(env, { heartbeatIntervalMs: 200, leaseTtlMs: 1000 });
    assert.equal(explicit.leaseTtlMs, 1000);
  });

  const bad: Array<[Record<string, string>, RegExp]> = [
    [{ GPUX_PORT: 'eighty' }, /GPUX_PORT="eighty".*integer from 0 to 65535/],
    [{ GPUX_PORT: '70000' }, /GPUX_PORT/],
    [{ GPUX_HEARTBEAT_MS: '-5' }, /GPUX_HEARTBEAT_MS/],
    [{ GPUX_HEARTBEAT_MS: '1.5' }, /GPUX_HEARTBEAT_MS/],
    [{ GPUX_DB: 'mysql://x' }, /GPUX_DB=.*sqlite:PATH/],
    [{ GPUX_LOG_LEVEL: 'loud' }, /GPUX_LOG_LEVEL=.*info/],
    [{ GPUX_PUBLIC_URL: 'gpux.example.org' }, /GPUX_PUBLIC_URL/],
    [{ GPUX_HEARTBEAT_MS: '1000', GPUX_LEASE_TTL_MS: '500' }, /leaseTtlMs.*more than heartbeatIntervalMs/],
  ];
  for (const [e, msg] of bad) {
    test(`rejects ${JSON.stringify(e)}`, () => {
      assert.throws(
        () => loadCoordinatorConfig({ ...env, ...e }),
        (err: unknown) => err instanceof GpuxError && err.code === 'REQUEST_INVALID' && msg.test(err.message),
      );
    });
  }

  test('bad overrides are rejected too', () => {
    assert.throws(() => loadCoordinatorConfig(env, { port: -1 }), /port/);
    assert.throws(() => loadCoordinatorConfig(env, { scheduleBatchSize: 0 }), /scheduleBatchSize/);
  });
});

describe('createLogger', () => {
  test('redacts tokens and authorization headers', () => {
    const lines: string[] = [];
    const log = createLogger('info', { write: (s: string) => lines.push(s) });
    log.info({ req: { headers: { authorization: 'Bearer gpux_secret1' } }, token: 'gpux_secret2', created: { token: 'gpux_secret3' } }, 'hello');
    log.child({ nodeId: 'n-1' }).info({ headers: { authorization: 'Bearer gpux_secret4' } }, 'child');
    const out = lines.join('');
    assert.doesNotMatch(out, /gpux_secret/);
    assert.match(out, /\[redacted\]/);
    assert.match(out, /"nodeId":"n-1"/);
  });
});
