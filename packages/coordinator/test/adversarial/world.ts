/**
 * The adversarial suite's world: a real coordinator with the market and verification on, an audit budget
 * in the treasury, honest operators with staked nodes, funded buyers, and the moves a scenario makes (put a
 * buyer's job on one chosen node, wait for its verification to be decided, check the ledger and penalties).
 *
 * A job is put on a chosen node by cordoning every other node until that node has taken it: the operator's
 * own tool, and it leaves the choice of auditors and referees to the coordinator.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { ACCOUNTS, move, type VerificationRecord } from '@gpux/core';
import type { CoordinatorConfig } from '../../src/config.js';
import { call, type Harness, spec, startHarness, waitFor } from '../helpers.js';
import { AdversarialAgent, newOperator, type Operator, type Strategy } from './agents.js';

export const USDC = 1_000_000;
/** Stake per node: far above the 20× rule for the suite's jobs (0.5 USDC held each). */
export const STAKE = 100 * USDC;
const OPERATOR_FUNDS = 1_000 * USDC;
const BUYER_FUNDS = 1_000 * USDC;
const AUDIT_BUDGET = 10_000 * USDC;
/** Verification decided: the audit (and referees) ended, or the job was never audited. */
const DECIDED = ['passed', 'failed', 'window', 'released'];

export interface World {
  h: Harness;
  honest: AdversarialAgent[];
  operators: Operator[];
  buyers: string[];
  nodes: AdversarialAgent[];
  /** Add a node with a strategy under `op` (a new operator when a name is given), staked and running. */
  add(name: string, strategy: Strategy, op: Operator | string): Promise<AdversarialAgent>;
  /** Submit a buyer's job with unique inputs and wait until `target` has taken it; returns its id. */
  executeOn(target: AdversarialAgent, opts?: { buyer?: string; timeoutSeconds?: number }): Promise<string>;
  /** Wait until the job's verification step is decided; returns it. */
  decided(jobId: string, timeoutMs?: number): Promise<VerificationRecord>;
  /** GET /v1/nodes/:id/penalties, every kind in one list. */
  penalties(node: AdversarialAgent): Promise<{ banned: boolean; penalties: Array<{ kind: string; jobId?: string | null; suspended?: boolean; fee?: number }> }>;
  wallet(token: string): Promise<number>;
  assertBalanced(step: string): Promise<void>;
  /** Every honest node: no penalty, not banned, its stake whole; its operator never below what it started with. */
  assertHonestUnharmed(): Promise<void>;
  close(): Promise<void>;
}

export async function startWorld(overrides: Partial<CoordinatorConfig> = {}, honestPerOperator = 2): Promise<World> {
  const h = await startHarness({
    market: true,
    verify: true,
    devMint: true,
    schedulePassIntervalMs: 20,
    expiryPassIntervalMs: 50,
    heartbeatIntervalMs: 150,
    leaseTtlMs: 1_000,
    nodeOfflineAfterMs: 1_000,
    disputeWindowSeconds: 3_600,
    ...overrides,
  });
  // The treasury's audit budget pays audit and referee runs (TRUST.md "who pays"); a new network starts with one.
  await h.coord.store.postTransfer({ kind: 'mint', postings: move('usdc', ACCOUNTS.world, [{ account: ACCOUNTS.treasury, amount: AUDIT_BUDGET }]), at: Date.now(), memo: 'audit budget' });
  const nodes: AdversarialAgent[] = [];
  const operators: Operator[] = [];
  const startWallets = new Map<string, number>();
  const get = (path: string, token = h.operator) => call(h.url, 'GET', path, { token });
  const post = (path: string, token = h.operator) => call(h.url, 'POST', path, { token, body: {} });
  const wallet = async (token: string) => {
    const w = (await get('/v1/wallet', token)).body;
    return (w.balances as Array<{ asset: string; available: number }>).find((b) => b.asset === 'usdc')?.available ?? 0;
  };

  const w: World = {
    h,
    honest: [],
    operators,
    buyers: [],
    nodes,
    async add(name, strategy, op) {
      let operator = typeof op === 'string' ? operators.find((o) => o.name === op) : op;
      if (!operator) {
        operator = await newOperator(h, op as string, OPERATOR_FUNDS);
        operators.push(operator);
      }
      const a = await new AdversarialAgent(h, name, strategy, operator).join(STAKE);
      nodes.push(a.start());
      return a;
    },
    async executeOn(target, opts = {}) {
      const buyer = opts.buyer ?? (w.buyers[0] as string);
      const others = nodes.filter((n) => n !== target && !n.refused);
      for (const n of others) await post(`/v1/nodes/${n.nodeId}/cordon`);
      try {
        const inputs = [{ path: 'in/nonce.txt', content: randomBytes(12).toString('hex') }];
        const sub = await call(h.url, 'POST', '/v1/jobs', {
          token: buyer,
          body: { spec: spec({ inputs, resources: { gpu: { count: 1 } }, timeoutSeconds: opts.timeoutSeconds ?? 600, maxPricePerGpuHour: 3 * USDC }) },
        });
        assert.equal(sub.status, 201, JSON.stringify(sub.body));
        const jobId = sub.body.job.id as string;
        await waitFor(async () => target.ran.some((r) => r.jobId === jobId) || target.refused, `${target.name} takes ${jobId}`, 20_000).catch(async (e: Error) => {
          const node = (await get(`/v1/nodes/${target.nodeId}`)).body.node;
          throw new Error(`${e.message}: ${JSON.stringify((await get(`/v1/jobs/${jobId}/explain`, buyer)).body)}; ${target.name}: ${JSON.stringify({ status: node?.status, adminState: node?.adminState, reason: node?.cordonReason ?? node?.adminReason })}; its penalties: ${JSON.stringify((await w.penalties(target)).penalties.map((x) => [x.kind, x.jobId]))}; it ran: ${JSON.stringify(await Promise.all(target.ran.map(async (r) => ({ ...r, kind: (await h.coord.store.getJob(r.jobId))?.kind, checkOf: (await h.coord.store.getJob(r.jobId))?.checkOf }))))}`);
        });
        return jobId;
      } finally {
        for (const n of others) if (!n.refused) await post(`/v1/nodes/${n.nodeId}/uncordon`);
      }
    },
    async decided(jobId, timeoutMs = 30_000) {
      return waitFor(
        async () => {
          const v = await h.coord.store.getVerification(jobId);
          return v && DECIDED.includes(v.state) ? v : undefined;
        },
        `the verification of ${jobId} is decided`,
        timeoutMs,
      );
    },
    async penalties(node) {
      const res = await get(`/v1/nodes/${node.nodeId}/penalties`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      // Equivocations come with their signed evidence in `penalties`; every other kind in `otherPenalties`.
      return { banned: res.body.banned, penalties: [...res.body.penalties, ...(res.body.otherPenalties ?? [])] };
    },
    wallet,
    async assertBalanced(step) {
      const t = (await get('/v1/treasury')).body;
      assert.ok(t.assets.length > 0 && t.assets.every((a: { balanced: boolean }) => a.balanced), `ledger balanced after ${step}: ${JSON.stringify(t)}`);
    },
    async assertHonestUnharmed() {
      for (const n of w.honest) {
        const p = await w.penalties(n);
        assert.deepEqual(p.penalties, [], `${n.name} (honest) has no penalty`);
        assert.equal(p.banned, false, `${n.name} (honest) is not banned`);
        assert.equal(n.refused, false, `${n.name} (honest) is never refused`);
        const stake = (await get(`/v1/nodes/${n.nodeId}/stake`)).body.stake;
        assert.equal(stake.staked, STAKE, `${n.name} (honest) keeps its whole stake`);
      }
      for (const o of operators.filter((op) => w.honest.some((n) => n.operator === op))) {
        assert.ok((await wallet(o.token)) >= (startWallets.get(o.name) ?? 0), `${o.name} (honest operator) never loses money`);
      }
    },
    async close() {
      for (const n of nodes) await n.stop();
      await h.close();
    },
  };

  for (const op of ['honest-a', 'honest-b', 'honest-c']) {
    for (let i = 0; i < honestPerOperator; i++) w.honest.push(await w.add(`${op}-${i}`, { kind: 'honest' }, op));
  }
  for (const o of operators) startWallets.set(o.name, await wallet(o.token));
  for (let i = 0; i < 2; i++) {
    const b = await h.buyer();
    assert.equal((await call(h.url, 'POST', '/v1/wallet/deposits', { token: b, body: { amount: BUYER_FUNDS } })).status, 201);
    w.buyers.push(b);
  }
  return w;
}
