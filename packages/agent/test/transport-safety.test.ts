/** No secrets in clear (issue 19): the agent never sends its enrollment token over plain HTTP to a non-loopback coordinator. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GpuxError } from '@gpux/core';
import { CoordinatorClient, loadAgentConfig, loadOrCreateIdentity } from '../src/index.js';
import { tempDir } from './helpers.js';

const TOKEN = 'gpux_enroll_abc';
const ADVERTISEMENT = { hostname: 'h', gpus: [], cpuCores: 1, memoryGb: 1 } as unknown as Parameters<CoordinatorClient['register']>[0];

/** A fetch that records every URL it was asked for and answers like a coordinator that is down. */
function recordingFetch(): { fetch: typeof fetch; urls: string[] } {
  const urls: string[] = [];
  const fake = (async (input: string | URL | Request) => {
    urls.push(String(input));
    return new Response(JSON.stringify({ error: { code: 'UNAUTHORIZED', message: 'nope' } }), { status: 401 });
  }) as typeof fetch;
  return { fetch: fake, urls };
}

describe('agent transport safety', () => {
  test('config: an enrollment token with a plain-http non-loopback URL is refused, naming the fix', () => {
    assert.throws(
      () => loadAgentConfig({ GPUX_COORDINATOR_URL: 'http://10.0.0.5:8080', GPUX_ENROLLMENT_TOKEN: TOKEN }),
      (e: unknown) =>
        e instanceof GpuxError &&
        e.code === 'REQUEST_INVALID' &&
        /coordinatorUrl: refusing to send an enrollment token/.test(e.message) &&
        /GPUX_COORDINATOR_URL/.test(e.message) &&
        /https:\/\/10\.0\.0\.5:8080/.test(e.message) &&
        /--insecure \/ GPUX_INSECURE=1/.test(e.message),
    );
  });

  test('config: https, loopback, or an explicit insecure are accepted', () => {
    assert.equal(loadAgentConfig({ GPUX_COORDINATOR_URL: 'https://gpux.example.com', GPUX_ENROLLMENT_TOKEN: TOKEN }).insecure, undefined);
    assert.equal(loadAgentConfig({ GPUX_COORDINATOR_URL: 'http://[::1]:8080', GPUX_ENROLLMENT_TOKEN: TOKEN }).coordinatorUrl, 'http://[::1]:8080');
    assert.equal(loadAgentConfig({ GPUX_COORDINATOR_URL: 'http://10.0.0.5:8080', GPUX_ENROLLMENT_TOKEN: TOKEN, GPUX_INSECURE: '1' }).insecure, true);
    assert.equal(loadAgentConfig({ GPUX_ENROLLMENT_TOKEN: TOKEN }, { coordinatorUrl: 'http://10.0.0.5:8080', insecure: true }).insecure, true);
  });

  test('client: register refuses before sending; signed requests (no secret) still go', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    const rec = recordingFetch();
    const client = new CoordinatorClient({ baseUrl: 'http://10.0.0.5:8080', identity, fetch: rec.fetch, enrollmentToken: TOKEN });
    await assert.rejects(client.register(ADVERTISEMENT), (e: unknown) => e instanceof GpuxError && e.code === 'REQUEST_INVALID' && /enrollment token/.test(e.message));
    assert.deepEqual(rec.urls, [], 'the token never left the process');
    await client.heartbeat([]).catch(() => {});
    assert.equal(rec.urls.length, 1);
  });

  test('client: insecure registers anyway and warns once', async (t) => {
    const identity = await loadOrCreateIdentity(await tempDir(t));
    const rec = recordingFetch();
    const warnings: Error[] = [];
    const listener = (w: Error) => void ((w as { code?: string }).code === 'GPUX_INSECURE_TRANSPORT' && warnings.push(w));
    process.on('warning', listener);
    t.after(() => process.off('warning', listener));
    const client = new CoordinatorClient({ baseUrl: 'http://10.0.0.5:8080', identity, fetch: rec.fetch, enrollmentToken: TOKEN, insecure: true });
    await client.register(ADVERTISEMENT).catch(() => {});
    await client.register(ADVERTISEMENT).catch(() => {});
    await new Promise((r) => setImmediate(r));
    assert.equal(rec.urls.length, 2);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]?.message ?? '', /an enrollment token would cross the network in clear/);
  });
});
