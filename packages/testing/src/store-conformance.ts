/**
 * The Store conformance suite: one set of node:test tests that every Store implementation must pass
 * unchanged (SQLite and PostgreSQL). Each test runs on a fresh store from `open()`.
 */
import { describe } from 'node:test';
import type { OpenStore } from './conformance/fixtures.js';
import { finishTests } from './conformance/finish.js';
import { historyTests } from './conformance/history.js';
import { jobMoneyTests } from './conformance/job-money.js';
import { jobTests } from './conformance/jobs.js';
import { ledgerTests } from './conformance/ledger.js';
import { nodeTests } from './conformance/nodes.js';
import { queueTests } from './conformance/queue.js';
import { schedulingTests } from './conformance/scheduling.js';

export type { OpenStore, StoreUnderTest } from './conformance/fixtures.js';

export function runStoreConformance(name: string, open: OpenStore, opts: { skip?: string | false } = {}): void {
  describe(`Store conformance: ${name}`, { skip: opts.skip ?? false }, () => {
    describe('jobs', () => jobTests(open));
    describe('queue and attempts', () => queueTests(open));
    describe('results and logs', () => finishTests(open));
    describe('nodes and leases', () => nodeTests(open));
    describe('history and durability', () => historyTests(open));
    describe('scheduling: fair claim, gangs, node records', () => schedulingTests(open));
    describe('ledger: transfers, payouts, stake, asks, prices', () => ledgerTests(open));
    describe('job money: hold, settle, release, top-up, stake locks', () => jobMoneyTests(open));
  });
}
