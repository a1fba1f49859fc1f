/** The per-address limiter of failed authentications (services/auth-failures.ts) and its two settings. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadCoordinatorConfig } from '../src/config.js';
import { AuthFailures, clientKey } from '../src/services/auth-failures.js';

describe('AuthFailures', () => {
  test('blocks after perMinute failures, for as long as one token takes to refill', () => {
    const l = new AuthFailures(6); // one token every 10 s
    for (let i = 0; i < 6; i++) {
      assert.equal(l.blockedFor('10.0.0.1', 1000), 0);
      l.fail('10.0.0.1', 1000);
    }
    assert.equal(l.blockedFor('10.0.0.1', 1000), 10_000);
    assert.equal(l.blockedFor('10.0.0.1', 6000), 5000);
    assert.equal(l.blockedFor('10.0.0.2', 6000), 0, 'another address is its own bucket');
    assert.equal(l.blockedFor('10.0.0.1', 11_000), 0);
  });

  test('one warning per block', () => {
    const l = new AuthFailures(1);
    l.fail('10.0.0.1', 0);
    assert.equal(l.firstRefusal('10.0.0.1'), true);
    assert.equal(l.firstRefusal('10.0.0.1'), false);
    assert.equal(l.blockedFor('10.0.0.1', 60_000), 0);
    l.fail('10.0.0.1', 60_000);
    assert.equal(l.firstRefusal('10.0.0.1'), true, 'a new block warns again');
  });

  test('memory is bounded: full buckets are swept, and past maxKeys the least recently failing address goes', () => {
    const l = new AuthFailures(2, 3);
    for (const a of ['10.0.0.1', '10.0.0.2', '10.0.0.3']) l.fail(a, 0);
    l.fail('10.0.0.1', 1); // now the most recent
    l.fail('10.0.0.4', 2);
    assert.equal(l.size, 3);
    l.fail('10.0.0.1', 3);
    assert.ok(l.blockedFor('10.0.0.1', 3) > 0, 'the active address was kept');
    l.fail('10.0.0.5', 120_000);
    assert.equal(l.size, 1, 'a minute later the refilled buckets are gone');
  });

  test('keys: IPv4 as is, IPv4-mapped as IPv4, IPv6 by its /64', () => {
    assert.equal(clientKey('203.0.113.9'), '203.0.113.9');
    assert.equal(clientKey('::ffff:203.0.113.9'), '203.0.113.9');
    assert.equal(clientKey('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
    assert.equal(clientKey('2001:db8:1:2:bbbb:cccc:dddd:eeee'), '2001:db8:1:2::/64');
    assert.equal(clientKey('2001:db8::1'), '2001:db8:0:0::/64');
    assert.equal(clientKey('::1'), '0:0:0:0::/64');
    assert.equal(clientKey('fe80::1%eth0'), 'fe80:0:0:0::/64');
  });
});

describe('GPUX_TRUST_PROXY and GPUX_AUTH_FAILURES_PER_MINUTE', () => {
  const env = { HOME: '/tmp/gpux-config-test' };
  test('defaults: no proxy trusted, 30 failures a minute', () => {
    const c = loadCoordinatorConfig(env);
    assert.deepEqual(c.trustProxy, []);
    assert.equal(c.authFailuresPerMinute, 30);
  });

  test('IPs and CIDRs, v4 and v6; 0 turns the limit off', () => {
    const c = loadCoordinatorConfig({ ...env, GPUX_TRUST_PROXY: '127.0.0.1, 10.0.0.0/8,::1,fd00::/8', GPUX_AUTH_FAILURES_PER_MINUTE: '0' });
    assert.deepEqual(c.trustProxy, ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8']);
    assert.equal(c.authFailuresPerMinute, 0);
  });

  test('a typo is an error naming the entry, not a silent "trust nobody"', () => {
    for (const bad of ['nginx', '10.0.0.0/33', '::1/129', '10.0.0.1/8/2', '127.0.0.1,,10.0.0.1', 'true']) {
      assert.throws(() => loadCoordinatorConfig({ ...env, GPUX_TRUST_PROXY: bad }), /GPUX_TRUST_PROXY=.* is invalid: expected comma-separated IP addresses or CIDRs/, bad);
    }
    assert.throws(() => loadCoordinatorConfig({ ...env, GPUX_AUTH_FAILURES_PER_MINUTE: '-1' }), /GPUX_AUTH_FAILURES_PER_MINUTE/);
  });
});
