/** Error printing: `error: message`, problems with paths, no stack unless GPUX_DEBUG=1; exit codes 1 and 2. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GpuxError } from '@gpux/core';
import { GpuxApiError, GpuxConnectionError } from '@gpux/sdk';
import { CliError, exitCodeOf, formatError, reportError, usageError } from '../src/errors.js';
import { main } from '../src/main.js';
import { argv, captureIo, tempDir } from './helpers.js';

describe('formatError', () => {
  test('message and problems, no stack', () => {
    const err = new GpuxApiError(400, 'SPEC_INVALID', 'the job spec is invalid', [
      { path: 'resources.gpu.count', message: 'too big' },
      { path: 'image', message: 'required' },
    ]);
    assert.equal(formatError(err), 'error: the job spec is invalid\n  - resources.gpu.count: too big\n  - image: required\n');
  });

  test('GPUX_DEBUG=1 adds the code and the stack', () => {
    const io = captureIo({ GPUX_DEBUG: '1' });
    reportError(new GpuxConnectionError('http://x', 'cannot reach the coordinator at http://x: is it running?', { cause: new Error('ECONNREFUSED') }), io);
    assert.match(io.stderr(), /^error: cannot reach the coordinator at http:\/\/x: is it running\?\n/);
    assert.match(io.stderr(), /\n {4}at /, 'stack frames');
    assert.match(io.stderr(), /cause: Error: ECONNREFUSED/);
    const quiet = captureIo({});
    reportError(new Error('boom'), quiet);
    assert.equal(quiet.stderr(), 'error: boom\n');
  });

  test('exit codes: 2 for usage and local validation, 1 otherwise', () => {
    assert.equal(exitCodeOf(usageError('bad flag')), 2);
    assert.equal(exitCodeOf(new GpuxError('REQUEST_INVALID', 'GPUX_PORT is invalid')), 2);
    assert.equal(exitCodeOf(new CliError('failed')), 1);
    assert.equal(exitCodeOf(new GpuxApiError(404, 'JOB_NOT_FOUND', 'no job')), 1);
    assert.equal(exitCodeOf(new Error('x')), 1);
  });
});

describe('main exit codes', () => {
  test('unknown commands and bad option values exit 2 with commander’s message', async () => {
    const io = captureIo({});
    assert.equal(await main(argv('jbo', 'list'), io), 2);
    assert.match(io.stderr(), /unknown command 'jbo'/);
    const io2 = captureIo({});
    assert.equal(await main(argv('job', 'list', '--limit', 'lots'), io2), 2);
    assert.match(io2.stderr(), /--limit must be an integer/);
    const io3 = captureIo({});
    assert.equal(await main(argv('job'), io3), 2, 'a group without a subcommand is bad usage');
    assert.equal(await main(argv('--help'), captureIo({})), 0);
  });

  test('an unreachable coordinator exits 1 with one line and no stack', async (t) => {
    const io = captureIo({ GPUX_HOME: tempDir(t), GPUX_URL: 'http://127.0.0.1:9', GPUX_TOKEN: 't' });
    assert.equal(await main(argv('job', 'list'), io), 1);
    assert.match(io.stderr(), /^error: cannot reach the coordinator at http:\/\/127\.0\.0\.1:9: is it running\? \(.+\)\n$/);
    assert.equal(io.stdout(), '');
  });

  test('no coordinator configured is a clear usage error (exit 2: a flag or GPUX_URL is missing)', async (t) => {
    const io = captureIo({ GPUX_HOME: tempDir(t) });
    assert.equal(await main(argv('node', 'list'), io), 2);
    assert.match(io.stderr(), /^error: no coordinator URL/);
  });
});
