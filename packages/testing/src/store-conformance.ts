/**
 * The Store conformance suite: one set of node:test tests that every Store implementation must pass
 * unchanged (SQLite and PostgreSQL). Each test runs on a fresh store from `open()`. One describe per port
 * of core's Store (core/src/store/*.ts), each from its own file in conformance/ports; flows that cross
 * ports (job money, cancel billing) and the Store's own lifecycle come after.
 */
import { describe } from 'node:test';
import type { OpenStore } from './conformance/fixtures.js';
import { cancelGraceTests } from './conformance/flows/cancel-grace.js';
import { jobMoneyTests } from './conformance/flows/job-money.js';
import { leasePenaltyTests } from './conformance/flows/lease-penalties.js';
import { lifecycleTests } from './conformance/lifecycle.js';
import { attemptWriteTests } from './conformance/ports/attempt-writes.js';
import { attemptTests } from './conformance/ports/attempts.js';
import { blobTests } from './conformance/ports/blobs.js';
import { challengeTests } from './conformance/ports/challenges.js';
import { clusterTests } from './conformance/ports/cluster.js';
import { equivocationTests } from './conformance/ports/equivocations.js';
import { forwardTests } from './conformance/ports/forwards.js';
import { historyTests } from './conformance/ports/history.js';
import { jobTests } from './conformance/ports/jobs.js';
import { jobQueueTests } from './conformance/ports/jobs-queue.js';
import { ledgerTests } from './conformance/ports/ledger.js';
import { marketTests } from './conformance/ports/market.js';
import { nodeTests } from './conformance/ports/nodes.js';
import { peerTests } from './conformance/ports/peers.js';
import { reputationTests } from './conformance/ports/reputation.js';
import { tokenTests } from './conformance/ports/tokens.js';
import { verificationTests } from './conformance/ports/verification.js';

export type { OpenStore, StoreUnderTest } from './conformance/fixtures.js';

export function runStoreConformance(name: string, open: OpenStore, opts: { skip?: string | false } = {}): void {
  describe(`Store conformance: ${name}`, { skip: opts.skip ?? false }, () => {
    describe('tokens port: tokens and node enrollments', () => tokenTests(open));
    describe('jobs port: submission, reads, cancel, the queue, assignment, queue timeouts', () => {
      jobTests(open);
      jobQueueTests(open);
    });
    describe('attempts port: start, finish, leases, logs, budgeted node writes', () => {
      attemptTests(open);
      attemptWriteTests(open);
    });
    describe('nodes port: registry, heartbeats, admin state, track records', () => nodeTests(open));
    describe('ledger port: transfers, totals, money limits, payouts, stake', () => ledgerTests(open));
    describe('market port: asks and prices', () => marketTests(open));
    describe('verification port: equivocation evidence, verification steps, disputes, penalties', () => {
      equivocationTests(open);
      verificationTests(open);
    });
    describe('reputation port: decayed outcomes per node', () => reputationTests(open));
    describe('challenges port: proof-of-hardware challenges and node proof state', () => challengeTests(open));
    describe('history port: events, job history, counts', () => historyTests(open));
    describe('blobs port: uploads, holds, quota, what the GC may sweep', () => blobTests(open));
    describe('cluster port: the leader lease and its fence, shared nonces, the fit check at assign', () => clusterTests(open));
    describe('peers port: federation peers and their summary exchanges', () => peerTests(open));
    describe('forwards port: jobs forwarded to peer regions, their bills and the clearing accounts', () => forwardTests(open));
    describe('flows: job money (hold, settle, release, top-up, stake locks)', () => jobMoneyTests(open));
    describe('flows: cancel grace and fee carry', () => cancelGraceTests(open));
    describe('flows: abandoned leases (fees, suspension)', () => leasePenaltyTests(open));
    describe('the store: migrations and durability', () => lifecycleTests(open));
  });
}
