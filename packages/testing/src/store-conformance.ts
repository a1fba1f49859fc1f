/**
 * The Store conformance suite: one set of node:test tests that every Store implementation must pass
 * unchanged (SQLite and PostgreSQL). Each test runs on a fresh store from `open()`.
 */
import { describe } from 'node:test';
import { attemptWriteTests } from './conformance/attempt-writes.js';
import { cancelGraceTests } from './conformance/cancel-grace.js';
import { enrollmentTests } from './conformance/enrollments.js';
import type { OpenStore } from './conformance/fixtures.js';
import { finishTests } from './conformance/finish.js';
import { historyTests } from './conformance/history.js';
import { jobMoneyTests } from './conformance/job-money.js';
import { jobTests } from './conformance/jobs.js';
import { ledgerTests } from './conformance/ledger.js';
import { moneyLimitTests } from './conformance/money-limits.js';
import { nodeTests } from './conformance/nodes.js';
import { queueTests } from './conformance/queue.js';
import { queueTimeoutTests } from './conformance/queue-timeout.js';
import { listPageBytesTests, queuedLimitTests } from './conformance/queued-limit.js';
import { schedulingTests } from './conformance/scheduling.js';

export type { OpenStore, StoreUnderTest } from './conformance/fixtures.js';

export function runStoreConformance(name: string, open: OpenStore, opts: { skip?: string | false } = {}): void {
  describe(`Store conformance: ${name}`, { skip: opts.skip ?? false }, () => {
    describe('jobs', () => jobTests(open));
    describe('queue and attempts', () => queueTests(open));
    describe('queued jobs per buyer, claims read the scheduling view', () => queuedLimitTests(open));
    describe('job list pages bounded by bytes', () => listPageBytesTests(open));
    describe('results and logs', () => finishTests(open));
    describe('nodes and leases', () => nodeTests(open));
    describe('tokens and node enrollments', () => enrollmentTests(open));
    describe('history and durability', () => historyTests(open));
    describe('scheduling: fair claim, gangs, node records', () => schedulingTests(open));
    describe('ledger: transfers, payouts, stake, asks, prices', () => ledgerTests(open));
    describe('job money: hold, settle, release, top-up, stake locks', () => jobMoneyTests(open));
    describe('queue timeouts', () => queueTimeoutTests(open));
    describe('cancel grace and fee carry', () => cancelGraceTests(open));
    describe('money limits: 2^53 − 1 per balance and per network', () => moneyLimitTests(open));
    describe('attempt writes: budgets, markers, byte-bounded pages, job history pages', () => attemptWriteTests(open));
  });
}
