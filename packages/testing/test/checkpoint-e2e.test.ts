/**
 * Checkpoints end to end (issue 13), with the real CLI as processes: a job with `checkpoint: { everySeconds: 10 }`
 * counts to 40, one step a second, keeping its count in $GPUX_CHECKPOINTS/n. Once it passed 15 its node's agent is
 * SIGKILLed; the coordinator notices the lost lease and a second node takes the retry, which starts from the
 * latest checkpoint the first node uploaded: the work redone is bounded by the interval, not the whole run.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { issueToken, openStore } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { blobsOf, GpuxClient } from '@gpux/sdk';
import { FAST_TIMING_ENV, freePort, type GpuxProcess, spawnGpux, waitFor, testRandom } from '../src/processes.js';
import { tempDir } from '../src/temp-dir.js';

const EVERY_SECONDS = 10;
const TARGET = 40;
const KILL_AT = 15;
const random = testRandom;
// Short leases, so the first node's loss is noticed in seconds.
const env = {
  ...FAST_TIMING_ENV,
  GPUX_LOG_LEVEL: 'info',
  GPUX_MARKET: 'off',
};

// The count is saved atomically (written beside, then renamed), as a job should save its state. The job also
// stops when its agent is gone ($PPID), as it would with the machine: a SIGKILLed agent leaves its process behind.
const COUNTER = [
  'n=$(cat "$GPUX_CHECKPOINTS/n" 2>/dev/null || echo 0); start=$n; steps=0',
  'echo "start $n"',
  `while [ "$n" -lt ${TARGET} ]; do`,
  '  sleep 1',
  '  kill -0 "$PPID" 2>/dev/null || exit 3',
  '  n=$((n+1)); steps=$((steps+1))',
  '  echo "$n" > "$HOME/n.tmp" && mv "$HOME/n.tmp" "$GPUX_CHECKPOINTS/n"',
  '  echo "step $n"',
  'done',
  'echo "$n $steps $start" > "$GPUX_OUTPUTS/result.txt"',
].join('\n');

/** The agent's JSON log lines with this message. */
function logLines(p: GpuxProcess, msg: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of p.output().split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const l = JSON.parse(line) as Record<string, unknown>;
      if (l.msg === msg) out.push(l);
    } catch {
      // not a log line
    }
  }
  return out;
}

describe('checkpoints end to end (real CLI, coordinator and two agents)', () => {
  test('a node killed mid-job: the retry on another node resumes from the checkpoint, redoing at most the interval', { timeout: 180_000 }, async (t) => {
    const dir = tempDir('gpux-ckpt-e2e');
    const dataDir = join(dir.path, 'coord');
    const db = `sqlite:${join(dataDir, 'coordinator.db')}`;
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const procs: GpuxProcess[] = [];
    const agent = (name: string, enrollment: string) =>
      spawnGpux(
        ['node', 'start', '--coordinator', url, '--enrollment-token', enrollment, '--executor', 'process', '--allow-unsafe-process', '--data-dir', join(dir.path, name), '--name', name],
        { ...env, GPUX_HOME: join(dir.path, `${name}-home`) },
      );
    try {
      await mkdir(dataDir, { recursive: true });
      procs.push(spawnGpux(['coordinator', 'start', '--db', db, '--port', String(port), '--data-dir', dataDir], { ...env, GPUX_HOME: join(dir.path, 'coord-home') }));
      await waitFor('coordinator ready', async () => ((await fetch(`${url}/readyz`).catch(() => null))?.ok ? true : undefined), 60_000);
      const store = await openStore(db);
      const operator = (await issueToken(store, { role: 'operator', name: 'ckpt-e2e' }, systemClock, random)).token;
      const buyerToken = (await issueToken(store, { role: 'buyer', name: 'ckpt-e2e-buyer' }, systemClock, random)).token;
      await store.close();
      const enrollment = (await new GpuxClient({ url, token: operator }).createEnrollment({ name: 'nodes' })).token;
      const buyer = new GpuxClient({ url, token: buyerToken });

      const first = agent('node-a', enrollment);
      procs.push(first);
      await waitFor('the first node online', async () => ((await new GpuxClient({ url, token: operator }).listNodes({ status: 'online' })).nodes.length === 1 ? true : undefined), 60_000);
      const { job } = await buyer.submitJob({
        name: 'counter',
        image: 'busybox',
        command: ['sh', '-c', COUNTER],
        resources: { gpu: { count: 0 }, cpuCores: 1 },
        timeoutSeconds: 300,
        maxRetries: 3,
        checkpoint: { everySeconds: EVERY_SECONDS },
      });

      // Once the count passed KILL_AT (read in the job's logs), SIGKILL the first node's agent.
      let after = -1;
      let seen = 0;
      await waitFor(
        `the count at ${KILL_AT}`,
        async () => {
          const page = await buyer.jobLogs(job.id, { after });
          after = page.next;
          for (const e of page.entries) for (const m of e.data.matchAll(/step (\d+)/g)) seen = Math.max(seen, Number(m[1]));
          return seen >= KILL_AT ? true : undefined;
        },
        60_000,
      );
      await first.stop('SIGKILL');
      // What the first attempt had reached: its count on disk (at most one step more follows, before it sees its agent gone).
      const work = join(dir.path, 'node-a', 'work');
      const attemptDir = readdirSync(work).find((d) => !d.endsWith('.tar'));
      assert.ok(attemptDir, 'the first attempt\'s work dir');
      const reached = Number(readFileSync(join(work, attemptDir, 'checkpoints', 'n'), 'utf8'));
      assert.ok(reached >= KILL_AT, `reached ${reached}`);
      const uploads = logLines(first, 'uploaded a checkpoint');
      assert.ok(uploads.length >= 1, 'the first node uploaded a checkpoint before it died');

      const second = agent('node-b', enrollment);
      procs.push(second);
      const done = await waitFor(
        'the job done',
        async () => {
          const j = await buyer.getJob(job.id);
          return ['succeeded', 'failed', 'cancelled'].includes(j.job.state) ? j : undefined;
        },
        120_000,
      );
      assert.equal(done.job.state, 'succeeded', `${JSON.stringify(done.attempts)}\n--- node-b ---\n${second.output().slice(-3000)}`);
      assert.equal(done.attempts.length, 2);
      const [lost, retry] = done.attempts;
      assert.equal(lost?.state, 'lost');
      assert.equal(retry?.state, 'succeeded');

      // The retry carried the first attempt's latest checkpoint (named in its sealed assignment) and restored it.
      const restored = logLines(second, 'restored the checkpoint');
      assert.equal(restored.length, 1, second.output().slice(-3000));
      assert.equal(restored[0]?.fromAttempt, lost?.id);
      assert.equal(restored[0]?.sha256, uploads.at(-1)?.sha256, 'the latest upload before the kill');

      // The checkpoint is a blob of the buyer: its count is where the retry started.
      const blob = join(dir.path, 'checkpoint.tar');
      await blobsOf(buyer).downloadToFile(String(restored[0]?.sha256), blob);
      await mkdir(join(dir.path, 'ckpt'));
      execFileSync('tar', ['-xf', blob, '-C', join(dir.path, 'ckpt')]); // a plain tar: the system's tar reads it
      const checkpointed = Number(readFileSync(join(dir.path, 'ckpt', 'n'), 'utf8'));

      const result = await buyer.jobResult(job.id);
      const text = Buffer.from(result.outputs?.find((o) => o.path === 'result.txt')?.content ?? '', 'base64').toString();
      const [n, steps, start] = text.trim().split(' ').map(Number);
      assert.equal(n, TARGET);
      assert.equal(start, checkpointed, 'the retry started from the checkpointed count');
      assert.ok(start !== undefined && start > 0, `started at ${start}`);
      assert.equal(steps, TARGET - (start ?? 0), 'and counted only the rest');
      const redone = reached - (start ?? 0);
      t.diagnostic(`first attempt reached ${reached} (${uploads.length} uploads); the retry resumed at ${start}: ${redone} steps redone`);
      assert.ok(redone >= 0 && redone <= EVERY_SECONDS + 3, `steps redone: ${redone} (reached ${reached}, resumed at ${start})`);
    } finally {
      for (const p of procs.reverse()) await p.stop();
      await dir.cleanup();
    }
  });
});
