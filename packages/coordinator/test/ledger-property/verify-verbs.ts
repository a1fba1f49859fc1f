/**
 * The verification commands (issue 11) against a Store: the operator funds the treasury (its audit
 * budget), a buyer disputes a result in its window, and the windows that closed release their held pay.
 * Sequential runs check each verb's answer against what the model and the step's record say.
 */
import assert from 'node:assert/strict';
import { ACCOUNTS } from '@gpux/core';
import type { Verbs } from './commands.js';
import { fundTreasury } from './model.js';
import { refusable } from './store-helpers.js';
import { at, byId, pctOf } from './world.js';

type VerifyVerb = 'fund' | 'dispute' | 'close';

export const verifyVerbs: Verbs<VerifyVerb> = {
  async fund(run, store, cmd) {
    await fundTreasury(run, store, cmd.asset, cmd.amount);
    return `treasury +${cmd.amount} ${cmd.asset}`;
  },

  /** The buyer of the k-th verified job (−1: the newest) disputes it with a bond of pct % of its wallet (0: no bond, refused). */
  async dispute(run, store, cmd) {
    const verified = byId([...run.jobs.values()].filter((j) => j.kind === 'buyer' && j.holdPay));
    const m = cmd.job < 0 ? verified.at(-1) : at(verified, cmd.job);
    if (!m) return 'skip';
    const v = await store.getVerification(m.id);
    const wallet = await store.getBalance(ACCOUNTS.wallet(m.buyerId), m.payment.asset);
    const bond = cmd.pct === 0 ? 0 : pctOf(wallet, cmd.pct);
    const refereeJobId = run.id('ref');
    const r = await refusable(store.openDispute({ jobId: m.id, buyerId: m.buyerId, reason: 'property test', bond, refereeJobId, now: run.now }), [
      'REQUEST_INVALID',
      'CONFLICT',
      'INSUFFICIENT_FUNDS',
    ]);
    const what = `dispute of ${m.id} (${v ? `${v.state}/${v.label}/${v.reason}` : 'no step'}) with a bond of ${bond} from ${wallet}`;
    if (run.sequential) {
      const open = v?.state === 'window' && v.dispute === null && v.reason !== 'not-deterministic' && run.now < v.windowClosesAt;
      let expected: string[];
      if (bond === 0) expected = ['REQUEST_INVALID'];
      else if (!open) expected = ['CONFLICT'];
      else if (bond > wallet) expected = ['INSUFFICIENT_FUNDS'];
      else expected = ['ok', 'CONFLICT']; // CONFLICT: the treasury cannot pay the referee now
      assert.ok(expected.includes(r.ok ? 'ok' : r.code), `${what}: ${r.ok ? 'ok' : r.code}, expected ${expected.join(' or ')}`);
    }
    if (!r.ok) return `${what}: ${r.code}`;
    assert.equal(r.value.state, 'refereeing', `${what}: a referee decides`);
    // The model knows the truth: the dispute is right exactly when the executor's result was wrong.
    const right = run.lies.has(r.value.attemptId);
    run.disputes.set(m.id, { bond, right, buyerId: m.buyerId, checksBefore: new Set(v?.checks.map((c) => c.jobId)) });
    run.count(right ? 'dispute (right)' : 'dispute (false)');
    return `${what}: ${right ? 'right' : 'false'}, referee ${refereeJobId}`;
  },

  async close(run, store, cmd) {
    const moved = await store.closeVerificationWindows(run.now, cmd.limit);
    for (const v of moved) run.count(`window closed as ${v.state}`);
    return moved.map((v) => `${v.jobId} ${v.state}/${v.label}`).join(', ') || 'none';
  },
};
