/**
 * The whole network in separate processes: one coordinator and three node agents (the real CLI), 30 jobs.
 * One agent is killed mid-job (its job completes elsewhere); the coordinator is SIGKILLed and restarted
 * mid-run (no acknowledged job is lost). The jobs are paid: the buyer's funds are held in escrow, the
 * nodes are staked by their provider, running attempts settle in chunks, and at the end every job's bill
 * adds up and the ledger balances, crashes and all. Runs on SQLite over HTTPS (the coordinator serves TLS with a
 * certificate of a throwaway CA that the agents and the SDK are given with GPUX_CA_FILE / caFile) and on PostgreSQL
 * over plain HTTP on loopback.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mkdirSync, readFileSync } from 'node:fs';
import { copyFile, readFile } from 'node:fs/promises';
import { connect } from 'node:tls';
import { join } from 'node:path';
import { issueToken, openStore } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { nodeIdFromPublicKey } from '@gpux/protocol';
import { GpuxClient } from '@gpux/sdk';
import { tlsFetch } from '@gpux/protocol/tls-fetch';
import { certFingerprint, makeTestCa, OPENSSL_WHY, opensslAvailable } from '../src/certs.js';
import { requireComponent } from '../src/components.js';
import { requirePostgres, startPostgres, type PostgresServer } from '../src/postgres.js';
import { FAST_TIMING_ENV, freePort, spawnGpux, waitFor, type GpuxProcess, testRandom } from '../src/processes.js';
import { tempDir } from '../src/temp-dir.js';

const JOBS = 30;
const random = testRandom;
const fastTiming = {
  ...FAST_TIMING_ENV,
  GPUX_LOG_LEVEL: 'warn',
  // The market runs fast too: the index moves every 2 s and running attempts settle every second.
  GPUX_MARKET_EPOCH_MS: '2000',
  GPUX_SETTLE_CHUNK_MS: '1000',
  // One provider: no independent operator could audit it, so pay is not held for verification here (the
  // verification tests run several providers).
  GPUX_VERIFY: 'off',
};
const USDC = 1_000_000;
const BUYER_FUNDS = 100 * USDC;
const STAKE = 50 * USDC;

function jobSpec(i: number) {
  const seconds = (2 + (i % 3) * 0.5).toFixed(1);
  return {
    name: `e2e-${i}`,
    image: 'busybox',
    command: ['sh', '-c', `echo start ${i}; sleep ${seconds}; echo "${i}" > "$GPUX_OUTPUTS/result.txt"; echo end ${i}`],
    resources: { gpu: { count: 0 }, cpuCores: 1 },
    timeoutSeconds: 60,
    maxRetries: 5,
  };
}

/** The fingerprint of the certificate a fresh TLS connection to the coordinator is served. */
function servedFingerprint(port: number, caFile: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, ca: readFileSync(caFile), servername: 'localhost' }, () => {
      resolve(socket.getPeerCertificate().fingerprint256);
      socket.end();
    });
    socket.on('error', reject);
  });
}

async function runNetwork(dbUrl: string, opts: { tls?: boolean } = {}) {
  const dir = tempDir('gpux-e2e');
  const store = await openStore(dbUrl);
  const { token } = await issueToken(store, { role: 'operator', name: 'e2e' }, systemClock, random);
  const provider = await issueToken(store, { role: 'buyer', name: 'e2e-provider' }, systemClock, random);
  await store.close();

  const port = await freePort();
  const certDir = join(dir.path, 'certs');
  if (opts.tls) mkdirSync(certDir);
  const ca = opts.tls ? makeTestCa(certDir, { servers: ['server', 'renewed'] }) : undefined;
  const server = ca?.servers.server;
  const url = `${ca ? 'https' : 'http'}://127.0.0.1:${port}`;
  // Over TLS every process trusts only the test CA: the coordinator serves its certificate, agents and the SDK get the CA.
  const tlsEnv = ca && server ? { GPUX_TLS_CERT_FILE: server.cert, GPUX_TLS_KEY_FILE: server.key, GPUX_CA_FILE: ca.ca } : {};
  const env = { ...fastTiming, ...tlsEnv, GPUX_HOME: join(dir.path, 'home') };
  const startCoordinator = () => spawnGpux(['coordinator', 'start', '--db', dbUrl, '--port', String(port), '--data-dir', join(dir.path, 'coord')], env);
  const caOpt = ca ? { caFile: ca.ca } : {};
  const client = new GpuxClient({ url, token, ...caOpt });
  const probe = ca ? tlsFetch({ ca: await readFile(ca.ca) }) : fetch;
  const ready = () => waitFor('coordinator ready', async () => ((await probe(`${url}/readyz`)).ok ? true : undefined), 60_000);

  let coordinator: GpuxProcess = startCoordinator();
  const agents: GpuxProcess[] = [];
  try {
    await ready();
    // The nodes register with an enrollment token of the provider (its bearer token stays with the provider),
    // made through the API so it carries the fingerprint of the coordinator's key: the agents pin it (issue 19).
    const enrollment = await new GpuxClient({ url, token: provider.token, ...caOpt }).createEnrollment({ name: 'e2e-nodes' });
    assert.match(enrollment.token, /\.[0-9a-f]{64}$/, 'the enrollment token names the coordinator key');
    for (let i = 0; i < 3; i++) {
      agents.push(
        spawnGpux(
          ['node', 'start', '--coordinator', url, '--enrollment-token', enrollment.token, '--executor', 'process', '--allow-unsafe-process', '--data-dir', join(dir.path, `node-${i}`)],
          env,
        ),
      );
    }
    const nodes = await waitFor('3 nodes online', async () => {
      const { nodes } = await client.listNodes({ status: 'online' });
      return nodes.length === 3 ? nodes : undefined;
    });

    // Money in: the operator records deposits (with their external references) for itself, the buyer here,
    // and for the provider, who stakes each of its nodes.
    await client.deposit({ asset: 'usdc', amount: BUYER_FUNDS, reference: 'e2e-buyer-funding' });
    await client.deposit({ asset: 'usdc', amount: 3 * STAKE, reference: 'e2e-provider-funding', accountId: provider.accountId });
    const providerClient = new GpuxClient({ url, token: provider.token, ...caOpt });
    for (const n of nodes) await providerClient.addStake(n.id, STAKE);

    const ids: string[] = [];
    for (let i = 0; i < JOBS; i++) ids.push((await client.submitJob(jobSpec(i))).job.id);

    // A certificate renewal mid-run (issue 19): the renewed pair is copied over the served files; the coordinator
    // picks it up for new connections without a restart, and the agents carry on (every job must still succeed).
    if (ca && server) {
      const renewed = ca.servers.renewed!;
      await copyFile(renewed.key, server.key);
      await copyFile(renewed.cert, server.cert);
      const want = certFingerprint(renewed.cert);
      await waitFor('the renewed certificate served', async () => ((await servedFingerprint(port, ca.ca)) === want ? true : undefined), 30_000);
    }

    // Kill the first agent while it runs a job (the job that started last, so it is far from done).
    const byNode = new Map<string, GpuxProcess>();
    for (const [i, agent] of agents.entries()) {
      const key = JSON.parse(await readFile(join(dir.path, `node-${i}`, 'node-key.json'), 'utf8'));
      byNode.set(nodeIdFromPublicKey(key.publicKey), agent);
    }
    const victimNode = nodes[0]!.id;
    const victimJob = await waitFor('a job running on the first node', async () => {
      const running = await client.listJobs({ state: 'running', limit: 500 });
      let best: { id: string; startedAt: number } | undefined;
      for (const job of running.jobs) {
        const a = (await client.getJob(job.id)).attempts.at(-1);
        if (a?.nodeId === victimNode && a.state === 'running' && a.startedAt !== null && (!best || a.startedAt > best.startedAt)) best = { id: job.id, startedAt: a.startedAt };
      }
      return best?.id;
    });
    await byNode.get(victimNode)!.stop('SIGKILL');
    const atKill = await client.getJob(victimJob);
    assert.equal(atKill.attempts[0]!.state, 'running', 'the victim job was still running when its node was killed');

    // Mid-run, SIGKILL the coordinator and start it again on the same database and port.
    await waitFor('a third of the jobs done', async () => {
      const counts = await Promise.all(ids.map(async (id) => (await client.getJob(id)).job.state));
      return counts.filter((s) => s === 'succeeded').length >= JOBS / 3 ? true : undefined;
    });
    await coordinator.stop('SIGKILL');
    coordinator = startCoordinator();
    await ready();

    let unfinished = '';
    const finals = await waitFor(
      'every job finished',
      async () => {
        const jobs = await Promise.all(ids.map(async (id) => (await client.getJob(id)).job));
        unfinished = jobs
          .filter((j) => !['succeeded', 'failed', 'cancelled'].includes(j.state))
          .map((j) => `${j.id} ${j.state} attempts=${j.attemptCount} runAfter=${j.runAfter} error=${j.error}`)
          .join('; ');
        return unfinished === '' ? jobs : undefined;
      },
      180_000,
      500,
    ).catch(async (err) => {
      const nodes = await client.listNodes({ limit: 10 }).catch(() => ({ nodes: [] }));
      const nodeInfo = nodes.nodes.map((n) => `${n.id} ${n.status}/${n.adminState} busy=${n.activeAttempts}`).join('; ');
      throw new Error(`${(err as Error).message}\nunfinished: ${unfinished}\nnodes: ${nodeInfo}\ncoordinator output:\n${coordinator.output().slice(-3000)}`);
    });

    assert.deepEqual(
      finals.filter((j) => j.state !== 'succeeded').map((j) => `${j.id} ${j.state} ${j.error}`),
      [],
      'every job succeeded',
    );
    const listed = await client.listJobs({ limit: 500 });
    assert.equal(listed.jobs.length, JOBS, 'no job lost and none duplicated');
    for (const [i, id] of ids.entries()) {
      const result = await client.jobResult(id);
      const file = result.outputs.find((o) => o.path === 'result.txt');
      assert.ok(file?.content, `job ${i} returned result.txt`);
      assert.equal(Buffer.from(file.content, 'base64').toString().trim(), String(i));
    }
    const victim = await client.getJob(victimJob);
    assert.equal(victim.job.state, 'succeeded');
    assert.ok(victim.attempts.length >= 2, 'the killed node’s job was attempted again');
    assert.equal(victim.attempts[0]!.nodeId, victimNode);
    assert.equal(victim.attempts[0]!.state, 'lost');
    assert.notEqual(victim.attempts.at(-1)!.nodeId, victimNode, 'it completed on another node');
    assert.ok(
      victim.events.some((e) => e.type === 'attempt.lost'),
      'the loss is in the job history',
    );

    // Money: each bill adds up, nothing is left in escrow, providers and the treasury got what buyers paid,
    // and the ledger balances — across an agent SIGKILL and a coordinator SIGKILL.
    let charged = 0;
    let fees = 0;
    for (const id of ids) {
      const bill = await client.jobBill(id);
      assert.equal(bill.inEscrow, 0, `job ${id} left nothing in escrow`);
      assert.equal(bill.held - bill.charged - bill.refunded, 0, `job ${id}: held = charged + refunded`);
      assert.ok(bill.charged > 0, `job ${id} was paid for`);
      assert.ok(bill.charged <= bill.held, `job ${id} paid at most its hold`);
      charged += bill.charged;
      fees += bill.fee;
    }
    // Abandoned leases past the first in 7 days cost the provider a fee, paid to the buyer (TRUST.md).
    const leaseFees = (await client.walletHistory({ limit: 500 })).entries.filter((e) => e.kind === 'penalty.fee').reduce((n, e) => n + e.amount, 0);
    const buyerWallet = (await client.wallet()).balances.find((b) => b.asset === 'usdc');
    assert.deepEqual([buyerWallet?.available, buyerWallet?.inEscrow], [BUYER_FUNDS - charged + leaseFees, 0]);
    const providerWallet = (await providerClient.wallet()).balances.find((b) => b.asset === 'usdc');
    assert.equal(providerWallet?.available, charged - fees - leaseFees, 'the provider earned every charge but the fee and its lease fees (its stake stays bonded)');
    const totals = (await client.treasury()).assets.find((a) => a.asset === 'usdc');
    assert.deepEqual([totals?.treasury, totals?.minted, totals?.balanced], [fees, BUYER_FUNDS + 3 * STAKE, true]);
  } finally {
    await Promise.all(agents.map((a) => a.stop('SIGTERM', 5_000)));
    await coordinator.stop('SIGTERM', 5_000);
    await dir.cleanup();
  }
}

describe('end to end: coordinator + 3 agents as processes', () => {
  test('SQLite over HTTPS: 30 jobs, an agent killed mid-job, the coordinator SIGKILLed and restarted', { timeout: 300_000, ...requireComponent('openssl', opensslAvailable(), OPENSSL_WHY) }, async () => {
    const dir = tempDir('gpux-e2e-db');
    try {
      await runNetwork(`sqlite:${join(dir.path, 'coordinator.db')}`, { tls: true });
    } finally {
      await dir.cleanup();
    }
  });

  describe('PostgreSQL', requirePostgres(), () => {
    let pg: PostgresServer;
    before(async () => {
      pg = await startPostgres();
    });
    after(async () => {
      await pg?.stop();
    });
    test('PostgreSQL: 30 jobs, an agent killed mid-job, the coordinator SIGKILLed and restarted', { timeout: 300_000 }, async () => {
      await runNetwork(pg.url);
    });
  });
});
