/** The column formatter and the small value formatters. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatBytes, formatDuration, formatKeyValues, formatTable } from '../src/output.js';

describe('formatTable', () => {
  const rows = [
    { id: 'job-1', state: 'running', n: 1, err: null },
    { id: 'job-22', state: 'ok', n: 120, err: 'boom\nline two' },
  ];
  const cols = [
    { header: 'ID', value: (r: (typeof rows)[number]) => r.id },
    { header: 'STATE', value: (r: (typeof rows)[number]) => r.state },
    { header: 'N', value: (r: (typeof rows)[number]) => r.n, align: 'right' as const },
    { header: 'ERROR', value: (r: (typeof rows)[number]) => r.err },
  ];

  test('pads columns to the widest cell, right-aligns numbers, no trailing spaces', () => {
    assert.equal(formatTable(rows, cols), ['ID      STATE      N  ERROR', 'job-1   running    1  -', 'job-22  ok       120  boom line two', ''].join('\n'));
  });

  test('an empty table is just its header', () => {
    assert.equal(formatTable([], cols), 'ID  STATE  N  ERROR\n');
  });

  test('key/value blocks align their values', () => {
    assert.equal(formatKeyValues([['id', 'x'], ['exit code', 0], ['error', null]]), 'id:         x\nexit code:  0\nerror:      -\n');
  });
});

describe('formatters', () => {
  test('durations', () => {
    assert.equal(formatDuration(250), '250ms');
    assert.equal(formatDuration(1500), '1.5s');
    assert.equal(formatDuration(42_000), '42s');
    assert.equal(formatDuration(125_000), '2m05s');
    assert.equal(formatDuration(3 * 3600_000 + 60_000), '3h01m');
  });

  test('bytes', () => {
    assert.equal(formatBytes(13), '13 B');
    assert.equal(formatBytes(1536), '1.5 KiB');
    assert.equal(formatBytes(200 * 1024 * 1024), '200 MiB');
  });
});
