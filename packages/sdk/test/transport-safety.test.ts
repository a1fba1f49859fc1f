/** No secrets in clear (issue 19): the client refuses to send its bearer token over plain HTTP to a non-loopback host. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GpuxClient, GpuxClientError, GpuxInsecureTransportError } from '../src/index.js';
import type { FetchLike } from '../src/transport.js';

/** A fetch that records what would have been sent and answers like GET /v1/whoami. */
function recordingFetch(): { fetch: FetchLike; sent: { url: string; authorization: string | undefined }[] } {
  const sent: { url: string; authorization: string | undefined }[] = [];
  const fetch: FetchLike = async (url, init) => {
    sent.push({ url, authorization: (init.headers as Record<string, string>).authorization });
    return new Response(JSON.stringify({ error: { code: 'UNAUTHORIZED', message: 'nope' } }), { status: 401 });
  };
  return { fetch, sent };
}

function captureWarnings(): { warnings: Error[]; stop(): void } {
  const warnings: Error[] = [];
  const listener = (w: Error) => {
    if ((w as { code?: string }).code === 'GPUX_INSECURE_TRANSPORT') warnings.push(w);
  };
  process.on('warning', listener);
  return { warnings, stop: () => process.off('warning', listener) };
}

describe('GpuxClient transport safety', () => {
  test('a token is never sent to plain http on a non-loopback host', async () => {
    const rec = recordingFetch();
    const client = new GpuxClient({ url: 'http://10.0.0.5:8080', token: 'gpux_secret', fetch: rec.fetch });
    const err = await client.whoami().catch((e: unknown) => e);
    assert.ok(err instanceof GpuxInsecureTransportError);
    assert.ok(err instanceof GpuxClientError, 'one instanceof catches every SDK failure');
    assert.equal(err.code, 'REQUEST_INVALID');
    assert.match(err.message, /refusing to send a bearer token/);
    assert.match(err.message, /https:\/\/10\.0\.0\.5:8080/);
    assert.match(err.message, /--insecure \/ GPUX_INSECURE=1/);
    assert.equal(rec.sent.length, 0, 'nothing left the process');
  });

  test('https, loopback, and token-less requests go through', async () => {
    for (const [url, token] of [
      ['https://gpux.example.com', 't'],
      ['http://127.0.0.1:8080', 't'],
      ['http://[::1]:8080', 't'],
      ['http://localhost:8080', 't'],
      ['http://10.0.0.5:8080', undefined],
    ] as const) {
      const rec = recordingFetch();
      await new GpuxClient({ url, fetch: rec.fetch, ...(token ? { token } : {}) }).whoami().catch(() => {});
      assert.equal(rec.sent.length, 1, url);
      assert.equal(rec.sent[0]?.authorization, token ? `Bearer ${token}` : undefined, url);
    }
  });

  test('insecure: sends, and warns once per client with what it exposes', async (t) => {
    const cap = captureWarnings();
    t.after(() => cap.stop());
    const rec = recordingFetch();
    const client = new GpuxClient({ url: 'http://gpux.example.com', token: 't', fetch: rec.fetch, insecure: true });
    await client.whoami().catch(() => {});
    await client.whoami().catch(() => {});
    await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
    assert.equal(rec.sent.length, 2);
    assert.equal(cap.warnings.length, 1);
    assert.match(cap.warnings[0]?.message ?? '', /a bearer token would cross the network in clear/);
  });
});
