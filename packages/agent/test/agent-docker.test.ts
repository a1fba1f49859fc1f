/** The node agent with its default executor (docker) against a real coordinator: reconcile at start, a job, a cancel. */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, test } from 'node:test';
import { type Logger, systemClock } from '@gpux/core';
import { cryptoRandom, issueEnrollment, issueToken, loadCoordinatorConfig, startCoordinator } from '@gpux/coordinator';
import type { GetJobResponse, JobLogsResponse, JobResultResponse, SubmitJobResponse } from '@gpux/protocol';
import { buildBusyboxImage, dockerSocket, requireDocker, TEST_IMAGE } from '@gpux/testing';
import pino from 'pino';
import { connectDocker, loadAgentConfig, loadOrCreateIdentity, managedFilter, managedLabels, startAgent } from '../src/index.js';
import { tempDir } from './helpers.js';

function capturingLogger(lines: string[]): Logger {
  const logger: Logger = {
    debug() {},
    info: (obj, msg) => void lines.push(`${typeof obj === 'string' ? obj : (msg ?? '')} ${typeof obj === 'object' ? JSON.stringify(obj) : ''}`),
    warn: (obj, msg) => void lines.push(`${typeof obj === 'string' ? obj : (msg ?? '')} ${typeof obj === 'object' ? JSON.stringify(obj) : ''}`),
    error() {},
    child: () => logger,
  };
  return logger;
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

describe('node agent on the docker executor', requireDocker(), () => {
  before(() => buildBusyboxImage());

  test('removes a crash’s leftover container at start, runs a job in a container, and a cancel stops its container', async (t) => {
    const dir = await tempDir(t);
    const coord = await startCoordinator(
      loadCoordinatorConfig({}, { dataDir: join(dir, 'coord'), port: 0, heartbeatIntervalMs: 300, leaseTtlMs: 5000, logLevel: 'silent', market: false }),
      { logger: pino({ level: 'silent' }) },
    );
    t.after(() => coord.close());
    const token = coord.bootstrapOperatorToken ?? '';
    const provider = await issueToken(coord.store, { role: 'buyer', name: 'provider' }, systemClock, cryptoRandom);
    const enrollmentToken = (await issueEnrollment(coord.store, { accountId: provider.accountId, name: 'nodes' }, systemClock, cryptoRandom)).token;
    const api = async <R>(method: string, path: string, body?: unknown): Promise<R> => {
      const res = await fetch(`${coord.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = await res.json();
      if (!res.ok) throw new Error(`${method} ${path}: HTTP ${res.status} ${JSON.stringify(json)}`);
      return json as R;
    };
    const jobIn = (id: string, states: string[]) =>
      until(`job ${id} in ${states.join('/')}`, async () => {
        const r = await api<GetJobResponse>('GET', `/v1/jobs/${id}`);
        return states.includes(r.job.state) ? r : undefined;
      });

    // A container a crashed agent of this node left behind.
    const dataDir = join(dir, 'node');
    const { nodeId } = await loadOrCreateIdentity(dataDir);
    const docker = connectDocker();
    const leftover = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ['sleep', '600'], Labels: managedLabels(nodeId, 'j-old', 'a-old') });
    await leftover.start();
    t.after(() => leftover.remove({ force: true }).catch(() => {}));
    const managed = () => docker.listContainers({ all: true, filters: JSON.stringify(managedFilter(nodeId)) });

    const lines: string[] = [];
    const config = loadAgentConfig({}, { coordinatorUrl: coord.url, enrollmentToken, dataDir, pollWaitMs: 2000, dockerSocket: dockerSocket() });
    assert.equal(config.executor, 'docker');
    const agent = await startAgent(config, { logger: capturingLogger(lines) });
    t.after(() => agent.stop());
    assert.equal(agent.nodeId, nodeId);
    assert.deepEqual(await managed(), [], 'the leftover container is gone');
    assert.ok(
      lines.some((l) => l.startsWith('removed 1 leftover container(s) and 0 volume(s) of this node') && l.includes('a-old')),
      lines.join('\n'),
    );

    const submit = async (command: string[], extra: object = {}) =>
      (await api<SubmitJobResponse>('POST', '/v1/jobs', { spec: { name: 'docker-e2e', image: TEST_IMAGE, command, maxRetries: 0, ...extra } })).job.id;
    const id = await submit(['sh', '-c', 'echo "in a container as $(id -u)"; cat "$GPUX_INPUTS/in.txt" > "$GPUX_OUTPUTS/out.txt"'], {
      inputs: [{ path: 'in.txt', content: 'payload' }],
    });
    const done = await jobIn(id, ['succeeded', 'failed', 'cancelled']);
    assert.equal(done.job.state, 'succeeded', JSON.stringify(done.attempts));
    const logs = await until('logs', async () => {
      const r = await api<JobLogsResponse>('GET', `/v1/jobs/${id}/logs`);
      return r.done ? r : undefined;
    });
    const text = (s: string) =>
      logs.entries
        .filter((e) => e.stream === s)
        .map((e) => e.data)
        .join('');
    assert.equal(text('stdout'), 'in a container as 65534\n');
    assert.match(text('system'), /^image: gpux-test\/busybox:latest is present on this node/m, 'the buyer sees the image step');
    const result = await api<JobResultResponse>('GET', `/v1/jobs/${id}/result`);
    assert.deepEqual(
      result.outputs.map((o) => [o.path, Buffer.from(o.content ?? '', 'base64').toString()]),
      [['out.txt', 'payload']],
    );

    const long = await submit(['sh', '-c', 'echo started; sleep 600']);
    await until('the long job’s container', async () => ((await managed()).some((c) => c.State === 'running') ? true : undefined));
    await api('POST', `/v1/jobs/${long}/cancel`);
    const cancelled = await jobIn(long, ['cancelled', 'failed', 'succeeded']);
    assert.equal(cancelled.job.state, 'cancelled');
    await until('the container removed', async () => ((await managed()).length === 0 ? true : undefined), 30_000);
  });
});

test('an unreachable engine stops the node at start with a clear reason', async (t) => {
  const dir = await tempDir(t);
  const config = loadAgentConfig({}, { coordinatorUrl: 'http://127.0.0.1:9', dataDir: join(dir, 'node'), dockerSocket: join(dir, 'no-docker.sock') });
  await assert.rejects(startAgent(config, { logger: capturingLogger([]) }), (e: Error & { code?: string }) => {
    assert.equal(e.code, 'UNAVAILABLE');
    assert.match(e.message, /the docker executor needs a Docker engine, but none is reachable at .*no-docker\.sock/);
    assert.match(e.message, /systemctl start docker/);
    return true;
  });
});
