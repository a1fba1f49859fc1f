/**
 * Forwarding and clearing (issue 15) between two real coordinators (SQLite, market on) on loopback, peered both ways
 * through the API. The only GPU node is at the peer (a signed fake agent): a buyer at home submits a job naming the
 * peer's region; it runs at the peer as the home's job, and the buyer reads its logs, its result and its bill at
 * home. Its outputs come home too: an inline one as it is, a blob one fetched from the peer into the home's blob store
 * (the buyer's), checked against the peer's signed listing. Clearing: home clearing:<peer> = +bill, peer
 * clearing:<home> = −bill; the buyer paid the bill once. A cancel
 * at home cancels it at the peer. The peer stopped mid-job: the home lease runs out, the job is queued again at
 * home, and the bill that arrives when the peer is back is the home's writeoff, never the buyer's.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { stakeToLock } from '@gpux/core';
import { type JobSpecInput, OUTPUT_UPLOAD_TOKEN_HEADER, type OutputFile, outputRootDigest, type ResultReport, WorkResponse } from '@gpux/protocol';
import { verifyJobResult } from '@gpux/sdk';
import { seededBytes, sha256Of } from '@gpux/testing';
import { type CoordinatorConfig, loadCoordinatorConfig } from '../src/config.js';
import { startCoordinator } from '../src/start.js';
import { placeholderCommitment, UNSIGNED } from './commitment-helpers.js';
import { call, type Harness, report, spec, startHarness, TestAgent, waitFor } from './helpers.js';

const USDC = 1_000_000;
const START = 10 * USDC;

const common: Partial<CoordinatorConfig> = {
  market: true,
  devMint: true,
  treasuryFeeBps: 500,
  marketEpochMs: 100,
  settleChunkMs: 2000,
  peerSummaryMs: 150,
  forwardPollMs: 100,
  forwardLeaseMs: 1500,
  expiryPassIntervalMs: 100,
  retryBaseBackoffMs: 50,
};

describe('federation: a job forwarded to a peer region, its money cleared', () => {
  let home: Harness;
  let peer: Harness;
  let agent: TestAgent;
  let buyer: string;
  /** The peer's id at home, and the home's id at the peer. */
  let peerId: string;
  let homeId: string;
  let peerPort: number;
  /** Bills the peer charged for the home's jobs so far, and what of them the buyer paid. */
  let billed = 0;
  let buyerPaid = 0;

  const job = (over: Partial<JobSpecInput> = {}) => spec({ resources: { gpu: { count: 1 } }, timeoutSeconds: 600, maxPricePerGpuHour: 3 * USDC, constraints: { region: 'eu-east' }, ...over });
  const homeJob = async (id: string) => (await call(home.url, 'GET', `/v1/jobs/${id}`, { token: buyer })).body;
  const clearing = async (h: Harness, id: string) => (await h.coord.store.clearingBalances()).find((c) => c.peerId === id && c.asset === 'usdc')?.balance ?? 0;
  const wallet = async () => (await call(home.url, 'GET', '/v1/wallet', { token: buyer })).body.balances.find((b: { asset: string }) => b.asset === 'usdc');

  /** The peer's next assignment, and its job there. */
  const assignment = async () => {
    const a = await waitFor(async () => WorkResponse.parse((await agent.work(200)).body).assignments[0], 'an assignment at the peer');
    return a;
  };
  /** The peer's job for a home job: the one its buyer region:<home> holds with this home job's attempt as key. */
  const remoteOf = async (homeJobId: string) => {
    const forwards = await home.coord.store.listJobForwards(homeJobId);
    const f = forwards.at(-1);
    assert.ok(f?.remoteJobId, `job ${homeJobId} has a forward with the peer's id: ${JSON.stringify(forwards)}`);
    return f.remoteJobId;
  };
  /** The peer (stopped) started again on its data and address, with `over` in its config. */
  const startPeer = async (over: Partial<CoordinatorConfig> = {}) => {
    const harness = { logLevel: 'silent', verify: false, canaryRate: 0, registerRatePerMin: 1_000_000, authFailuresPerMinute: 1_000_000, challenge: 'off' } as const;
    peer.coord = await startCoordinator(loadCoordinatorConfig({}, { dataDir: peer.dir, host: '127.0.0.1', port: peerPort, ...harness, ...common, region: 'eu-east', ...over }));
  };
  const peerBill = async (remoteJobId: string) => (await call(peer.url, 'GET', `/v1/jobs/${remoteJobId}/bill`, { token: peer.operator })).body;

  before(async () => {
    [home, peer] = await Promise.all([startHarness({ ...common, region: 'us-west' }), startHarness({ ...common, region: 'eu-east' })]);
    peerPort = peer.coord.port;
    const selfOf = async (h: Harness) => (await call(h.url, 'GET', '/v1/federation/peers', { token: h.operator })).body.self;
    const [homeSelf, peerSelf] = await Promise.all([selfOf(home), selfOf(peer)]);
    const atHome = await call(home.url, 'POST', '/v1/federation/peers', { token: home.operator, body: { url: peer.url, key: peerSelf.keyFingerprint, name: 'east' } });
    assert.equal(atHome.status, 201, JSON.stringify(atHome.body));
    peerId = atHome.body.peer.id;
    const atPeer = await call(peer.url, 'POST', '/v1/federation/peers', { token: peer.operator, body: { url: home.url, key: homeSelf.keyFingerprint, name: 'west' } });
    assert.equal(atPeer.status, 201, JSON.stringify(atPeer.body));
    homeId = atPeer.body.peer.id;

    // The peer's one node: its provider's funds, ask and stake, so its market places paid work on it.
    agent = new TestAgent(peer.url);
    assert.equal((await agent.register()).status, 200);
    const provider = (path: string, body: unknown) => call(peer.url, 'POST', path, { token: peer.provider, body });
    assert.equal((await provider('/v1/wallet/deposits', { amount: 100 * USDC })).status, 201);
    assert.equal((await provider('/v1/market/asks', { class: 'nvidia-h100-80gb', pricePerGpuHour: 1 * USDC })).status, 200);
    assert.equal((await provider(`/v1/nodes/${agent.nodeId}/stake`, { amount: stakeToLock(3 * USDC, 1, 600) })).status, 200);

    buyer = await home.buyer();
    assert.equal((await call(home.url, 'POST', '/v1/wallet/deposits', { token: buyer, body: { amount: START } })).status, 201);
    await waitFor(async () => {
      const p = await home.coord.store.getPeer(peerId);
      return p?.status === 'ok' && p.summary?.region === 'eu-east' && p.summary.classes.some((c) => c.freeGpus === 1);
    }, 'home to see the peer with its free GPU');
  });
  after(async () => {
    agent?.heartbeat().catch(() => undefined);
    await Promise.all([home?.close(), peer?.close()]);
  });

  test('a job naming the peer region runs there; logs, result and bill at home; the clearing accounts net to zero', async () => {
    const sub = await call(home.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: job() } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const jobId: string = sub.body.job.id;
    const held: number = sub.body.job.payment.held;

    const a = await assignment();
    const remoteJobId = await remoteOf(jobId);
    const remote = (await call(peer.url, 'GET', `/v1/jobs/${remoteJobId}`, { token: peer.operator })).body;
    assert.equal(remote.job.buyerId, `region:${homeId}`, "the peer runs it as the home region's job");
    assert.equal(remote.job.spec.constraints.region, undefined, "the peer's own region name is no node label there");
    assert.equal(remote.job.payment.held, held, 'the peer holds what the home holds (same spec, same cap)');
    assert.equal(a.jobId, remoteJobId);

    const forwarded = await homeJob(jobId);
    assert.equal(forwarded.attempts[0].nodeId, `peer:${peerId}`);
    assert.ok(
      forwarded.events.some((e: { type: string; data: { peerId?: string; reason?: string } }) => e.type === 'job.forwarded' && e.data.peerId === peerId && /constraints\.region names region eu-east/.test(e.data.reason ?? '')),
      JSON.stringify(forwarded.events),
    );

    assert.equal((await agent.start(a.attemptId)).status, 200);
    await waitFor(async () => (await homeJob(jobId)).job.state === 'running', 'the home job running');
    assert.equal((await agent.logs(a.attemptId, [{ seq: 0, stream: 'stdout', data: 'hello from eu-east\n', at: Date.now() }])).status, 200);
    const logs = await waitFor(async () => {
      const r = await call(home.url, 'GET', `/v1/jobs/${jobId}/logs`, { token: buyer });
      return r.body.entries?.length > 0 ? r.body.entries : undefined;
    }, 'the peer log line at home');
    assert.equal(logs[0].data, 'hello from eu-east\n');
    // Some runtime, so the peer's bill is not 0.
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await agent.result(a.attemptId, report('succeeded'))).status, 200);

    const done = await waitFor(async () => {
      const j = await homeJob(jobId);
      return j.job.state === 'succeeded' ? j : undefined;
    }, 'the home job succeeded');
    assert.equal(done.job.exitCode, 0);
    assert.equal(done.attempts[0].state, 'succeeded');

    const bill = (await peerBill(remoteJobId)).charged as number;
    assert.ok(bill > 0 && bill <= held, `the peer's bill ${bill}`);
    billed += bill;
    buyerPaid += bill;
    const homeBill = (await call(home.url, 'GET', `/v1/jobs/${jobId}/bill`, { token: buyer })).body;
    assert.equal(homeBill.held - homeBill.refunded, bill, 'the buyer paid the peer bill, and got the rest of the hold back');
    assert.equal(homeBill.charged, bill);
    assert.ok(homeBill.lines.some((l: { kind: string; amount: number }) => l.kind === 'clearing.charge' && l.amount === -bill), JSON.stringify(homeBill.lines));
    assert.equal(homeBill.inEscrow, 0);
    assert.equal(await clearing(home, peerId), billed, 'home owes the peer its bill');
    await waitFor(async () => (await clearing(peer, homeId)) === -billed, "the peer's clearing account for the home at −bill (its unspent credit returned)");
    assert.deepEqual([(await wallet()).available, (await wallet()).inEscrow], [START - buyerPaid, 0]);
  });

  test("a forwarded job's outputs come home: the inline one as it is, the blob one into the buyer's blob store, checked", async () => {
    const sub = await call(home.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: job({ name: 'with-outputs' }) } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const jobId: string = sub.body.job.id;
    const a = await assignment();
    assert.equal((await agent.start(a.attemptId)).status, 200);

    // The node at the peer uploads one output to the peer's blob store (the fake agent does what the real one does).
    const big = seededBytes(300 * 1024, 15);
    const opened = await agent.request('POST', `/v1/agent/attempts/${a.attemptId}/outputs`, { path: 'out/model.bin', sha256: sha256Of(big), size: big.length });
    assert.equal(opened.status, 200, JSON.stringify(opened.body));
    const put = await call(peer.url, 'PUT', `/v1/agent/uploads/${opened.body.uploadId}`, {
      raw: big,
      headers: { 'content-type': 'application/octet-stream', 'upload-offset': '0', [OUTPUT_UPLOAD_TOKEN_HEADER]: opened.body.uploadToken },
    });
    assert.equal(put.status, 200, JSON.stringify(put.body));
    const small = Buffer.from('loss 0.01\n');
    const outputs: OutputFile[] = [
      { path: 'out/metrics.txt', size: small.length, sha256: sha256Of(small), content: small.toString('base64') },
      { path: 'out/model.bin', size: big.length, sha256: sha256Of(big) },
    ];
    const outputDigest = outputRootDigest(outputs);
    const withOutputs: ResultReport = { outcome: 'succeeded', exitCode: 0, error: null, outputDigest, outputs, metrics: { durationMs: 5 }, commitment: placeholderCommitment(outputDigest, 0), commitmentSignature: UNSIGNED };
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await agent.result(a.attemptId, withOutputs)).status, 200);

    await waitFor(async () => (await homeJob(jobId)).job.state === 'succeeded', 'the home job succeeded');
    const result = await call(home.url, 'GET', `/v1/jobs/${jobId}/result`, { token: buyer });
    assert.equal(result.status, 200, JSON.stringify(result.body));
    assert.equal(result.body.outputDigest, outputDigest, "the peer node's output digest");
    const byPath = new Map<string, OutputFile>(result.body.outputs.map((f: OutputFile) => [f.path, f]));
    assert.equal(byPath.get('out/metrics.txt')?.content, small.toString('base64'), 'the inline output as the node sent it');
    assert.equal(byPath.get('out/model.bin')?.blob, true, 'the blob output is in the home blob store');
    const dl = await fetch(`${home.url}/v1/blobs/${sha256Of(big)}`, { headers: { authorization: `Bearer ${buyer}` } });
    assert.equal(dl.status, 200);
    const got = Buffer.from(await dl.arrayBuffer());
    assert.ok(got.equals(big), 'the buyer reads the bytes the node uploaded at the peer');

    // The node's signed commitment is for the peer's job and attempt and stays at the peer: the home result has none.
    assert.equal(verifyJobResult(result.body).verified, false);
    assert.match(verifyJobResult(result.body).summary, /no signed result commitment/);
    // Checked against that commitment (read at the peer), the bytes the buyer got at home verify.
    const remoteJobId = await remoteOf(jobId);
    const atPeer = await call(peer.url, 'GET', `/v1/jobs/${remoteJobId}/result`, { token: peer.operator });
    const verdict = verifyJobResult(atPeer.body, new Map([['out/model.bin', got]]));
    assert.ok(verdict.verified, verdict.summary);
    assert.deepEqual(verdict.unchecked, []);

    const bill = (await peerBill(remoteJobId)).charged as number;
    billed += bill;
    buyerPaid += bill;
    assert.equal(await clearing(home, peerId), billed);
    await waitFor(async () => (await clearing(peer, homeId)) === -billed, 'the pair nets to zero');
  });

  test('a cancel at home cancels the job at the peer', async () => {
    const sub = await call(home.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: job({ name: 'to-cancel' }) } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const jobId: string = sub.body.job.id;
    const a = await assignment();
    assert.equal((await agent.start(a.attemptId)).status, 200);
    await waitFor(async () => (await homeJob(jobId)).job.state === 'running', 'the home job running');
    await new Promise((r) => setTimeout(r, 100));

    assert.equal((await call(home.url, 'POST', `/v1/jobs/${jobId}/cancel`, { token: buyer })).status, 200);
    await waitFor(async () => {
      const w = WorkResponse.parse((await agent.work(200)).body);
      return w.cancel?.some((c) => c.attemptId === a.attemptId);
    }, 'the cancel reaching the node at the peer');
    assert.equal((await agent.result(a.attemptId, report('cancelled', {}, null))).status, 200);
    const done = await waitFor(async () => {
      const j = await homeJob(jobId);
      return j.job.state === 'cancelled' ? j : undefined;
    }, 'the home job cancelled');
    assert.equal(done.attempts[0].state, 'cancelled');
    const remoteJobId = await remoteOf(jobId);
    assert.equal((await call(peer.url, 'GET', `/v1/jobs/${remoteJobId}`, { token: peer.operator })).body.job.state, 'cancelled');

    const bill = (await peerBill(remoteJobId)).charged as number;
    billed += bill;
    buyerPaid += bill;
    assert.equal(await clearing(home, peerId), billed);
    await waitFor(async () => (await clearing(peer, homeId)) === -billed, 'the peer clearing at −bills');
    assert.equal((await wallet()).available, START - buyerPaid);
  });

  test('the peer stopped mid-job: the job comes home after the lease; the late bill is the home writeoff', async () => {
    const sub = await call(home.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: job({ name: 'partitioned' }) } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const jobId: string = sub.body.job.id;
    const a = await assignment();
    assert.equal((await agent.start(a.attemptId)).status, 200);
    await waitFor(async () => (await homeJob(jobId)).job.state === 'running', 'the home job running');
    const remoteJobId = await remoteOf(jobId);

    await peer.coord.close();
    const back = await waitFor(async () => {
      const j = await homeJob(jobId);
      return j.job.state === 'queued' ? j : undefined;
    }, 'the home lease run out and the job queued again');
    assert.equal(back.attempts[0].state, 'lost');
    // The next contact (it fails) finds the attempt over: the forward is fenced, its bill still to book.
    await waitFor(async () => (await home.coord.store.getForward(back.attempts[0].id))?.state === 'fenced', 'the forward fenced');

    // The peer comes back on the same address and the node reports: its bill is owed, but the buyer paid nothing for this run.
    await startPeer();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal((await agent.result(a.attemptId, report('succeeded'))).status, 200);
    const forward = await waitFor(async () => {
      const f = await home.coord.store.getForward(back.attempts[0].id);
      return f?.state === 'ended' ? f : undefined;
    }, 'the fenced forward booked');
    const bill = (await peerBill(remoteJobId)).charged as number;
    assert.ok(bill > 0);
    assert.equal(forward.charged, bill);
    billed += bill;
    assert.equal(await clearing(home, peerId), billed, 'home owes the peer every bill');
    await waitFor(async () => (await clearing(peer, homeId)) === -billed, 'the pair nets to zero');
    const writeoffs = (await call(home.url, 'GET', '/v1/ledger?limit=100', { token: home.operator })).body.transfers.filter((t: { kind: string }) => t.kind === 'clearing.writeoff');
    assert.equal(writeoffs.length, 1);

    // The job is still the buyer's, at home; cancelled, the whole hold comes back. On a loaded machine home may have
    // forwarded it again to the restarted peer meanwhile: that attempt then ends by the cancel first.
    assert.equal((await call(home.url, 'POST', `/v1/jobs/${jobId}/cancel`, { token: buyer })).status, 200);
    const after = await waitFor(async () => {
      const w = await wallet();
      return w.inEscrow === 0 ? w : undefined;
    }, 'the hold back after the cancel');
    assert.equal(after.available, START - buyerPaid);
  });
  test('a peer that refuses the job (its credit line for this region is spent): the attempt ends at no cost, the job stays home', async () => {
    await peer.coord.close();
    await startPeer({ peerCredit: 0 });
    const restarted = Date.now();
    // Its node live again (a slow run may have let it go offline), and home hearing so: the named region takes 1 GPU.
    await waitFor(async () => (await agent.heartbeat().catch(() => undefined))?.status === 200, 'the node heard at the peer');
    await waitFor(async () => {
      const p = await home.coord.store.getPeer(peerId);
      return p?.status === 'ok' && (p.summaryAt ?? 0) > restarted && p.summary?.classes.some((c) => c.totalGpus >= 1);
    }, 'home to hear from the peer again, with its node');
    const available = (await wallet()).available;
    const sub = await call(home.url, 'POST', '/v1/jobs', { token: buyer, body: { spec: job({ name: 'refused' }) } });
    assert.equal(sub.status, 201, JSON.stringify(sub.body));
    const jobId: string = sub.body.job.id;
    const back = await waitFor(async () => {
      const j = await homeJob(jobId);
      return j.attempts[0]?.state === 'failed' ? j : undefined;
    }, 'the refused forward ended');
    assert.match(back.attempts[0].error, /^region eu-east refused it: INSUFFICIENT_FUNDS: .*credit line/);
    // That peer is avoided from now on: tried again only as a fallback, when no other region takes the job (here
    // none does, so the job may be sent there again, and refused again, until it is cancelled).
    assert.deepEqual((await home.coord.store.getJob(jobId))?.avoidNodeIds, [`peer:${peerId}`]);
    assert.equal((await call(home.url, 'POST', `/v1/jobs/${jobId}/cancel`, { token: buyer })).status, 200);
    await waitFor(async () => (await homeJob(jobId)).job.state === 'cancelled', 'the job cancelled');
    for (const f of await home.coord.store.listJobForwards(jobId)) assert.deepEqual([f.state, f.charged], ['ended', 0], 'each refused send ended at no cost');
    assert.equal(await clearing(home, peerId), billed, 'nothing owed for it');
    assert.equal((await wallet()).available, available, 'the whole hold back');
  });
});
