/**
 * Conformance: the forwards port (issue 15): a job forwarded to a peer region runs at home as an attempt on
 * peer:<id>; its progress, end and bill (clearing.charge), a bill after the home fenced it (clearing.writeoff), and
 * at the peer the forwarded job drawn on the home's credit line (clearing.credit / clearing.return). Every scenario
 * ends with the ledgers balanced; the full cycle on two stores nets the pair's clearing accounts to zero.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ACCOUNTS, type AttemptPriceRecord, holdFor, isPeerNodeId, type JobPaymentRecord, MAX_AMOUNT, move, type NewJob, peerBuyerId, peerNodeId, type Store, stakeToLock, transitionDecider } from '@gpux/core';
import type { JobSpecInput, LogEntry } from '@gpux/protocol';
import { advertisement, assigned, code, eventTypes, type OpenStore, result, spec, T0, withStore } from '../fixtures.js';

const decide = transitionDecider();
const BUYER = 'buyer-1';
const PEER = 'peer-p'; // the peer region, as the home knows it
const HOME = 'home-h'; // the home region, as the peer knows it
const CAP = 3_000_000;
const PRICE = 2_345_679;
const TIMEOUT = 600;
const GPU_SPEC: Partial<JobSpecInput> = { timeoutSeconds: TIMEOUT, resources: { gpu: { count: 2 } } };
const HELD = holdFor(spec(GPU_SPEC), CAP);
const PAYMENT: JobPaymentRecord = { asset: 'usdc', capPerUnitHour: CAP, units: 2, held: HELD };
const LEASE = 60_000;

const mint = (store: Store, account: string, amount: number) =>
  store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account, amount }]), at: T0, memo: `test funds for ${account}` });
const bal = (store: Store, account: string) => store.getBalance(account, 'usdc');
const kinds = async (store: Store, jobId: string) => (await store.jobTransfers(jobId)).map((t) => t.kind);
const log = (seq: number, data: string): LogEntry => ({ seq, stream: 'stdout', data, at: T0 + seq });

async function assertBalanced(store: Store): Promise<void> {
  for (const t of await store.ledgerTotals()) {
    assert.equal(t.inside, t.minted, `${t.asset}: money inside equals money minted`);
    assert.equal(t.negativeAccounts, 0, `${t.asset}: no account below zero but the world and clearing`);
  }
}

/** At home: a paid job of BUYER, queued. */
async function queuedPaid(store: Store, jobId: string, over: Partial<JobSpecInput> = GPU_SPEC): Promise<void> {
  if ((await bal(store, ACCOUNTS.wallet(BUYER))) < HELD) await mint(store, ACCOUNTS.wallet(BUYER), 10_000_000);
  await store.submitJob({ id: jobId, buyerId: BUYER, spec: spec(over), idempotencyKey: null, now: T0, payment: PAYMENT });
}

const forward = (store: Store, jobId: string, attemptId: string, now = T0 + 10) =>
  store.forwardJob({ jobId, attemptId, peerId: PEER, reason: 'no local node within 60 s', now, leaseExpiresAt: now + LEASE });

/** At the peer: the home's job as it arrives (buyer region:<home>, keyed by the home attempt id). */
const arrived = (id: string, homeAttemptId: string, now = T0 + 20): NewJob => ({ id, buyerId: peerBuyerId(HOME), spec: spec(GPU_SPEC), idempotencyKey: homeAttemptId, now, payment: PAYMENT });

/** Nothing was written for the pseudo node: no track record event, penalty or reputation. */
async function nothingForPeerNode(store: Store): Promise<void> {
  const node = peerNodeId(PEER);
  assert.ok(isPeerNodeId(node));
  assert.deepEqual(await store.listEvents('node', node, 10), []);
  assert.deepEqual((await store.listPenalties(node, { limit: 10 })).items, []);
  assert.equal(await store.getReputation(node), undefined);
  assert.equal(await store.getNode(node), undefined);
}

export function forwardTests(open: OpenStore): void {
  test('forwards: forward → progress → finish books the bill to clearing:<peer>, the buyer gets back hold − bill', () =>
    withStore(open, async (store) => {
      await queuedPaid(store, 'job-1');
      const sent = await forward(store, 'job-1', 'att-1');
      assert.ok(sent);
      assert.equal(sent.attempt.nodeId, peerNodeId(PEER));
      assert.deepEqual(sent.attempt.gpuIndices, []);
      assert.equal(sent.attempt.price, null, 'no price: chunk settlement never touches it');
      assert.equal(sent.attempt.leaseExpiresAt, T0 + 10 + LEASE);
      assert.equal(sent.job.state, 'assigned');
      assert.equal(sent.job.currentAttemptId, 'att-1');
      assert.equal(sent.job.attemptCount, 1);
      assert.deepEqual(await eventTypes(store, 'job', 'job-1'), ['job.submitted', 'job.assigned', 'job.forwarded']);
      const ev = (await store.listEvents('job', 'job-1', 10)).at(-1);
      assert.deepEqual(ev?.data, { attemptId: 'att-1', peerId: PEER, reason: 'no local node within 60 s' });
      let fw = await store.getForward('att-1');
      assert.equal(fw?.state, 'sending');
      assert.equal(fw?.remoteJobId, null);
      assert.deepEqual(
        (await store.listOpenForwards(10)).map((f) => f.attemptId),
        ['att-1'],
      );

      // The peer's first answer, then a failed contact (recorded, the lease runs on), then it runs with logs.
      assert.equal(await store.recordForwardProgress({ attemptId: 'att-1', now: T0 + 20, remoteJobId: 'remote-1', leaseExpiresAt: T0 + 20 + LEASE }), 'ok');
      fw = await store.getForward('att-1');
      assert.equal(fw?.state, 'sent');
      assert.equal(fw?.remoteJobId, 'remote-1');
      assert.equal(fw?.lastContactAt, T0 + 20);
      assert.equal(await store.recordForwardProgress({ attemptId: 'att-1', now: T0 + 30, error: `connection refused ${'x'.repeat(5000)}` }), 'ok');
      fw = await store.getForward('att-1');
      assert.equal(fw?.lastError?.length, 1024, 'errors are bounded');
      assert.equal(fw?.lastContactAt, T0 + 20);
      assert.equal((await store.getAttempt('att-1'))?.leaseExpiresAt, T0 + 20 + LEASE, 'a failed contact renews nothing');
      const progress = { attemptId: 'att-1', now: T0 + 40, running: true, leaseExpiresAt: T0 + 40 + LEASE, logs: [log(0, 'a\n'), log(1, 'b\n')], logCursor: 2 };
      assert.equal(await store.recordForwardProgress(progress), 'ok');
      assert.equal(await store.recordForwardProgress({ ...progress, now: T0 + 41, logs: [log(1, 'b\n'), log(2, 'c\n')], logCursor: 3 }), 'ok', 'repeats are ignored');
      fw = await store.getForward('att-1');
      assert.equal(fw?.state, 'running');
      assert.equal(fw?.lastError, null, 'a success clears the error');
      assert.equal(fw?.logCursor, 3);
      const attempt = await store.getAttempt('att-1');
      assert.equal(attempt?.state, 'running');
      assert.equal(attempt?.startedAt, T0 + 40);
      assert.equal(attempt?.leaseExpiresAt, T0 + 40 + LEASE);
      const job = await store.getJob('job-1');
      assert.equal(job?.state, 'running');
      assert.equal(job?.startedAt, T0 + 40);
      assert.deepEqual(
        (await store.readLogs('job-1', 0, 10)).map((l) => [l.attemptId, l.seq, l.data]),
        [
          ['att-1', 0, 'a\n'],
          ['att-1', 1, 'b\n'],
          ['att-1', 2, 'c\n'],
        ],
      );
      assert.equal(await store.settleRunning(T0 + 600_000, 0, 10), 0, 'an unpriced attempt is never settled');

      const bill = 123_456;
      const done = await store.finishForward({ attemptId: 'att-1', outcome: 'succeeded', exitCode: 0, error: null, charged: bill, now: T0 + 100 }, decide);
      assert.equal(done.status, 'ended');
      assert.equal(done.job.state, 'succeeded');
      assert.equal((await store.getAttempt('att-1'))?.state, 'succeeded');
      fw = await store.getForward('att-1');
      assert.equal(fw?.state, 'ended');
      assert.equal(fw?.charged, bill);
      assert.deepEqual(await store.listOpenForwards(10), []);
      assert.deepEqual(await kinds(store, 'job-1'), ['escrow.hold', 'clearing.charge', 'escrow.release']);
      assert.equal(await bal(store, ACCOUNTS.clearing(PEER)), bill);
      assert.equal(await bal(store, ACCOUNTS.escrow('job-1')), 0);
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 10_000_000 - bill, 'the buyer paid the bill, once');
      const types = await eventTypes(store, 'job', 'job-1');
      assert.deepEqual(types.slice(-4), ['job.forward_billed', 'attempt.finished', 'job.succeeded', 'job.escrow_released']);
      assert.deepEqual(await store.clearingBalances(), [{ peerId: PEER, asset: 'usdc', balance: bill }]);
      assert.deepEqual(await store.forwardCounts(), [{ peerId: PEER, sent: 1, received: 0, open: 0 }]);
      await nothingForPeerNode(store);
      await assertBalanced(store);

      // Again: a duplicate, nothing written.
      const again = await store.finishForward({ attemptId: 'att-1', outcome: 'succeeded', exitCode: 0, error: null, charged: bill, now: T0 + 200 }, decide);
      assert.equal(again.status, 'duplicate');
      assert.equal(again.job.state, 'succeeded');
      assert.deepEqual(await kinds(store, 'job-1'), ['escrow.hold', 'clearing.charge', 'escrow.release']);
      assert.equal(await bal(store, ACCOUNTS.clearing(PEER)), bill);
      assert.equal(await store.recordForwardProgress({ attemptId: 'att-1', now: T0 + 300 }), 'fenced');
      assert.equal((await store.getForward('att-1'))?.state, 'ended', 'an ended row stays ended');
      await assert.rejects(store.recordForwardProgress({ attemptId: 'no-such', now: T0 }), code('ATTEMPT_NOT_FOUND'));
    }));

  test('forwards: a bill past the escrow charges what it holds; a failed run retries with a top-up; a cancel caps the lease', () =>
    withStore(open, async (store) => {
      await queuedPaid(store, 'job-1', { ...GPU_SPEC, maxRetries: 2 });
      await forward(store, 'job-1', 'att-1');
      const failed = await store.finishForward({ attemptId: 'att-1', outcome: 'failed', exitCode: null, error: 'executor failed at the peer', charged: HELD + 5, now: T0 + 50 }, decide);
      assert.equal(failed.status, 'ended');
      assert.equal(failed.job.state, 'queued', 'an executor failure retries, by decide');
      const charge = (await store.jobTransfers('job-1')).find((t) => t.kind === 'clearing.charge');
      assert.match(charge?.memo ?? '', /more than the escrow held/);
      assert.equal(await bal(store, ACCOUNTS.clearing(PEER)), HELD);
      assert.equal(await bal(store, ACCOUNTS.escrow('job-1')), HELD, 'topped up for the retry');
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 10_000_000 - 2 * HELD);
      assert.deepEqual(await kinds(store, 'job-1'), ['escrow.hold', 'clearing.charge', 'escrow.topup']);

      const now = T0 + 60_000;
      await forward(store, 'job-1', 'att-2', now);
      await store.recordForwardProgress({ attemptId: 'att-2', now: now + 1, running: true, leaseExpiresAt: now + 1 + LEASE });
      await store.requestCancel('job-1', now + 2, 30_000);
      await store.recordForwardProgress({ attemptId: 'att-2', now: now + 3, leaseExpiresAt: now + 3 + LEASE });
      assert.equal((await store.getAttempt('att-2'))?.leaseExpiresAt, now + 2 + 30_000, 'never leased past its stop_by');
      const cancelled = await store.finishForward({ attemptId: 'att-2', outcome: 'cancelled', exitCode: null, error: 'cancelled by the buyer', charged: 0, now: now + 4 }, decide);
      assert.equal(cancelled.job.state, 'cancelled');
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), 10_000_000 - HELD, 'a zero bill moves nothing: the whole second hold comes back');
      await nothingForPeerNode(store);
      await assertBalanced(store);
      await assert.rejects(async () => store.finishForward({ attemptId: 'att-2', outcome: 'failed', exitCode: 1, error: null, charged: -1, now }, decide), code('REQUEST_INVALID'));
    }));

  test('forwards: forwardJob writes nothing unless the job is still queued', () =>
    withStore(open, async (store) => {
      await assigned(store, 'job-a', 'att-a', 'node-1', T0);
      assert.equal(await forward(store, 'job-a', 'att-fw'), undefined);
      await store.submitJob({ id: 'job-c', buyerId: BUYER, spec: spec(), idempotencyKey: null, now: T0 });
      await store.requestCancel('job-c', T0 + 1);
      assert.equal(await forward(store, 'job-c', 'att-fw2'), undefined);
      assert.equal(await forward(store, 'no-such-job', 'att-fw3'), undefined);
      assert.deepEqual(
        (await store.listAttempts('job-a')).map((a) => a.id),
        ['att-a'],
      );
      assert.deepEqual(await store.listAttempts('job-c'), []);
      assert.equal(await store.getForward('att-fw'), undefined);
      assert.deepEqual(await store.listOpenForwards(10), []);
      assert.deepEqual(await store.listJobForwards('job-a'), []);
      assert.ok(!(await eventTypes(store, 'job', 'job-a')).includes('job.forwarded'));
      assert.deepEqual(await store.forwardCounts(), []);

      // Open forwards: never contacted first, then the oldest contact.
      for (const id of ['job-x', 'job-y', 'job-z']) await store.submitJob({ id, buyerId: BUYER, spec: spec(), idempotencyKey: null, now: T0 });
      await forward(store, 'job-x', 'att-x', T0 + 1);
      await forward(store, 'job-y', 'att-y', T0 + 2);
      await forward(store, 'job-z', 'att-z', T0 + 3);
      await store.recordForwardProgress({ attemptId: 'att-y', now: T0 + 10, remoteJobId: 'ry' });
      await store.recordForwardProgress({ attemptId: 'att-x', now: T0 + 20, remoteJobId: 'rx' });
      assert.deepEqual(
        (await store.listOpenForwards(10)).map((f) => f.attemptId),
        ['att-z', 'att-y', 'att-x'],
      );
      assert.deepEqual(
        (await store.listOpenForwards(1)).map((f) => f.attemptId),
        ['att-z'],
      );
      assert.deepEqual(await store.forwardCounts(), [{ peerId: PEER, sent: 3, received: 0, open: 3 }]);
    }));

  test('forwards: a lease that runs out fences the attempt (job requeued, no node record); its bill is written off, never the buyer charged', () =>
    withStore(open, async (store) => {
      await queuedPaid(store, 'job-1');
      await mint(store, ACCOUNTS.treasury, 100);
      await forward(store, 'job-1', 'att-1');
      await store.recordForwardProgress({ attemptId: 'att-1', now: T0 + 20, remoteJobId: 'remote-1', running: true, leaseExpiresAt: T0 + 20 + LEASE });
      const lost = await store.expireLeases(T0 + 20 + LEASE + 1, decide, 10);
      assert.deepEqual(
        lost.map((l) => [l.attemptId, l.nodeId, l.outcome, l.jobState]),
        [['att-1', peerNodeId(PEER), 'lost', 'queued']],
      );
      assert.equal((await store.getJob('job-1'))?.state, 'queued', 'the job comes back home');
      await nothingForPeerNode(store);
      assert.equal(await store.recordForwardProgress({ attemptId: 'att-1', now: T0 + 70_000, running: true, leaseExpiresAt: T0 + 200_000 }), 'fenced');
      const fw = await store.getForward('att-1');
      assert.equal(fw?.state, 'fenced');
      assert.equal(fw?.lastContactAt, T0 + 70_000);
      assert.equal((await store.getAttempt('att-1'))?.state, 'lost', 'a fenced attempt does not restart');
      assert.deepEqual(
        (await store.listOpenForwards(10)).map((f) => [f.attemptId, f.state]),
        [['att-1', 'fenced']],
      );
      const escrowBefore = await bal(store, ACCOUNTS.escrow('job-1'));
      const walletBefore = await bal(store, ACCOUNTS.wallet(BUYER));
      const minted = (await store.ledgerTotals())[0]?.minted ?? 0;

      const bill = 300;
      const r = await store.finishForward({ attemptId: 'att-1', outcome: 'succeeded', exitCode: 0, error: null, charged: bill, now: T0 + 80_000 }, decide);
      assert.equal(r.status, 'fenced');
      assert.equal(r.job.state, 'queued', 'the job is not moved by a fenced attempt');
      assert.equal((await store.getForward('att-1'))?.state, 'ended');
      assert.equal((await store.getForward('att-1'))?.charged, bill);
      assert.equal(await bal(store, ACCOUNTS.clearing(PEER)), bill);
      assert.equal(await bal(store, ACCOUNTS.treasury), 0, 'the treasury pays what it holds');
      assert.equal((await store.ledgerTotals())[0]?.minted, minted + bill - 100, 'the world the rest');
      assert.equal(await bal(store, ACCOUNTS.escrow('job-1')), escrowBefore, "the buyer's escrow is untouched");
      assert.equal(await bal(store, ACCOUNTS.wallet(BUYER)), walletBefore);
      assert.deepEqual(
        (await store.jobTransfers('job-1')).filter((t) => t.kind.startsWith('clearing.')).map((t) => [t.kind, t.attemptId]),
        [['clearing.writeoff', 'att-1']],
      );
      const dup = await store.finishForward({ attemptId: 'att-1', outcome: 'succeeded', exitCode: 0, error: null, charged: bill, now: T0 + 90_000 }, decide);
      assert.equal(dup.status, 'duplicate');
      assert.equal(await bal(store, ACCOUNTS.clearing(PEER)), bill, 'booked once');
      assert.deepEqual(await store.listOpenForwards(10), []);
      assert.deepEqual(
        (await store.listJobForwards('job-1')).map((f) => f.attemptId),
        ['att-1'],
      );
      await assertBalanced(store);
    }));

  test('forwards: at the peer, the hold is drawn on the credit line; past it INSUFFICIENT_FUNDS writes nothing; the same home attempt is the same job', () =>
    withStore(open, async (store) => {
      const limit = { peerId: HOME, creditLimit: 2 * HELD - 1 };
      const first = await store.acceptForwardedJob(arrived('rj-1', 'att-1'), limit);
      assert.equal(first.created, true);
      assert.equal(first.job.buyerId, peerBuyerId(HOME));
      assert.equal(first.job.idempotencyKey, 'att-1');
      assert.deepEqual(await kinds(store, 'rj-1'), ['clearing.credit', 'escrow.hold']);
      assert.equal(await bal(store, ACCOUNTS.clearing(HOME)), -HELD);
      assert.equal(await bal(store, ACCOUNTS.wallet(peerBuyerId(HOME))), 0);
      assert.equal(await bal(store, ACCOUNTS.escrow('rj-1')), HELD);

      const again = await store.acceptForwardedJob(arrived('rj-1b', 'att-1'), limit);
      assert.equal(again.created, false);
      assert.equal(again.job.id, 'rj-1');
      assert.equal(await bal(store, ACCOUNTS.clearing(HOME)), -HELD, 'credited once');

      await assert.rejects(store.acceptForwardedJob(arrived('rj-2', 'att-2'), limit), (err: unknown) => {
        code('INSUFFICIENT_FUNDS')(err);
        assert.match((err as Error).message, new RegExp(`region ${HOME}'s credit line here is .*: it owes 1\\.000000 USDC already and this job needs 1\\.000000 USDC more`));
        return true;
      });
      assert.equal(await store.getJob('rj-2'), undefined);
      assert.deepEqual(await store.jobTransfers('rj-2'), []);
      assert.deepEqual(await store.listEvents('job', 'rj-2', 10), []);
      assert.equal(await bal(store, ACCOUNTS.clearing(HOME)), -HELD);
      assert.deepEqual(await store.clearingBalances(), [{ peerId: HOME, asset: 'usdc', balance: -HELD }]);
      assert.deepEqual(await store.forwardCounts(), [{ peerId: HOME, sent: 0, received: 1, open: 1 }]);

      // Cancelled while queued: the hold comes back to the wallet, then to the credit line.
      await store.requestCancel('rj-1', T0 + 30);
      assert.equal(await store.returnPeerCredit(HOME, 'usdc', T0 + 31), HELD);
      assert.equal(await store.returnPeerCredit(HOME, 'usdc', T0 + 32), 0, 'an empty wallet moves nothing');
      assert.equal(await bal(store, ACCOUNTS.clearing(HOME)), 0);
      assert.deepEqual(await store.clearingBalances(), [{ peerId: HOME, asset: 'usdc', balance: 0 }], 'a zero balance that moved is listed');
      assert.deepEqual(await store.forwardCounts(), [{ peerId: HOME, sent: 0, received: 1, open: 0 }]);
      const back = await store.acceptForwardedJob(arrived('rj-2', 'att-2'), limit);
      assert.equal(back.created, true, 'the credit returned makes room');
      await assertBalanced(store);
    }));

  test('forwards: a clearing account may go below zero, down to −MAX_AMOUNT (REQUEST_INVALID past it, saying what is owed)', () =>
    withStore(open, async (store) => {
      const clearing = ACCOUNTS.clearing(HOME);
      const wallet = ACCOUNTS.wallet(peerBuyerId(HOME));
      const credit = (amount: number) => store.postTransfer({ kind: 'clearing.credit', postings: move('usdc', clearing, [{ account: wallet, amount }]), at: T0, memo: 'credit' });
      await credit(MAX_AMOUNT);
      assert.equal(await bal(store, clearing), -MAX_AMOUNT);
      await store.postTransfer({ kind: 'clearing.return', postings: move('usdc', wallet, [{ account: clearing, amount: 10 }]), at: T0, memo: 'return' });
      await assert.rejects(credit(11), (err: unknown) => {
        code('REQUEST_INVALID')(err);
        assert.match((err as Error).message, new RegExp(`what is owed on ${clearing} would pass the largest amount.*at most 0\\.000010 USDC more fits`));
        return true;
      });
      assert.equal(await bal(store, clearing), -MAX_AMOUNT + 10, 'nothing moved');
      await assertBalanced(store);
    }));

  test('forwards: a full cycle on two stores (home and peer): both ledgers balance and the clearing pair nets to zero', async () => {
    const home = await open();
    const peer = await open();
    try {
      const h = home.store;
      const p = peer.store;
      await queuedPaid(h, 'job-1');
      await forward(h, 'job-1', 'att-1');

      // The peer runs it as region:<home> on a priced node of its own.
      const { job: rj } = await p.acceptForwardedJob(arrived('rj-1', 'att-1'), { peerId: HOME, creditLimit: 1_000_000_000 });
      await p.registerNode({ id: 'node-p', publicKey: 'key-node-p', advertisement: advertisement(), now: T0, providerId: 'prov-p' });
      const price: AttemptPriceRecord = { asset: 'usdc', pricePerUnitHour: PRICE, units: 2, feeBps: 500, providerId: 'prov-p', stakeLock: stakeToLock(PRICE, 2, TIMEOUT), marketClass: 'h100-80gb' };
      await mint(p, ACCOUNTS.stake('node-p'), price.stakeLock);
      await p.assign([{ jobId: rj.id, attemptId: 'ratt-1', nodeId: 'node-p', gpuIndices: [0, 1], leaseExpiresAt: T0 + 100_000, price }], T0 + 30);
      await p.startAttempt('ratt-1', 'node-p', T0 + 40);
      await h.recordForwardProgress({ attemptId: 'att-1', now: T0 + 45, remoteJobId: rj.id, running: true, leaseExpiresAt: T0 + 45 + LEASE });
      const ended = await p.finishAttempt(result('ratt-1', 'node-p', T0 + 40 + 90_000), decide);
      assert.equal(ended.job.state, 'succeeded');
      const bill = ended.attempt.settlement.charged;
      assert.ok(bill > 0 && bill < HELD, `bill ${bill}`);
      assert.equal(await p.returnPeerCredit(HOME, 'usdc', T0 + 131_000), HELD - bill);

      // Home is told the bill.
      await h.finishForward({ attemptId: 'att-1', outcome: 'succeeded', exitCode: 0, error: null, charged: bill, now: T0 + 132_000 }, decide);
      assert.equal(await bal(h, ACCOUNTS.wallet(BUYER)), 10_000_000 - bill);
      const [atHome] = await h.clearingBalances();
      const [atPeer] = await p.clearingBalances();
      assert.deepEqual(atHome, { peerId: PEER, asset: 'usdc', balance: bill });
      assert.deepEqual(atPeer, { peerId: HOME, asset: 'usdc', balance: -bill });
      assert.equal((atHome?.balance ?? 0) + (atPeer?.balance ?? 0), 0, 'the pair nets to zero');
      assert.deepEqual(await h.forwardCounts(), [{ peerId: PEER, sent: 1, received: 0, open: 0 }]);
      assert.deepEqual(await p.forwardCounts(), [{ peerId: HOME, sent: 0, received: 1, open: 0 }]);
      await assertBalanced(h);
      await assertBalanced(p);
    } finally {
      await home.cleanup();
      await peer.cleanup();
    }
  });
}
