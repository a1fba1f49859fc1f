/** End to end: a real coordinator (SQLite in a temp dir, port 0) and real agents over HTTP. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { cryptoRandom, issueEnrollment, issueToken, loadCoordinatorConfig, type RunningCoordinator, startCoordinator } from '@gpux/coordinator';
import { type Executor, systemClock } from '@gpux/core';
import type { GetJobResponse, JobLogsResponse, JobResultResponse, JobSpecInput, ListNodesResponse, SubmitJobResponse } from '@gpux/protocol';
import pino from 'pino';
import { loadAgentConfig, ProcessExecutor, type RunningAgent, seededRandom, silentLogger, startAgent, startSimulatedNodes } from '../src/index.js';
import { tempDir } from './helpers.js';

type T = { after(fn: () => unknown): void };

/** A coordinator, its operator token (on a fresh database) and an enrollment token its nodes register with. */
async function coordinator(t: T, dir: string, port = 0): Promise<RunningCoordinator & { token: string; enrollment: string }> {
  const config = loadCoordinatorConfig({}, { dataDir: dir, port, heartbeatIntervalMs: 300, leaseTtlMs: 3000, nodeOfflineAfterMs: 3000, logLevel: 'silent', retryBaseBackoffMs: 100, market: false });
  const c = await startCoordinator(config, { logger: pino({ level: 'silent' }) });
  t.after(() => c.close());
  const provider = await issueToken(c.store, { role: 'buyer', name: 'provider' }, systemClock, cryptoRandom);
  const enrollment = (await issueEnrollment(c.store, { accountId: provider.accountId, name: 'nodes' }, systemClock, cryptoRandom)).token;
  return { ...c, token: c.bootstrapOperatorToken ?? '', enrollment };
}

async function api<R>(c: { url: string }, token: string, method: string, path: string, body?: unknown): Promise<R> {
  const res = await fetch(`${c.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${JSON.stringify(json)}`);
  return json as R;
}

async function until<V>(what: string, fn: () => Promise<V | undefined>, timeoutMs = 60_000): Promise<V> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const submit = (c: { url: string }, token: string, spec: Omit<JobSpecInput, 'name' | 'image'>) =>
  api<SubmitJobResponse>(c, token, 'POST', '/v1/jobs', { spec: { name: 'e2e', image: 'busybox', ...spec } }).then((r) => r.job.id);

const jobIn = (c: { url: string }, token: string, id: string, states: string[]) =>
  until(`job ${id} in ${states.join('/')}`, async () => {
    const r = await api<GetJobResponse>(c, token, 'GET', `/v1/jobs/${id}`);
    return states.includes(r.job.state) ? r : undefined;
  });

async function processAgent(t: T, c: { url: string; enrollment: string }, dir: string): Promise<RunningAgent> {
  const config = loadAgentConfig({}, { coordinatorUrl: c.url, enrollmentToken: c.enrollment, dataDir: join(dir, 'node'), executor: 'process', allowUnsafeProcess: true, pollWaitMs: 2000 });
  const executor = new ProcessExecutor({ allowUnsafe: true, workRoot: join(dir, 'work'), killGraceMs: 500 });
  const agent = await startAgent(config, { executor, logger: silentLogger, detect: { docker: { socketPath: join(dir, 'no-docker.sock') } } });
  t.after(() => agent.stop());
  return agent;
}

describe('agent ↔ coordinator', () => {
  test('a job runs on the process executor; logs and outputs reach the buyer', async (t) => {
    const dir = await tempDir(t);
    const c = await coordinator(t, join(dir, 'coord'));
    const agent = await processAgent(t, c, dir);
    const id = await submit(c, c.token, {
      command: ['/bin/sh', '-c', 'echo "hello from $GPUX_JOB_ID"; echo oops >&2; cat "$GPUX_INPUTS/in.txt" > "$GPUX_OUTPUTS/out.txt"'],
      inputs: [{ path: 'in.txt', content: 'payload' }],
    });
    const done = await jobIn(c, c.token, id, ['succeeded', 'failed', 'cancelled']);
    assert.equal(done.job.state, 'succeeded', JSON.stringify(done.attempts));
    assert.equal(done.attempts[0]?.nodeId, agent.nodeId);
    const logs = await until('logs', async () => {
      const r = await api<JobLogsResponse>(c, c.token, 'GET', `/v1/jobs/${id}/logs`);
      return r.done ? r : undefined;
    });
    const text = (s: string) =>
      logs.entries
        .filter((e) => e.stream === s)
        .map((e) => e.data)
        .join('');
    assert.equal(text('stdout'), `hello from ${id}\n`);
    assert.equal(text('stderr'), 'oops\n');
    const result = await api<JobResultResponse>(c, c.token, 'GET', `/v1/jobs/${id}/result`);
    assert.equal(result.exitCode, 0);
    assert.deepEqual(
      result.outputs.map((o) => [o.path, Buffer.from(o.content ?? '', 'base64').toString()]),
      [['out.txt', 'payload']],
    );
    assert.equal(agent.activeAttempts, 0);
  });

  test('job events the executor reports (image pulls) reach the job’s history, before the attempt ends', async (t) => {
    const dir = await tempDir(t);
    const c = await coordinator(t, join(dir, 'coord'));
    const inner = new ProcessExecutor({ allowUnsafe: true, workRoot: join(dir, 'work'), killGraceMs: 500 });
    // The process executor pulls nothing: a thin wrapper reports a pull through the sink, as the docker executor does.
    const executor: Executor = {
      kind: 'process',
      start: (req, log, events) => {
        events?.('image.pull.started', { image: 'busybox' });
        events?.('image.pull.finished', { image: 'busybox', imageId: 'sha256:x', seconds: 0 });
        return inner.start(req, log);
      },
    };
    const config = loadAgentConfig({}, { coordinatorUrl: c.url, enrollmentToken: c.enrollment, dataDir: join(dir, 'node'), executor: 'process', allowUnsafeProcess: true, pollWaitMs: 2000 });
    const agent = await startAgent(config, { executor, logger: silentLogger, detect: { docker: { socketPath: join(dir, 'no-docker.sock') } } });
    t.after(() => agent.stop());
    const id = await submit(c, c.token, { command: ['/bin/sh', '-c', 'echo ran'] });
    const done = await jobIn(c, c.token, id, ['succeeded', 'failed', 'cancelled']);
    assert.equal(done.job.state, 'succeeded', JSON.stringify(done.attempts));
    const types = done.events.map((e) => e.type);
    assert.ok(types.indexOf('attempt.started') < types.indexOf('image.pull.started'), types.join());
    assert.ok(types.indexOf('image.pull.started') < types.indexOf('image.pull.finished'), types.join());
    assert.ok(types.indexOf('image.pull.finished') < types.indexOf('attempt.finished'), types.join());
    assert.equal(done.events.find((e) => e.type === 'image.pull.finished')?.data.attemptId, done.attempts[0]?.id);
  });

  test('cancelling a running job stops it on the node', async (t) => {
    const dir = await tempDir(t);
    const c = await coordinator(t, join(dir, 'coord'));
    const agent = await processAgent(t, c, dir);
    const id = await submit(c, c.token, { command: ['/bin/sh', '-c', 'echo started; sleep 120'] });
    await jobIn(c, c.token, id, ['running']);
    await until('the attempt on the node', async () => (agent.activeAttempts === 1 ? true : undefined));
    await api(c, c.token, 'POST', `/v1/jobs/${id}/cancel`);
    const done = await jobIn(c, c.token, id, ['cancelled', 'failed', 'succeeded']);
    assert.equal(done.job.state, 'cancelled');
    await until('the node to let go', async () => (agent.activeAttempts === 0 ? true : undefined));
  });

  test('stop() during a run reports the attempt failed without exit code, so the job is retried', async (t) => {
    const dir = await tempDir(t);
    const c = await coordinator(t, join(dir, 'coord'));
    const agent = await processAgent(t, c, dir);
    const id = await submit(c, c.token, { command: ['/bin/sh', '-c', 'sleep 120'], maxRetries: 2 });
    await until('the attempt on the node', async () => (agent.activeAttempts === 1 ? true : undefined));
    await agent.stop();
    const r = await until('the attempt to end', async () => {
      const j = await api<GetJobResponse>(c, c.token, 'GET', `/v1/jobs/${id}`);
      return j.attempts[0]?.state === 'failed' ? j : undefined;
    });
    assert.equal(r.attempts[0]?.exitCode, null);
    assert.equal(r.attempts[0]?.error, 'the node agent shut down');
    assert.ok(['queued', 'assigned'].includes(r.job.state), r.job.state);
  });

  test('stop({ graceful: true }) lets a running job finish', async (t) => {
    const dir = await tempDir(t);
    const c = await coordinator(t, join(dir, 'coord'));
    const agent = await processAgent(t, c, dir);
    const id = await submit(c, c.token, { command: ['/bin/sh', '-c', 'sleep 1; echo finished'] });
    await until('the attempt on the node', async () => (agent.activeAttempts === 1 ? true : undefined));
    await agent.stop({ graceful: true });
    const done = await jobIn(c, c.token, id, ['succeeded', 'failed', 'cancelled', 'queued']);
    assert.equal(done.job.state, 'succeeded');
  });

  test('the agent rides out a coordinator restart and keeps taking work', async (t) => {
    const dir = await tempDir(t);
    const first = await coordinator(t, join(dir, 'coord'));
    const agent = await processAgent(t, first, dir);
    await first.close();
    await new Promise((r) => setTimeout(r, 1500)); // an outage of a few polls and heartbeats
    const second = await coordinator(t, join(dir, 'coord'), first.port);
    const id = await submit(second, first.token, { command: ['/bin/sh', '-c', 'echo back'] });
    const done = await jobIn(second, first.token, id, ['succeeded', 'failed', 'cancelled']);
    assert.equal(done.job.state, 'succeeded');
    assert.equal(done.attempts[0]?.nodeId, agent.nodeId);
  });

  test('simulated nodes register with the trace’s shapes and run GPU jobs', async (t) => {
    const dir = await tempDir(t);
    const c = await coordinator(t, join(dir, 'coord'));
    const fleet = await startSimulatedNodes(3, { coordinatorUrl: c.url, enrollmentToken: c.enrollment, dataDir: join(dir, 'sim'), random: seededRandom(7), pollWaitMs: 2000 });
    t.after(() => fleet.stop());
    const nodes = await api<ListNodesResponse>(c, c.token, 'GET', '/v1/nodes');
    assert.equal(nodes.nodes.length, 3);
    for (const n of nodes.nodes) {
      assert.equal(n.simulated, true);
      assert.equal(n.advertisement.labels.simulated, 'true');
      assert.ok(n.advertisement.gpus.every((g) => g.uuid.startsWith('SIM-')));
    }
    const id = await submit(c, c.token, { command: ['train'], resources: { gpu: { count: 1 } }, env: { GPUX_SIM_SECONDS: '0.2' } });
    const done = await jobIn(c, c.token, id, ['succeeded', 'failed', 'cancelled']);
    assert.equal(done.job.state, 'succeeded');
    assert.equal(done.attempts[0]?.gpuIndices.length, 1);
  });
});
