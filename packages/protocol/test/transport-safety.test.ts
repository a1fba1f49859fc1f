import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertSafeTransport, InsecureTransportError, isLoopbackHost, plainHttpRisk } from '../src/transport-safety.js';

describe('plainHttpRisk', () => {
  it('allows https anywhere', () => {
    assert.equal(plainHttpRisk('https://gpux.example.com'), null);
    assert.equal(plainHttpRisk('https://10.0.0.5:8443/'), null);
  });

  it('allows plain http to loopback: 127.0.0.0/8, ::1 and localhost', () => {
    for (const url of ['http://127.0.0.1:8080', 'http://127.1.2.3', 'http://127.1', 'http://[::1]:8080', 'http://localhost:8080', 'http://LOCALHOST', 'http://[::ffff:127.0.0.1]:80']) {
      assert.equal(plainHttpRisk(url), null, url);
    }
  });

  it('refuses plain http to private, public and look-alike hosts', () => {
    for (const url of ['http://10.0.0.5:8080', 'http://192.168.1.2', 'http://172.16.0.1', 'http://gpux.example.com', 'http://[::2]', 'http://[fe80::1]', 'http://localhost.example.com', 'http://127.0.0.1.nip.io', 'http://128.0.0.1', 'http://0.0.0.0:8080']) {
      const risk = plainHttpRisk(url, 'an enrollment token');
      assert.ok(risk, url);
      assert.match(risk, /an enrollment token would cross the network in clear/);
    }
  });

  it('treats an unparsable URL as a risk', () => {
    assert.match(plainHttpRisk('not a url') ?? '', /not a valid URL/);
  });
});

describe('isLoopbackHost', () => {
  it('takes URL.hostname forms', () => {
    assert.equal(isLoopbackHost('[::1]'), true);
    assert.equal(isLoopbackHost('localhost.'), true);
    assert.equal(isLoopbackHost('10.0.0.1'), false);
  });
});

describe('assertSafeTransport', () => {
  it('passes safe URLs silently', () => {
    assert.equal(assertSafeTransport('https://gpux.example.com', { secret: 'a bearer token' }), null);
    assert.equal(assertSafeTransport('http://127.0.0.1:8080', { secret: 'a bearer token', insecure: true }), null);
  });

  it('throws a REQUEST_INVALID error saying what, where and how to fix', () => {
    assert.throws(
      () => assertSafeTransport('http://10.0.0.5:8080', { secret: 'a bearer token', source: 'GPUX_URL' }),
      (err: unknown) => {
        assert.ok(err instanceof InsecureTransportError);
        assert.equal(err.code, 'REQUEST_INVALID');
        assert.match(err.message, /refusing to send a bearer token/);
        assert.match(err.message, /http:\/\/10\.0\.0\.5:8080/);
        assert.match(err.message, /GPUX_URL/);
        assert.match(err.message, /use https:\/\/10\.0\.0\.5:8080/);
        assert.match(err.message, /--insecure \/ GPUX_INSECURE=1/);
        return true;
      },
    );
  });

  it('returns the warning instead when the user accepted the risk', () => {
    const warning = assertSafeTransport('http://gpux.example.com', { secret: 'an enrollment token', insecure: true });
    assert.match(warning ?? '', /an enrollment token would cross the network in clear/);
  });
});
