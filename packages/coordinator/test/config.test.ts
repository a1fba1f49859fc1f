/** loadCoordinatorConfig: defaults, environment, overrides, and errors that name the variable. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { DEFAULT_NODE_STATS_POLICY, GpuxError, transitionDecider } from '@gpux/core';
import { sampleAdvertisement, sampleJobSpec } from '@gpux/testing';
import { loadCoordinatorConfig, storePolicies } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { openStore } from '../src/store/index.js';

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
    assert.equal(c.maxQueuedPerBuyer, 10_000);
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
    assert.equal(loadCoordinatorConfig({ GPUX_MAX_QUEUED_PER_BUYER: '25' }).maxQueuedPerBuyer, 25);
    assert.throws(() => loadCoordinatorConfig({ GPUX_MAX_QUEUED_PER_BUYER: '0' }), /GPUX_MAX_QUEUED_PER_BUYER/);
    assert.equal(loadCoordinatorConfig({ GPUX_DB: 'postgres://u:p@db:5432/gpux' }).db, 'postgres://u:p@db:5432/gpux');
    assert.equal(loadCoordinatorConfig({}).queueTimeoutSeconds, 86_400);
    assert.equal(loadCoordinatorConfig({ GPUX_QUEUE_TIMEOUT_S: '600' }).queueTimeoutSeconds, 600);
    assert.throws(() => loadCoordinatorConfig({ GPUX_QUEUE_TIMEOUT_S: '0' }), /GPUX_QUEUE_TIMEOUT_S/);
    assert.equal(loadCoordinatorConfig({}).cancelGraceMs, 30_000);
    assert.equal(loadCoordinatorConfig({ GPUX_CANCEL_GRACE_MS: '5000' }).cancelGraceMs, 5000);
    assert.throws(() => loadCoordinatorConfig({ GPUX_CANCEL_GRACE_MS: '0' }), /GPUX_CANCEL_GRACE_MS/);
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

  test('attempt write budgets, log pages and long-poll caps (issue 10 items 5, 10): defaults, environment, bounds', () => {
    const d = loadCoordinatorConfig(env);
    assert.deepEqual(
      [d.attemptLogMaxBytes, d.attemptLogMaxEntries, d.attemptMaxEvents, d.logPageMaxBytes, d.logPollsPerToken, d.workPollsPerNode],
      [64 * 1024 * 1024, 200_000, 1000, 1024 * 1024, 32, 2],
    );
    const c = loadCoordinatorConfig({
      ...env,
      GPUX_ATTEMPT_LOG_MAX_BYTES: '1048576',
      GPUX_ATTEMPT_LOG_MAX_ENTRIES: '500',
      GPUX_ATTEMPT_MAX_EVENTS: '20',
      GPUX_LOG_PAGE_MAX_BYTES: '65536',
      GPUX_LOG_POLLS_PER_TOKEN: '4',
      GPUX_WORK_POLLS_PER_NODE: '1',
    });
    assert.deepEqual([c.attemptLogMaxBytes, c.attemptLogMaxEntries, c.attemptMaxEvents, c.logPageMaxBytes, c.logPollsPerToken, c.workPollsPerNode], [1048576, 500, 20, 65536, 4, 1]);
    assert.throws(() => loadCoordinatorConfig({ ...env, GPUX_LOG_PAGE_MAX_BYTES: '1000' }), /GPUX_LOG_PAGE_MAX_BYTES.*from 65536/);
    assert.throws(() => loadCoordinatorConfig({ ...env, GPUX_WORK_POLLS_PER_NODE: '0' }), /GPUX_WORK_POLLS_PER_NODE/);
    assert.throws(() => loadCoordinatorConfig(env, { logPollsPerToken: 0 }), /logPollsPerToken/);
  });

  test('node registrations per provider (issue 10 item 2): defaults, environment, bounds', () => {
    const d = loadCoordinatorConfig(env);
    assert.deepEqual([d.registerRatePerMin, d.maxNodesPerProvider], [30, 1000]);
    const c = loadCoordinatorConfig({ ...env, GPUX_REGISTER_RATE_PER_MIN: '5', GPUX_MAX_NODES_PER_PROVIDER: '20' });
    assert.deepEqual([c.registerRatePerMin, c.maxNodesPerProvider], [5, 20]);
    assert.throws(() => loadCoordinatorConfig({ ...env, GPUX_REGISTER_RATE_PER_MIN: '0' }), /GPUX_REGISTER_RATE_PER_MIN/);
    assert.throws(() => loadCoordinatorConfig(env, { maxNodesPerProvider: 0 }), /maxNodesPerProvider/);
  });

  test('node-stats policy (issue 11): core defaults, environment, bounds, and the store policies built from it', () => {
    const d = loadCoordinatorConfig(env);
    assert.deepEqual([d.nodeStatsHalfLifeMs, d.cordonFailures, d.cordonWindowMs], [DEFAULT_NODE_STATS_POLICY.halfLifeMs, DEFAULT_NODE_STATS_POLICY.cordonAfterFailures, DEFAULT_NODE_STATS_POLICY.cordonWindowMs]);
    const c = loadCoordinatorConfig({ ...env, GPUX_NODE_STATS_HALF_LIFE_MS: '3600000', GPUX_CORDON_FAILURES: '2', GPUX_CORDON_WINDOW_MS: '60000' });
    assert.deepEqual(storePolicies(c).nodeStats, { halfLifeMs: 3_600_000, cordonAfterFailures: 2, cordonWindowMs: 60_000 });
    for (const [name, value] of [
      ['GPUX_NODE_STATS_HALF_LIFE_MS', '0'],
      ['GPUX_NODE_STATS_HALF_LIFE_MS', '59999'],
      ['GPUX_NODE_STATS_HALF_LIFE_MS', '3d'],
      ['GPUX_CORDON_FAILURES', '0'],
      ['GPUX_CORDON_FAILURES', '10001'],
      ['GPUX_CORDON_WINDOW_MS', '999'],
      ['GPUX_CORDON_WINDOW_MS', String(31 * 24 * 3_600_000)],
    ]) {
      assert.throws(
        () => loadCoordinatorConfig({ ...env, [name as string]: value }),
        (err: unknown) => err instanceof GpuxError && err.code === 'REQUEST_INVALID' && err.message.startsWith(`${name}=`) && /an integer from \d+ to \d+/.test(err.message),
        `${name}=${value}`,
      );
    }
    assert.throws(() => loadCoordinatorConfig(env, { cordonFailures: 0 }), /cordonFailures/);
    assert.throws(() => loadCoordinatorConfig(env, { nodeStatsHalfLifeMs: 1000 }), /nodeStatsHalfLifeMs=.*from 60000/);
    assert.throws(() => loadCoordinatorConfig(env, { cordonWindowMs: 1.5 }), /cordonWindowMs/);
  });

  test('the store applies the configured policy: a node auto-cordons at GPUX_CORDON_FAILURES, not the default', async () => {
    const c = loadCoordinatorConfig({ ...env, GPUX_CORDON_FAILURES: '2' });
    const store = await openStore('sqlite::memory:', { policies: storePolicies(c) });
    try {
      const decide = transitionDecider();
      const T0 = 1_700_000_000_000;
      await store.registerNode({ id: 'n', publicKey: 'k', advertisement: sampleAdvertisement(), now: T0 });
      for (const i of [1, 2]) {
        await store.submitJob({ id: `j${i}`, buyerId: 'b', spec: sampleJobSpec(), idempotencyKey: null, now: T0 + i });
        await store.assign([{ jobId: `j${i}`, attemptId: `a${i}`, nodeId: 'n', gpuIndices: [0], leaseExpiresAt: T0 + 60_000 }], T0 + i);
        const failed = { attemptId: `a${i}`, nodeId: 'n', outcome: 'failed' as const, exitCode: null, error: 'executor failed', outputDigest: 'f'.repeat(64), outputs: [], metrics: { durationMs: 1 }, now: T0 + 10 + i };
        await store.finishAttempt(failed, decide);
        assert.equal((await store.getNode('n'))?.adminState, i === 2 ? 'cordoned' : 'active', `after ${i} failure(s)`);
      }
    } finally {
      await store.close();
    }
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

describe('TLS files', () => {
  test('both or neither: half a pair names the missing variable', () => {
    const none = loadCoordinatorConfig(env);
    assert.equal(none.tlsCertFile, null);
    assert.equal(none.tlsKeyFile, null);
    const both = loadCoordinatorConfig({ ...env, GPUX_TLS_CERT_FILE: '/etc/gpux/cert.pem', GPUX_TLS_KEY_FILE: '/etc/gpux/key.pem' });
    assert.equal(both.tlsCertFile, '/etc/gpux/cert.pem');
    assert.equal(both.tlsKeyFile, '/etc/gpux/key.pem');
    assert.throws(() => loadCoordinatorConfig({ ...env, GPUX_TLS_CERT_FILE: '/etc/gpux/cert.pem' }), (err: unknown) => {
      assert.ok(err instanceof GpuxError);
      assert.match(err.message, /GPUX_TLS_CERT_FILE is set but GPUX_TLS_KEY_FILE is not/);
      return true;
    });
    assert.throws(() => loadCoordinatorConfig({ ...env, GPUX_TLS_KEY_FILE: '/etc/gpux/key.pem' }), /GPUX_TLS_KEY_FILE is set but GPUX_TLS_CERT_FILE is not/);
    assert.throws(() => loadCoordinatorConfig(env, { tlsCertFile: '/etc/gpux/cert.pem' }), /GPUX_TLS_KEY_FILE is not/, 'overrides are checked alike');
  });
});
