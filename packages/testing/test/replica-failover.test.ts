/**
 * Replica failover (issue 14): three coordinator replicas on one PostgreSQL (the second and third reach it through
 * TCP proxies the test can cut). Four node agents and three paying buyers are spread over the replicas (each given
 * all three URLs, a different one first). A stream of paid jobs runs; mid run the leader is SIGKILLed, and once a
 * survivor leads, that new leader is cut off from PostgreSQL, so leadership must move twice. Every job must end
 * succeeded, run to success once and never twice at the same time, with its own output; and no money is lost:
 * every escrow is released, buyers' spend is the provider's earnings plus the treasury's fees, the ledger balances.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { issueToken, openStore } from '@gpux/coordinator';
import { systemClock } from '@gpux/core';
import { GpuxClient } from '@gpux/sdk';
import { requirePostgres, startPostgres, type PostgresServer } from '../src/postgres.js';
import { FAST_TIMING_ENV, type GpuxProcess, spawnGpux, waitFor, testRandom } from '../src/processes.js';
import { type Replicas, replicaStatus, startReplicas } from '../src/replicas.js';
import { startTcpProxy, type TcpProxy } from '../src/tcp-proxy.js';
import { type TempDir, tempDir } from '../src/temp-dir.js';

const random = testRandom;
const env = {
  ...FAST_TIMING_ENV,
  GPUX_LOG_LEVEL: 'warn',
  // A short leader lease: a survivor takes over within about 2.7 s of the leader's death.
  GPUX_LEADER_LEASE_MS: '2000',
  // The market on and fast: prices move every 2 s, running attempts settle every second.
  GPUX_MARKET: 'on',
  GPUX_MARKET_EPOCH_MS: '2000',
  GPUX_SETTLE_CHUNK_MS: '1000',
  // One provider: pay is not held for verification, and no canary is paid from the treasury, so the money adds up
  // between buyers, the provider and the fees alone.
  GPUX_VERIFY: 'off',
  GPUX_CANARY_RATE: '0',
};
const USDC = 1_000_000;
const BUYER_FUNDS = 20 * USDC;
const STAKE = 20 * USDC;
const AGENTS = 4;
const BUYERS = 3;
/** Jobs per phase: before the kill, between the kill and the cut, after the cut. */
const PER_PHASE = 12;
const TERMINAL = ['succeeded', 'failed', 'cancelled'];

/** Each run appends `start|end <job> <attempt> <ns>` to the runs log: what really ran, whatever the coordinator recorded. */
const jobSpec = (name: string, runsLog: string) => ({
  name,
  image: 'busybox',
  command: [
    'sh',
    '-c',
    `echo "start $GPUX_JOB_ID $GPUX_ATTEMPT_ID $(date +%s%N)" >> "${runsLog}"; sleep 0.8; echo "${name}" > "$GPUX_OUTPUTS/name.txt"; echo "end $GPUX_JOB_ID $GPUX_ATTEMPT_ID $(date +%s%N)" >> "${runsLog}"`,
  ],
  resources: { gpu: { count: 0 }, cpuCores: 1 },
  timeoutSeconds: 60,
  maxRetries: 5,
});

/** `list` rotated so it starts at index `first`. */
const rotated = <T,>(list: readonly T[], first: number): T[] => list.map((_, i) => list[(first + i) % list.length] as T);

describe('replica failover: three replicas, the leader SIGKILLed, one cut off from PostgreSQL', requirePostgres(), () => {
  let pg: PostgresServer;
  let dir: TempDir;
  const proxies: TcpProxy[] = [];
  let replicas: Replicas | undefined;
  const agents: GpuxProcess[] = [];

  before(async () => {
    pg = await startPostgres();
    dir = tempDir('gpux-failover');
  });
  after(async () => {
    await Promise.all(agents.map((a) => a.stop('SIGTERM', 5_000)));
    await replicas?.stopAll();
    await Promise.all(proxies.map((p) => p.close()));
    await pg?.stop();
    await dir?.cleanup();
  });

  test('no job lost or run twice, no money lost, leadership moves', { timeout: 150_000 }, async (t) => {
    const t0 = Date.now();
    const phase = (what: string) => t.diagnostic(`${what} at ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const store = await openStore(pg.url); // migrates, so the replicas start on a ready schema
    const operator = await issueToken(store, { role: 'operator', name: 'failover-operator' }, systemClock, random);
    const provider = await issueToken(store, { role: 'buyer', name: 'failover-provider' }, systemClock, random);
    const buyerTokens = [];
    for (let b = 0; b < BUYERS; b++) buyerTokens.push(await issueToken(store, { role: 'buyer', name: `failover-buyer-${b}` }, systemClock, random));
    await store.close();

    // Replica 0 (started first: the leader, to be killed) reaches PostgreSQL directly; replicas 1 and 2 each
    // through a proxy of its own, so that whichever of them leads after the kill can be cut off.
    const pgUrl = new URL(pg.url);
    const dbUrls = [pg.url];
    for (let i = 1; i < 3; i++) {
      const proxy = await startTcpProxy({ host: pgUrl.hostname, port: Number(pgUrl.port) });
      proxies[i] = proxy;
      const u = new URL(pg.url);
      u.hostname = '127.0.0.1';
      u.port = String(proxy.port);
      dbUrls.push(u.href);
    }
    replicas = await startReplicas({ count: 3, dbUrl: (i) => dbUrls[i] as string, dir: dir.path, env });
    const { urls, procs } = replicas;
    assert.ok(proxies.every((p) => p.accepted() > 0), 'replicas 1 and 2 reach PostgreSQL through their proxies');
    phase('3 replicas ready');

    // Clients: each buyer and each agent is given all three URLs, a different one first.
    const operatorClient = new GpuxClient({ url: urls, token: operator.token });
    const providerClient = new GpuxClient({ url: rotated(urls, 1), token: provider.token });
    const buyers = buyerTokens.map((b, i) => new GpuxClient({ url: rotated(urls, i), token: b.token }));
    const enrollment = (await providerClient.createEnrollment({ name: 'failover-nodes' })).token;
    for (let i = 0; i < AGENTS; i++) {
      const name = `node-${i}`;
      agents.push(
        spawnGpux(
          [
            'node',
            'start',
            '--coordinator',
            rotated(urls, i).join(','),
            '--enrollment-token',
            enrollment,
            '--executor',
            'process',
            '--allow-unsafe-process',
            '--data-dir',
            join(dir.path, name),
            '--name',
            name,
          ],
          { ...env, GPUX_HOME: join(dir.path, `home-${name}`) },
        ),
      );
    }
    const nodes = await waitFor(`${AGENTS} nodes online`, async () => {
      const { nodes } = await operatorClient.listNodes({ status: 'online' });
      return nodes.length === AGENTS ? nodes : undefined;
    });
    phase(`${AGENTS} nodes online`);

    // Money in: the operator records deposits for the buyers and the provider; the provider stakes every node.
    await Promise.all([
      ...buyerTokens.map((b, i) => operatorClient.deposit({ asset: 'usdc', amount: BUYER_FUNDS, reference: `failover-buyer-${i}`, accountId: b.accountId })),
      operatorClient.deposit({ asset: 'usdc', amount: AGENTS * STAKE, reference: 'failover-provider', accountId: provider.accountId }),
    ]);
    await Promise.all(nodes.map((n) => providerClient.addStake(n.id, STAKE)));
    phase('buyers funded, nodes staked');

    // A stream of jobs, the buyers in turn, each submitting through its own client (which fails over by itself).
    const runsLog = join(dir.path, 'runs.log');
    const submitted: { id: string; name: string; buyer: number }[] = [];
    const submitPhase = async (p: number) => {
      await Promise.all(
        buyers.map(async (client, b) => {
          for (let i = b; i < PER_PHASE; i += BUYERS) {
            const name = `p${p}-j${i}`;
            const { job } = await client.submitJob(jobSpec(name, runsLog));
            submitted.push({ id: job.id, name, buyer: b });
          }
        }),
      );
    };
    const statusOf = async () => Promise.all(urls.map((u) => replicaStatus(u)));

    const leaders0 = await waitFor('one leader', async () => {
      const s = await statusOf();
      return s.filter((r) => r?.leader).length === 1 ? s : undefined;
    });
    const killed = leaders0.findIndex((r) => r?.leader);
    assert.equal(killed, 0, 'the replica started first leads');
    const killedId = leaders0[killed]?.id;

    await submitPhase(0);
    await waitFor('jobs running', async () => ((await operatorClient.listJobs({ state: 'running', limit: 100 })).jobs.length >= 2 ? true : undefined), 30_000, 50);
    phase('phase 0 submitted, jobs running');

    // The leader dies without a word, mid run.
    await procs[killed]?.stop('SIGKILL');
    phase(`leader (replica ${killed}) SIGKILLed`);
    const live = [1, 2];
    await submitPhase(1);
    phase('phase 1 submitted');
    const newLeader = await waitFor(
      'a survivor leads',
      async () => {
        const s = await Promise.all(live.map((i) => replicaStatus(urls[i] as string)));
        const leading = live.filter((_, k) => s[k]?.leader);
        return leading.length === 1 ? leading[0] : undefined;
      },
      15_000,
      50,
    );
    phase(`replica ${newLeader} leads`);

    // A bit later, the new leader loses PostgreSQL: it must step down and the last replica take over.
    const cut = newLeader as number;
    const last = live.find((i) => i !== cut) as number;
    proxies[cut]?.cut();
    phase(`replica ${cut} cut off from PostgreSQL`);
    await submitPhase(2);
    phase('phase 2 submitted');

    // Every job ends, and ends succeeded.
    const ids = submitted.map((s) => s.id);
    let states = '';
    const finals = await waitFor(
      'every job finished',
      async () => {
        const jobs = await Promise.all(ids.map(async (id) => (await operatorClient.getJob(id)).job));
        states = jobs
          .filter((j) => !TERMINAL.includes(j.state))
          .map((j) => `${j.name}:${j.state}`)
          .join(' ');
        return states === '' ? jobs : undefined;
      },
      60_000,
      250,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\nunfinished: ${states}\n${procs.map((p, i) => `replica ${i}:\n${p.output().slice(-2500)}`).join('\n')}`);
    });
    phase('every job finished');
    assert.deepEqual(
      finals.filter((j) => j.state !== 'succeeded').map((j) => `${j.name} ${j.state} ${j.error}`),
      [],
      'every job succeeded',
    );
    const listed = await operatorClient.listJobs({ limit: 500 });
    assert.deepEqual(listed.jobs.map((j) => j.id).sort(), [...ids].sort(), 'no job lost and none duplicated');

    assert.ok(procs[cut]?.child.exitCode === null && procs[cut]?.child.signalCode === null, `the replica cut off from PostgreSQL still runs: ${procs[cut]?.output().slice(-3000)}`);
    // Leadership moved twice: of the live replicas only the one never cut off leads.
    let seen = '';
    const finalLeader = await waitFor(
      'exactly one leader among the live replicas',
      async () => {
        const s = await Promise.all(live.map((i) => replicaStatus(urls[i] as string)));
        seen = live.map((i, k) => `replica ${i}: ${JSON.stringify(s[k])}`).join(', ');
        const leading = s.filter((r) => r?.leader);
        return leading.length === 1 && s.every((r) => r !== null) ? leading[0] : undefined;
      },
      10_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}\n${seen}\n${live.map((i) => `replica ${i}:\n${procs[i]?.output().slice(-3000)}`).join('\n')}`);
    });
    assert.notEqual(finalLeader?.id, killedId, 'a different replica leads');
    assert.equal(finalLeader?.id, (await replicaStatus(urls[last] as string))?.id, `replica ${last}, never cut off, leads`);

    // What really ran (the runs log): every run of a job ended before the next began; a job ran to the end once,
    // unless the coordinator records an attempt that did not succeed (and then at most once per attempt).
    const runs = new Map<string, { attempt: string; start: bigint; end?: bigint }[]>();
    for (const line of readFileSync(runsLog, 'utf8').split('\n').filter(Boolean)) {
      const [what, job, attempt, ns] = line.split(' ') as [string, string, string, string];
      const list = runs.get(job) ?? [];
      runs.set(job, list);
      if (what === 'start') list.push({ attempt, start: BigInt(ns) });
      else {
        const run = list.find((r) => r.attempt === attempt && r.end === undefined);
        assert.ok(run, `the end of a run of ${job} (attempt ${attempt}) has its start`);
        run.end = BigInt(ns);
      }
    }
    const retried: string[] = [];
    for (const s of submitted) {
      const { job, attempts } = await operatorClient.getJob(s.id);
      const mine = runs.get(s.id) ?? [];
      const succeeded = attempts.filter((a) => a.state === 'succeeded');
      assert.equal(succeeded.length, 1, `${s.name}: one succeeded attempt (${attempts.map((a) => `${a.id}:${a.state}`).join(', ')})`);
      const attemptIds = new Set(attempts.map((a) => a.id));
      assert.ok(
        mine.every((r) => attemptIds.has(r.attempt)),
        `${s.name}: every run is one of its attempts`,
      );
      assert.equal(new Set(mine.map((r) => r.attempt)).size, mine.length, `${s.name}: no attempt ran twice (${mine.map((r) => r.attempt).join(', ')})`);
      if (attempts.length === 1) assert.equal(mine.length, 1, `${s.name}: one attempt, one run`);
      else retried.push(`${s.name}: ${attempts.map((a) => `${a.state}${a.error ? `(${a.error})` : ''}`).join(' ')}; ${mine.length} run(s)`);
      const sorted = [...mine].sort((a, b) => (a.start < b.start ? -1 : 1));
      for (let k = 1; k < sorted.length; k++) {
        const prev = sorted[k - 1];
        assert.ok(prev?.end !== undefined && prev.end <= (sorted[k]?.start ?? 0n), `${s.name}: attempt ${sorted[k]?.attempt} started while ${prev?.attempt} still ran`);
      }
      const { outputs } = await operatorClient.jobResult(s.id);
      const file = outputs.find((o) => o.path === 'name.txt');
      assert.equal(Buffer.from(file?.content ?? '', 'base64').toString().trim(), job.name, `${s.name} returned its own output`);
    }
    t.diagnostic(`${retried.length} of ${submitted.length} jobs needed more than one attempt${retried.length ? `: ${retried.join('; ')}` : ''}`);

    // Money: every bill adds up with nothing left in escrow; the buyers' spend is the provider's earnings plus the
    // treasury's fees (lease fees, if any, go from the provider back to the buyers); the ledger balances.
    let charged = 0;
    let fees = 0;
    for (const s of submitted) {
      const bill = await buyers[s.buyer]?.jobBill(s.id);
      assert.ok(bill);
      assert.equal(bill.inEscrow, 0, `${s.name} left nothing in escrow`);
      assert.equal(bill.held - bill.charged - bill.refunded, 0, `${s.name}: held = charged + refunded`);
      assert.ok(bill.charged > 0 && bill.charged <= bill.held, `${s.name} was paid for, at most its hold`);
      charged += bill.charged;
      fees += bill.fee;
    }
    let buyersSpent = 0;
    for (const b of buyers) {
      const usdc = (await b.wallet()).balances.find((x) => x.asset === 'usdc');
      assert.equal(usdc?.inEscrow, 0, 'no buyer has money left in escrow');
      buyersSpent += BUYER_FUNDS - (usdc?.available ?? 0);
    }
    const providerUsdc = (await providerClient.wallet()).balances.find((x) => x.asset === 'usdc');
    let staked = 0;
    for (const n of nodes) staked += (await providerClient.nodeStake(n.id)).stake.staked;
    assert.equal(staked, AGENTS * STAKE, 'no stake was slashed');
    const providerEarned = (providerUsdc?.available ?? 0) + staked - AGENTS * STAKE;
    const totals = (await operatorClient.treasury()).assets.find((a) => a.asset === 'usdc');
    assert.ok(totals);
    assert.equal(totals.balanced, true, `the ledger balances: ${JSON.stringify(totals)}`);
    assert.deepEqual(
      { escrow: totals.escrow, treasury: totals.treasury, minted: totals.minted },
      { escrow: 0, treasury: fees, minted: BUYERS * BUYER_FUNDS + AGENTS * STAKE },
      'nothing left in escrow, the treasury holds the fees, nothing minted on the way',
    );
    assert.equal(buyersSpent, providerEarned + fees, `the buyers' spend (${buyersSpent}) is the provider's earnings (${providerEarned}) plus the fees (${fees})`);
    assert.ok(buyersSpent <= charged, 'the buyers paid at most what their jobs were charged');
    phase('checked');
  });
});

