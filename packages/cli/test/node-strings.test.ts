/** Node-chosen strings in the terminal (issue 10 item 12): escaped in tables, details and messages; job output stays raw. */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { GetJobResponse, JobLogEntry } from '@gpux/protocol';
import type { Io } from '../src/context.js';
import { formatJobDetail, summarizeJob, writeLogEntry } from '../src/job-format.js';
import { safeTarget } from '../src/job-outputs.js';
import { escapeControl, formatKeyValues, formatTable } from '../src/output.js';

const ESC = '\u001b';

test('escapeControl makes C0, DEL, C1 and line-reordering marks visible, and leaves the rest alone', () => {
  assert.equal(escapeControl(`a${ESC}[2Jb\u0007c\u007fd\u009be\u202ef\u2028g`), 'a\\x1b[2Jb\\x07c\\x7fd\\x9be\\u202ef\\u2028g');
  assert.equal(escapeControl('plain ü 日本 😀'), 'plain ü 日本 😀');
});

test('table and key-value cells escape control characters (hostnames, labels, errors, event data)', () => {
  const table = formatTable([{ host: `gpu${ESC}]0;owned\u0007box` }], [{ header: 'HOST', value: (r) => r.host }]);
  assert.ok(!table.includes(ESC) && !table.includes('\u0007'), table);
  assert.match(table, /gpu\\x1b\]0;owned\\x07box/);
  const kv = formatKeyValues([['error', `boom${ESC}[31m`]]);
  assert.ok(!kv.includes(ESC));
});

function detail(): GetJobResponse {
  const at = 1_700_000_000_000;
  return {
    job: {
      id: 'job-1',
      name: 'n',
      buyerId: 'b',
      state: 'failed',
      spec: { name: 'n', image: 'busybox', command: ['true'], args: [], env: {}, inputs: [], resources: { gpu: { count: 0 } }, timeoutSeconds: 60, maxRetries: 0 } as never,
      attemptCount: 1,
      currentAttemptId: 'att-1',
      runAfter: null,
      exitCode: 1,
      error: `node says ${ESC}[2J`,
      cancelRequested: false,
      createdAt: at,
      updatedAt: at,
      startedAt: at,
      finishedAt: at + 1000,
    },
    attempts: [{ id: 'att-1', jobId: 'job-1', nodeId: 'node-1', state: 'failed', gpuIndices: [], exitCode: 1, error: `x${ESC}[1A`, outputDigest: null, leaseExpiresAt: null, createdAt: at, startedAt: at, finishedAt: at + 1000 }],
    events: [{ seq: 1, at, subject: 'job', subjectId: 'job-1', type: 'image.pull.progress', data: { layer: `l${ESC}[8m\u009b` } }],
    moreEventsBefore: 0,
    nodeEventsElided: 3,
  };
}

test('gpux job get: no raw control character reaches the terminal; older events and elided ones are pointed out', () => {
  const out = formatJobDetail(detail());
  // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for raw control characters is the point
  assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(out), JSON.stringify(out));
  assert.match(out, /3 image-pull event\(s\) left out/);
  assert.match(out, /gpux job get job-1 --events-before 0/);
  assert.ok(!summarizeJob(detail().job).includes(ESC));
});

test('logs: stdout/stderr are the job’s own bytes (raw); system entries are escaped', () => {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: { write: (s: string) => out.push(s) }, err: { write: (s: string) => err.push(s) }, env: {}, exitCode: 0 } as unknown as Io;
  const e = (stream: JobLogEntry['stream'], data: string): JobLogEntry => ({ seq: 0, stream, data, at: 0, attemptId: 'a', cursor: 1 });
  writeLogEntry(io, e('stdout', `colour ${ESC}[32mok\n`));
  writeLogEntry(io, e('system', `agent ${ESC}[2J says\n`));
  writeLogEntry(io, e('system', '[gpux] log limit of 64 MiB or 200000 entries per attempt reached; 5 bytes in 1 entries dropped\n'));
  assert.equal(out.join(''), `colour ${ESC}[32mok\n`);
  assert.equal(err[0], '[gpux] agent \\x1b[2J says\n');
  assert.match(err[1] ?? '', /^\[gpux\] log limit of 64 MiB/);
  assert.ok(!(err[1] ?? '').startsWith('[gpux] [gpux]'));
});

test('an output name with control characters is refused before anything is written, and the message is escaped', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpux-cli-names-'));
  try {
    assert.throws(
      () => safeTarget(dir, `evil${ESC}[2J.txt`),
      (e: Error) => !e.message.includes(ESC) && /control characters/.test(e.message) && /evil\\x1b\[2J/.test(e.message),
    );
    assert.deepEqual(readdirSync(dir), []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
