/** No secrets in clear (issue 19): when the sign-in form warns, and that it agrees with the protocol's loopback rule. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isLoopbackHost as protocolIsLoopback } from '@gpux/protocol';
import { clearTextTokenRisk, isLoopbackHost } from '../app/lib/transport-safety.js';

const at = (href: string) => {
  const u = new URL(href);
  return { protocol: u.protocol, hostname: u.hostname, origin: u.origin };
};

describe('dashboard sign-in transport check', () => {
  test('https and loopback http sign in silently', () => {
    for (const href of ['https://gpux.example.com/', 'http://127.0.0.1:8080/', 'http://[::1]:8080/', 'http://localhost:5173/']) {
      assert.equal(clearTextTokenRisk(at(href)), null, href);
    }
  });

  test('plain http from any other host warns that the token would cross the network in clear', () => {
    for (const href of ['http://10.0.0.5:8080/', 'http://gpux.example.com/', 'http://192.168.0.2/']) {
      assert.match(clearTextTokenRisk(at(href)) ?? '', /your token would cross the network in clear/, href);
    }
  });

  test('the same loopback rule as @gpux/protocol', () => {
    for (const href of ['http://127.0.0.1', 'http://127.9.8.7', 'http://[::1]', 'http://localhost', 'http://[::ffff:127.0.0.1]', 'http://10.0.0.1', 'http://[::2]', 'http://localhost.evil.com', 'http://0.0.0.0']) {
      const host = new URL(href).hostname;
      assert.equal(isLoopbackHost(host), protocolIsLoopback(host), host);
    }
  });
});
