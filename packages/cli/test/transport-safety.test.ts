/** No secrets in clear (issue 19): the CLI refuses plain HTTP to a non-loopback coordinator unless --insecure / GPUX_INSECURE=1. */
import assert from 'node:assert/strict';
import { describe, test, type TestContext } from 'node:test';
import { main } from '../src/main.js';
import { argv, captureIo, tempDir } from './helpers.js';

const REMOTE = 'http://10.0.0.5:8080';

/** Replace the global fetch (the SDK looks it up per call) with one that records the Authorization header it got. */
function recordFetch(t: TestContext): string[] {
  const sent: string[] = [];
  const original = globalThis.fetch;
  globalThis.fetch = (async (_input: string | URL | Request, init?: RequestInit) => {
    sent.push((init?.headers as Record<string, string> | undefined)?.authorization ?? '');
    return new Response(JSON.stringify({ jobs: [], nextCursor: null }), { status: 200, headers: { 'content-type': 'application/json' } });
  }) as typeof fetch;
  t.after(() => {
    globalThis.fetch = original;
  });
  return sent;
}

describe('gpux --insecure', () => {
  test('a token to plain http on a non-loopback host is a usage error; nothing is sent', async (t) => {
    const sent = recordFetch(t);
    const io = captureIo({ GPUX_HOME: tempDir(t) });
    assert.equal(await main(argv('job', 'list', '--coordinator', REMOTE, '--token', 'gpux_secret'), io), 2);
    assert.match(io.stderr(), /^error: refusing to send a bearer token: http:\/\/10\.0\.0\.5:8080 is plain HTTP/);
    assert.match(io.stderr(), /use https:\/\/10\.0\.0\.5:8080/);
    assert.match(io.stderr(), /--insecure \/ GPUX_INSECURE=1/);
    assert.doesNotMatch(io.stderr(), /gpux_secret/);
    assert.deepEqual(sent, []);
  });

  test('--insecure (before or after the command) or GPUX_INSECURE=1 sends it', async (t) => {
    const sent = recordFetch(t);
    t.mock.method(process, 'emitWarning', () => {}); // the warning itself is the SDK's to test
    for (const [args, env] of [
      [['--insecure', 'job', 'list', '--coordinator', REMOTE, '--token', 'tok'], {}],
      [['job', 'list', '--insecure', '--coordinator', REMOTE, '--token', 'tok'], {}],
      [['job', 'list', '--coordinator', REMOTE, '--token', 'tok'], { GPUX_INSECURE: '1' }],
    ] as const) {
      const io = captureIo({ GPUX_HOME: tempDir(t), ...env });
      assert.equal(await main(argv(...args), io), 0, io.stderr());
    }
    assert.deepEqual(sent, ['Bearer tok', 'Bearer tok', 'Bearer tok']);
  });

  test('gpux node start refuses to send its enrollment token in clear', async (t) => {
    const io = captureIo({ GPUX_HOME: tempDir(t) });
    const code = await main(argv('node', 'start', '--coordinator', REMOTE, '--enrollment-token', 'gpux_enroll_x', '--executor', 'simulated'), io);
    assert.equal(code, 2);
    assert.match(io.stderr(), /refusing to send an enrollment token/);
  });
});
