/**
 * The money commands against a Store: mints, stake deposits, unbonding and its release, slashes, and
 * payouts (request, complete, reject). Successes update the model's mints, stake, slashes, payouts, and
 * the providers' allowance (what they may take out of their own wallets this step).
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, type Store } from '@gpux/core';
import type { Cmd, Verbs } from './commands.js';
import { mint, type Run } from './model.js';
import { refusable } from './store-helpers.js';
import { at, BUYERS, byId, key, node, PARTIES, PROVIDERS, pctOf, sum, type TestNode } from './world.js';

type MoneyVerb = 'mint' | 'stake' | 'unbond' | 'release' | 'slash' | 'payout' | 'complete' | 'reject';

/** The node's provider or, to be refused as FORBIDDEN, the other one. */
const actingProvider = (n: TestNode, wrongOwner: boolean) => (wrongOwner ? (PROVIDERS.find((p) => p !== n.providerId) as string) : n.providerId);

/** Completion or rejection of a payout, picked from the model synchronously so a concurrent batch's commands see the same payouts. */
async function endPayout(run: Run, store: Store, cmd: Extract<Cmd, { t: 'complete' | 'reject' }>): Promise<string> {
  const now = run.now;
  const all = byId([...run.payouts.values()]);
  const p = at(
    cmd.ended ? all : all.filter((x) => x.state === 'pending'),
    cmd.payout,
  );
  if (!p) return 'skip';
  const wasPending = p.state === 'pending';
  const verb = cmd.t === 'complete' ? store.completePayout(p.id, `ref-${p.id}`, now) : store.rejectPayout(p.id, 'property test', now);
  const r = await refusable(verb, ['CONFLICT']);
  if (run.sequential) assert.equal(r.ok, wasPending, `${cmd.t} ${p.id} (${p.state})`);
  if (!r.ok) return `${p.id} ${r.code}`;
  assert.equal(p.state, 'pending', `${p.id} left pending twice (now ${cmd.t})`);
  p.state = cmd.t === 'complete' ? 'completed' : 'rejected';
  assert.equal(r.value.state, p.state);
  if (cmd.t === 'complete') {
    run.minted[p.asset] -= p.amount;
    run.add(run.completedBy, key(p.accountId, p.asset), p.amount);
  }
  return `${p.id} ${p.state}`;
}

export const moneyVerbs: Verbs<MoneyVerb> = {
  async mint(run, store, cmd) {
    await mint(run, store, at(PARTIES, cmd.who) as string, cmd.asset, cmd.amount);
    return 'ok';
  },

  async stake(run, store, cmd) {
    const now = run.now;
    const n = node(cmd.node);
    const providerId = actingProvider(n, cmd.wrongOwner);
    const balance = await store.getBalance(ACCOUNTS.wallet(providerId), 'usdc');
    const amount = pctOf(balance, cmd.pct);
    const r = await refusable(store.addStake({ nodeId: n.id, providerId, amount, now }), ['INSUFFICIENT_FUNDS', 'FORBIDDEN']);
    if (cmd.wrongOwner) assert.equal(r.ok ? 'ok' : r.code, 'FORBIDDEN', `another provider staking on ${n.id}`);
    else if (run.sequential) assert.equal(r.ok, amount <= balance, `stake ${amount} from a wallet of ${balance}`);
    if (!r.ok) return `${n.id} ${amount} ${r.code}`;
    run.add(run.staked, n.id, amount);
    run.add(run.allowance, key(n.providerId, 'usdc'), amount);
    return `${n.id} +${amount}`;
  },

  async unbond(run, store, cmd) {
    const now = run.now;
    const n = node(cmd.node);
    const providerId = actingProvider(n, cmd.wrongOwner);
    const s = await store.getStake(n.id);
    const free = Math.max(0, s.staked - s.locked);
    const amount = pctOf(free, cmd.pct);
    const id = run.id('unbond');
    const r = await refusable(store.unbondStake({ id, nodeId: n.id, providerId, amount, releaseAt: now + cmd.delayMs, now }), [
      'INSUFFICIENT_FUNDS',
      'FORBIDDEN',
    ]);
    if (cmd.wrongOwner) assert.equal(r.ok ? 'ok' : r.code, 'FORBIDDEN', `another provider unbonding from ${n.id}`);
    else if (run.sequential) assert.equal(r.ok, amount <= free, `unbond ${amount} of ${free} free`);
    if (!r.ok) return `${n.id} ${amount} ${r.code}`;
    run.add(run.staked, n.id, -amount);
    return `${n.id} −${amount} (${id})`;
  },

  async release(run, store, cmd) {
    return `${await store.releaseUnbonded(run.now, cmd.limit)} released`;
  },

  async slash(run, store, cmd) {
    const n = node(cmd.node);
    const account = cmd.to < BUYERS.length ? ACCOUNTS.wallet(at(BUYERS, cmd.to) as string) : ACCOUNTS.treasury;
    const before = run.staked.get(n.id) ?? 0;
    const t = await store.slash({ nodeId: n.id, to: [{ account, amount: cmd.amount }], reason: 'property test', now: run.now });
    const paid = sum(t.postings.filter((p) => p.amount > 0).map((p) => p.amount));
    assert.equal(sum(t.postings.filter((p) => p.account === ACCOUNTS.stake(n.id)).map((p) => p.amount)), 0 - paid); // 0 −, not −0
    if (run.sequential) assert.equal(paid, Math.min(cmd.amount, before), `slash of ${cmd.amount} from a stake of ${before}`);
    run.add(run.staked, n.id, -paid);
    run.add(run.slashOut, n.id, paid);
    run.add(run.slashIn, account, paid);
    run.slashedNodes.add(n.id);
    return `${n.id} → ${account} ${paid}`;
  },

  async payout(run, store, cmd) {
    const now = run.now;
    const accountId = at(PARTIES, cmd.who) as string;
    const balance = await store.getBalance(ACCOUNTS.wallet(accountId), cmd.asset);
    const amount = pctOf(balance, cmd.pct);
    const id = run.id('payout');
    const r = await refusable(
      store.requestPayout({ id, accountId, asset: cmd.asset, amount, destination: `bank of ${accountId}`, adapter: 'manual', now }),
      ['INSUFFICIENT_FUNDS'],
    );
    if (run.sequential) assert.equal(r.ok, amount <= balance, `payout ${amount} from a wallet of ${balance}`);
    if (!r.ok) {
      assert.equal(await store.getPayout(id), undefined, `refused payout ${id} wrote no row`);
      return `${accountId} ${amount} ${cmd.asset} ${r.code}`;
    }
    run.payouts.set(id, { id, accountId, asset: cmd.asset, amount, state: 'pending' });
    if (PROVIDERS.includes(accountId)) run.add(run.allowance, key(accountId, cmd.asset), amount);
    return `${id}: ${accountId} ${amount} ${cmd.asset}`;
  },

  complete: endPayout,
  reject: endPayout,
};
