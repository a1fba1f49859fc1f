/**
 * A real load balancer in front of coordinator replicas (issue 14): two coordinator processes on one PostgreSQL,
 * sharing one coordinator key, behind nginx (the shipped deploy/nginx/gpux.conf, its upstream given both replicas,
 * TLS from a throwaway CA). Two node agents and a buyer's SDK client go through nginx; a third agent and a second
 * SDK client are given both replicas' URLs directly (no nginx) and fail over themselves. Jobs run; then one replica
 * is SIGKILLed, and jobs are still submitted and finished, through nginx and through the direct clients.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { issueToken, openStore } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { GpuxClient } from '@gpux/sdk';
import { makeTestCa, OPENSSL_WHY, opensslAvailable } from '../src/certs.js';
import { requireComponent } from '../src/components.js';
import { NGINX_BIN, type RunningNginx, startNginx } from '../src/nginx.js';
import { requirePostgres, startPostgres, type PostgresServer } from '../src/postgres.js';
import { FAST_TIMING_ENV, freePort, type GpuxProcess, spawnGpux, waitFor, testRandom } from '../src/processes.js';
import { startReplicas } from '../src/replicas.js';
import { type TempDir, tempDir } from '../src/temp-dir.js';

const random = testRandom;
// A short leader lease: a new leader takes over within about 2 s of the old one's death.
const env = { ...FAST_TIMING_ENV, GPUX_LOG_LEVEL: 'warn', GPUX_MARKET: 'off', GPUX_LEADER_LEASE_MS: '2000' };

const jobSpec = (name: string) => ({
  name,
  image: 'busybox',
  command: ['sh', '-c', `echo "${name}" > "$GPUX_OUTPUTS/name.txt"`],
  resources: { gpu: { count: 0 }, cpuCores: 1 },
  timeoutSeconds: 60,
  maxRetries: 5,
});

const needs = [requirePostgres(), requireComponent('nginx', NGINX_BIN !== undefined && opensslAvailable(), `the test runs nginx (apt-get install nginx-light); ${OPENSSL_WHY}`)];

describe(
  'a load balancer in front of coordinator replicas',
  { skip: needs.map((n) => n.skip).find((s) => s !== false) ?? false },
  () => {
    let pg: PostgresServer;
    let dir: TempDir;
    let nginx: RunningNginx | undefined;
    const coordinators: GpuxProcess[] = [];
    const agents: GpuxProcess[] = [];

    before(async () => {
      pg = await startPostgres();
      dir = tempDir('gpux-lb');
    });
    after(async () => {
      await Promise.all(agents.map((a) => a.stop('SIGTERM', 5_000)));
      await Promise.all(coordinators.map((c) => c.stop('SIGTERM', 5_000)));
      await nginx?.stop();
      await pg?.stop();
      await dir?.cleanup();
    });

    test('jobs go on through nginx and through a client given both URLs after a replica is SIGKILLed', { timeout: 120_000 }, async (t) => {
      const t0 = Date.now();
      const phase = (what: string) => t.diagnostic(`${what} at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      const store = await openStore(pg.url); // migrates, so both replicas start on a ready schema
      const { token } = await issueToken(store, { role: 'operator', name: 'lb' }, systemClock, random);
      await store.close();

      // Two replicas on one database, sharing one coordinator key (GPUX_COORDINATOR_KEY_FILE).
      const replicas = await startReplicas({ count: 2, dbUrl: pg.url, dir: dir.path, env });
      coordinators.push(...replicas.procs);
      const direct = replicas.urls;
      const ports = direct.map((u) => Number(new URL(u).port));

      // nginx with both replicas in its upstream, TLS with a throwaway CA.
      const ngDir = join(dir.path, 'nginx');
      mkdirSync(ngDir, { recursive: true });
      const pki = makeTestCa(ngDir);
      const pair = pki.servers.server;
      assert.ok(pair);
      const httpsPort = await freePort();
      nginx = startNginx(ngDir, { httpsPort, httpPort: await freePort(), upstreams: ports, cert: pair.cert, key: pair.key });
      const lb = `https://127.0.0.1:${httpsPort}`;
      const viaLb = new GpuxClient({ url: lb, token, caFile: pki.ca });
      await waitFor('nginx to proxy /healthz', async () => {
        if (nginx?.child.exitCode !== null) assert.fail(nginx?.output());
        return (await viaLb.health().catch(() => null))?.status === 'ok' ? true : undefined;
      });
      const viaBoth = new GpuxClient({ url: direct, token });

      // Nodes: two through nginx, one given both replicas directly.
      const enrollment = (await viaLb.createEnrollment({ name: 'lb-nodes' })).token;
      const agentEnv = { ...env, GPUX_CA_FILE: pki.ca };
      const startNode = (name: string, coordinator: string) =>
        spawnGpux(
          ['node', 'start', '--coordinator', coordinator, '--enrollment-token', enrollment, '--executor', 'process', '--allow-unsafe-process', '--data-dir', join(dir.path, name), '--name', name],
          { ...agentEnv, GPUX_HOME: join(dir.path, `home-${name}`) },
        );
      agents.push(startNode('lb-0', lb), startNode('lb-1', lb), startNode('direct', direct.join(',')));
      await waitFor('3 nodes online', async () => ((await viaLb.listNodes({ status: 'online' })).nodes.length === 3 ? true : undefined), 30_000);
      phase('3 nodes online');

      const finished = async (ids: string[], what: string) => {
        let states = '';
        await waitFor(
          what,
          async () => {
            const jobs = await Promise.all(ids.map(async (id) => (await viaBoth.getJob(id)).job));
            states = jobs.map((j) => `${j.name}:${j.state}${j.error ? `(${j.error})` : ''}`).join(' ');
            return jobs.every((j) => ['succeeded', 'failed', 'cancelled'].includes(j.state)) ? jobs : undefined;
          },
          40_000,
          200,
        ).then(
          (jobs) => assert.deepEqual(jobs.filter((j) => j.state !== 'succeeded').map((j) => `${j.name} ${j.state} ${j.error}`), [], `${what}: every job succeeded`),
          (err: Error) => {
            throw new Error(`${err.message}\njobs: ${states}\nreplica 1 output: ${coordinators[1]?.output().slice(-2000)}`);
          },
        );
      };
      const submit = async (client: GpuxClient, names: string[]) => {
        const ids: string[] = [];
        for (const n of names) ids.push((await client.submitJob(jobSpec(n))).job.id);
        return ids;
      };

      const before = [...(await submit(viaLb, ['lb-a', 'lb-b', 'lb-c', 'lb-d'])), ...(await submit(viaBoth, ['both-a', 'both-b']))];
      await finished(before, 'the jobs before the kill');
      phase('the jobs before the kill finished');

      // The first replica dies without a word: nginx and the direct clients must move to the second.
      await coordinators[0]?.stop('SIGKILL');
      const afterKill = [...(await submit(viaLb, ['lb-e', 'lb-f', 'lb-g', 'lb-h'])), ...(await submit(viaBoth, ['both-c', 'both-d']))];
      assert.equal(viaBoth.url, direct[1], 'the direct client moved to the live replica and stays there');
      phase('the jobs after the kill submitted');
      await finished(afterKill, 'the jobs after the kill');
      phase('the jobs after the kill finished');

      const all = [...before, ...afterKill];
      const listed = await viaLb.listJobs({ limit: 100 });
      assert.deepEqual(listed.jobs.map((j) => j.id).sort(), [...all].sort(), 'no job lost and none duplicated');
      for (const id of all) {
        const { outputs } = await viaLb.jobResult(id);
        const { job } = await viaBoth.getJob(id);
        const file = outputs.find((o) => o.path === 'name.txt');
        assert.equal(Buffer.from(file?.content ?? '', 'base64').toString().trim(), job.name, `${job.name} returned its own output`);
      }
      // The agent given both URLs kept its node online after its first URL died.
      const { nodes } = await viaLb.listNodes({ status: 'online' });
      assert.ok(
        nodes.some((n) => n.advertisement.hostname === 'direct'),
        `the node with both URLs is still online: ${nodes.map((n) => n.advertisement.hostname).join(', ')}`,
      );
    });
  },
);
