/**
 * The coordinator's identity end to end (issue 19), with the real CLI as processes:
 * - a man in the middle between a node agent and its coordinator rewrites the command of an assignment: the agent
 *   refuses it (its seal no longer verifies), never runs it, and tells the coordinator, which queues the job again
 *   without penalizing the node; the job then runs on a node that talks to the coordinator directly. The proxy is
 *   plain HTTP on loopback: TLS would stop a proxy without a trusted certificate, so this is the case TLS does not
 *   cover (a proxy holding a certificate the agent trusts, or an agent run with --insecure);
 * - the coordinator's key is rotated while the agent runs: the agent follows the endorsement chain and keeps working;
 * - an agent that pinned one coordinator's key refuses another coordinator, at registration.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { issueEnrollment, issueToken, openStore } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { GpuxClient } from '@gpux/sdk';
import { FAST_TIMING_ENV, freePort, spawnGpux, waitFor, type GpuxProcess, testRandom } from '../src/processes.js';
import { tempDir } from '../src/temp-dir.js';

const random = testRandom;
const env = {
  ...FAST_TIMING_ENV,
  GPUX_LOG_LEVEL: 'info',
  GPUX_MARKET: 'off',
};

interface Coordinator {
  url: string;
  token: string;
  /** An enrollment token made through the API: it names the coordinator's key. */
  enrollment: string;
  /** One made straight in the store, without a fingerprint (as tokens made before issue 19). */
  plainEnrollment: string;
  dataDir: string;
  process: GpuxProcess;
  client: GpuxClient;
}

async function startCoordinator(dir: string, name: string): Promise<Coordinator> {
  const dataDir = join(dir, name);
  const db = `sqlite:${join(dataDir, 'coordinator.db')}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const process = spawnGpux(['coordinator', 'start', '--db', db, '--port', String(port), '--data-dir', dataDir], { ...env, GPUX_HOME: join(dir, `${name}-home`) });
  await waitFor(`coordinator ${name} ready`, async () => ((await fetch(`${url}/readyz`)).ok ? true : undefined), 60_000);
  const store = await openStore(db);
  const { token, accountId } = await issueToken(store, { role: 'operator', name: 'identity-e2e' }, systemClock, random);
  const plainEnrollment = (await issueEnrollment(store, { accountId, name: 'plain' }, systemClock, random)).token;
  await store.close();
  const client = new GpuxClient({ url, token });
  const enrollment = (await client.createEnrollment({ name: 'nodes' })).token;
  return { url, token, enrollment, plainEnrollment, dataDir, process, client };
}

function startAgent(dir: string, name: string, coordinatorUrl: string, enrollment: string, extra: string[] = []): GpuxProcess {
  return spawnGpux(
    ['node', 'start', '--coordinator', coordinatorUrl, '--enrollment-token', enrollment, '--executor', 'process', '--allow-unsafe-process', '--data-dir', join(dir, name), '--name', name, ...extra],
    { ...env, GPUX_HOME: join(dir, `${name}-home`) },
  );
}

/** The exit code of a process that should end by itself within a minute. */
const exitOf = (p: GpuxProcess) => waitFor('the process to exit', () => p.child.exitCode ?? undefined, 60_000);

/** A proxy that forwards everything to `target` and rewrites the command of every assignment it sees. */
function rewritingProxy(target: string, command: string[]): Promise<{ url: string; rewritten: () => number; close: () => Promise<void> }> {
  let rewritten = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      try {
        const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'content-length', 'connection'].includes(k)) as [string, string][]);
        const body = chunks.length ? Buffer.concat(chunks) : undefined;
        const up = await fetch(`${target}${req.url}`, { method: req.method, headers, body });
        let text = await up.text();
        if (req.url?.startsWith('/v1/agent/work') && up.ok) {
          const json = JSON.parse(text) as { assignments: { spec: { command: string[] } }[] };
          for (const a of json.assignments) {
            a.spec.command = command;
            rewritten++;
          }
          text = JSON.stringify(json);
        }
        res.writeHead(up.status, { 'content-type': up.headers.get('content-type') ?? 'application/json' });
        res.end(text);
      } catch (e) {
        res.writeHead(502);
        res.end(String(e));
      }
    });
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address() as { port: number };
      resolve({
        url: `http://127.0.0.1:${addr.port}`,
        rewritten: () => rewritten,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
}

describe("the coordinator's identity, end to end", () => {
  test('a man in the middle rewrites an assignment: the agent refuses it, never runs it, and the job runs elsewhere', { timeout: 240_000 }, async () => {
    const dir = tempDir('gpux-mitm');
    const pwned = join(dir.path, 'PWNED');
    const c = await startCoordinator(dir.path, 'coord');
    const proxy = await rewritingProxy(c.url, ['sh', '-c', `touch ${pwned}`]);
    const agents: GpuxProcess[] = [];
    try {
      agents.push(startAgent(dir.path, 'victim', proxy.url, c.enrollment));
      await waitFor('the victim node online', async () => ((await c.client.listNodes({ status: 'online' })).nodes.length === 1 ? true : undefined));
      const { job } = await c.client.submitJob({
        name: 'honest',
        image: 'busybox',
        command: ['sh', '-c', 'echo honest > "$GPUX_OUTPUTS/r.txt"'],
        resources: { gpu: { count: 0 }, cpuCores: 1 },
        timeoutSeconds: 60,
        maxRetries: 5,
      });
      const refused = await waitFor('the refusal in the job history', async () => (await c.client.getJob(job.id)).events.find((e) => e.type === 'attempt.refused'), 60_000);
      assert.ok(proxy.rewritten() >= 1, 'the proxy rewrote the assignment');
      assert.match(JSON.stringify(refused.data), /signature/);
      assert.match(agents[0]!.output(), /refus/i, 'the agent logged the refusal');

      // An honest node reaches the coordinator directly; the job runs there.
      agents.push(startAgent(dir.path, 'honest', c.url, c.enrollment));
      const done = await waitFor('the job succeeded', async () => {
        const j = await c.client.getJob(job.id);
        return ['succeeded', 'failed', 'cancelled'].includes(j.job.state) ? j : undefined;
      }, 120_000);
      assert.equal(done.job.state, 'succeeded');
      assert.equal(existsSync(pwned), false, 'the rewritten command never ran');
      const result = await c.client.jobResult(job.id);
      assert.equal(Buffer.from(result.outputs.find((o) => o.path === 'r.txt')!.content!, 'base64').toString().trim(), 'honest');
      const victimId = done.attempts[0]!.nodeId;
      assert.notEqual(done.attempts.at(-1)!.nodeId, victimId);
      const penalties = await c.client.nodePenalties(victimId);
      assert.deepEqual(penalties.penalties, [], 'the node that refused was not penalized');
    } finally {
      await Promise.all(agents.map((a) => a.stop('SIGTERM', 5_000)));
      await proxy.close();
      await c.process.stop('SIGTERM', 5_000);
      await dir.cleanup();
    }
  });

  test('a key rotation is followed by running agents; an agent pinned to one coordinator refuses another', { timeout: 240_000 }, async () => {
    const dir = tempDir('gpux-identity');
    const a = await startCoordinator(dir.path, 'coord-a');
    const b = await startCoordinator(dir.path, 'coord-b');
    const agents: GpuxProcess[] = [];
    try {
      const run = async (c: Coordinator, name: string) => {
        const { job } = await c.client.submitJob({ name, image: 'busybox', command: ['true'], resources: { gpu: { count: 0 }, cpuCores: 1 }, timeoutSeconds: 60 });
        return waitFor(`${name} succeeded`, async () => ((await c.client.getJob(job.id)).job.state === 'succeeded' ? true : undefined), 60_000);
      };
      agents.push(startAgent(dir.path, 'node', a.url, a.enrollment));
      await run(a, 'before-rotation');

      const before = (await (await fetch(`${a.url}/v1/coordinator/identity`)).json()) as { signingKey: string };
      const rotate = spawnGpux(['coordinator', 'key', 'rotate', '--data-dir', a.dataDir, '--activate-in', '0'], env);
      assert.equal(await exitOf(rotate), 0, rotate.output());
      const after = await waitFor('the coordinator signs with the new key', async () => {
        const id = (await (await fetch(`${a.url}/v1/coordinator/identity`)).json()) as { signingKey: string; keys: unknown[] };
        return id.signingKey !== before.signingKey ? id : undefined;
      }, 30_000);
      assert.equal(after.keys.length, 2);
      await run(a, 'after-rotation');
      const pins = readFileSync(join(dir.path, 'node', 'coordinator-keys.json'), 'utf8');
      assert.ok(pins.includes(after.signingKey), 'the agent now trusts the rotated key');
      await agents[0]!.stop('SIGTERM', 10_000);

      // The same node (its pinned keys in its data dir) pointed at another coordinator.
      const wrong = startAgent(dir.path, 'node', b.url, b.enrollment);
      const code = await exitOf(wrong);
      assert.notEqual(code, 0, wrong.output());
      assert.match(wrong.output(), /not the one this node/i, wrong.output());

      // A fresh node told A's fingerprint up front refuses B as well.
      const pinned = startAgent(dir.path, 'fresh', b.url, b.plainEnrollment, ['--coordinator-key', before.signingKey]);
      const code2 = await exitOf(pinned);
      assert.notEqual(code2, 0, pinned.output());
      assert.match(pinned.output(), /not the one this node/i, pinned.output());
    } finally {
      await Promise.all(agents.map((x) => x.stop('SIGTERM', 5_000)));
      await a.process.stop('SIGTERM', 5_000);
      await b.process.stop('SIGTERM', 5_000);
      await dir.cleanup();
    }
  });
});
