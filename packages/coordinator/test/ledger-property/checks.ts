/**
 * The invariants: after every step (money conserved and never negative, escrow within its hold and empty
 * once the job finished, providers' wallets shrinking only as they asked, stake and locks as modelled),
 * and at the end of a run (every bill, and each party's money conserved exactly).
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, type Store } from '@gpux/core';
import { checkBill } from './bill.js';
import type { JobModel, Run } from './model.js';
import { assertBalanced } from './store-helpers.js';
import { checkVerification } from './verify-checks.js';
import { ASSETS, BUYERS, byId, isTerminal, key, NODES, PROVIDERS, sum } from './world.js';

/** The invariants after every step (one command, or one concurrent batch). */
export async function checkStep(run: Run, store: Store): Promise<void> {
  const totals = await store.ledgerTotals();
  for (const asset of ASSETS) {
    const minted = totals.find((x) => x.asset === asset)?.minted ?? 0;
    assert.equal(minted, run.minted[asset], `${asset}: the ledger's minted equals the model's mints − completed payouts`);
  }
  assertBalanced(totals);

  const jobs = await store.getJobs([...run.jobs.keys()]);
  assert.equal(jobs.length, run.jobs.size, 'every submitted job exists');
  for (const job of jobs) {
    const m = run.jobs.get(job.id) as JobModel;
    assert.deepEqual(job.payment, m.payment, `job ${job.id}: payment is fixed at submission`);
    const escrow = await store.getBalance(ACCOUNTS.escrow(job.id), m.payment.asset);
    if (isTerminal(job.state)) {
      assert.equal(escrow, 0, `job ${job.id} (${job.state}): a finished job's escrow is empty`);
      if (!m.billChecked) {
        await checkBill(run, store, job);
        m.billChecked = true;
      }
    } else {
      assert.ok(escrow <= m.holdTotal, `job ${job.id} (${job.state}): escrow ${escrow} ≤ the hold ${m.holdTotal}`);
    }
  }
  await checkVerification(run, store, jobs);

  for (const p of PROVIDERS) {
    for (const asset of ASSETS) {
      const k = key(p, asset);
      const balance = await store.getBalance(ACCOUNTS.wallet(p), asset);
      // Abandoned-lease fees the step took (each is checked against its lost attempt in the job's bill): only
      // the expiry pass takes them, so a sequential step of another kind may take none (and skips the read).
      let newFees = 0;
      if (run.lastCommand === undefined || run.lastCommand === 'expire') {
        const history = (await store.walletHistory(p, { asset, limit: 10_000 })).items;
        const fees = sum(history.filter((e) => e.kind === 'penalty.fee' && e.amount < 0).map((e) => -e.amount));
        newFees = fees - (run.leaseFeesPaid.get(k) ?? 0);
        run.leaseFeesPaid.set(k, fees);
      }
      const floor = (run.providerSeen.get(k) ?? 0) - (run.allowance.get(k) ?? 0) - newFees;
      assert.ok(balance >= floor, `${p} ${asset}: the wallet went from ${run.providerSeen.get(k)} to ${balance}, more than its own deposits, payouts and lease fees took`);
      run.providerSeen.set(k, balance);
    }
  }
  run.allowance.clear();

  const stakes = await store.listStakes();
  const active = await store.listActiveAttempts();
  for (const n of NODES) {
    const s = stakes.find((x) => x.nodeId === n.id) ?? { staked: 0, locked: 0 };
    assert.equal(s.staked, run.staked.get(n.id) ?? 0, `${n.id}: staked = deposits − unbonds − slashes`);
    const locks = sum(active.filter((a) => a.nodeId === n.id).map((a) => a.price?.stakeLock ?? 0));
    assert.equal(s.locked, locks, `${n.id}: locked = the stake locks of its active attempts`);
    if (!run.slashedNodes.has(n.id)) assert.ok(s.locked <= s.staked, `${n.id}: locked ${s.locked} ≤ staked ${s.staked} (never slashed)`);
  }
  for (const a of active) {
    const job = jobs.find((j) => j.id === a.jobId);
    assert.ok(job && !isTerminal(job.state), `active attempt ${a.id} belongs to an unfinished job (${job?.state})`);
  }
}

/** At the end of a run: every bill, and each party's money conserved exactly. */
export async function checkEnd(run: Run, store: Store): Promise<void> {
  const jobs = byId(await store.getJobs([...run.jobs.keys()]));
  const charged = new Map<string, number>(); // key(buyer, asset)
  const escrowed = new Map<string, number>();
  const income = new Map<string, number>(); // key(provider, asset)
  const fees = new Map<string, number>(); // asset
  const feesBy = new Map<string, number>(); // key(provider, asset)
  const feeBasis = new Map<string, bigint>(); // key(provider, asset): Σ charge × feeBps
  const leaseFeesIn = new Map<string, number>(); // key(buyer, asset)
  const leaseFeesOut = new Map<string, number>(); // key(provider, asset)
  // Verification (issue 11): pay still held, forfeited, slashed by penalties, received from them; bonds; the treasury's check runs.
  const pendingPay = new Map<string, number>(); // key(provider, asset)
  const forfeited = new Map<string, number>(); // key(provider, asset)
  const penaltySlashed = new Map<string, number>(); // node (USDC)
  const penaltyIn = new Map<string, number>(); // `${account}|${asset}`
  const bonds = new Map<string, number>(); // key(buyer, asset): held now
  const bondLost = new Map<string, number>(); // key(buyer, asset)
  const bondTo = new Map<string, number>(); // key(provider, asset)
  const treasuryFlows = new Map<string, number>(); // asset: − holds + swept + referee costs
  for (const job of jobs) {
    const bill = await checkBill(run, store, job);
    const m = run.jobs.get(job.id) as JobModel;
    const { asset } = m.payment;
    for (const [p, amount] of bill.pending) run.add(pendingPay, key(p, asset), amount);
    for (const [p, amount] of bill.forfeited) run.add(forfeited, key(p, asset), amount);
    for (const [n, amount] of bill.slashed) run.add(penaltySlashed, n, amount);
    for (const [k, amount] of bill.penaltyIn) run.add(penaltyIn, k, amount);
    for (const [p, amount] of bill.bondTo) run.add(bondTo, key(p, asset), amount);
    run.add(bonds, key(m.buyerId, asset), bill.bond);
    run.add(bondLost, key(m.buyerId, asset), bill.bondLost);
    run.add(treasuryFlows, asset, bill.treasurySwept - bill.treasuryHeld + bill.refereeCost);
    run.add(charged, key(m.buyerId, m.payment.asset), bill.charged);
    run.add(escrowed, key(m.buyerId, m.payment.asset), bill.balance);
    run.add(fees, m.payment.asset, bill.fees);
    for (const [p, amount] of bill.income) run.add(income, key(p, m.payment.asset), amount);
    for (const [p, amount] of bill.feesBy) run.add(feesBy, key(p, m.payment.asset), amount);
    for (const [p, b] of bill.feeBasis) feeBasis.set(key(p, m.payment.asset), (feeBasis.get(key(p, m.payment.asset)) ?? 0n) + b);
    for (const [p, amount] of bill.leaseFees) {
      run.add(leaseFeesOut, key(p, m.payment.asset), amount);
      run.add(leaseFeesIn, key(m.buyerId, m.payment.asset), amount);
    }
    run.count(`job ${job.state}`);
  }
  // replicas: 2 holds whose run was never written (released when the job ended without a result).
  for (const [id, h] of run.replicaHolds) {
    const m = run.jobs.get(h.rootId) as JobModel;
    if (!run.jobs.has(id)) run.add(escrowed, key(m.buyerId, m.payment.asset), await store.getBalance(ACCOUNTS.escrow(id), m.payment.asset));
  }
  for (const n of NODES) assert.equal(penaltySlashed.get(n.id) ?? 0, run.penaltySlashed.get(n.id) ?? 0, `${n.id}: the penalties' slashes are the slash transfers in the bills`);
  const pending = new Map<string, number>();
  for (const p of run.payouts.values()) {
    const stored = await store.getPayout(p.id);
    assert.equal(stored?.state, p.state, `payout ${p.id}`);
    const inPayout = await store.getBalance(ACCOUNTS.payout(p.id), p.asset);
    assert.equal(inPayout, p.state === 'pending' ? p.amount : 0, `payout ${p.id} (${p.state}) holds its amount while pending`);
    if (p.state === 'pending') run.add(pending, key(p.accountId, p.asset), p.amount);
  }
  const nodeMoney = new Map<string, number>(); // provider → stake + unbonding (USDC)
  for (const n of NODES) {
    const s = await store.getStake(n.id);
    assert.equal(s.providerId, n.providerId);
    const unbonding = await store.getBalance(ACCOUNTS.unbonding(n.id), 'usdc');
    assert.equal(sum(s.unbonding.map((u) => u.amount)), unbonding, `${n.id}: open unbondings = the unbonding account`);
    run.add(nodeMoney, n.providerId, s.staked + unbonding);
  }
  for (const asset of ASSETS) {
    const g = (map: Map<string, number>, k: string) => map.get(k) ?? 0;
    for (const b of BUYERS) {
      const k = key(b, asset);
      const has = (await store.getBalance(ACCOUNTS.wallet(b), asset)) + g(escrowed, k) + g(pending, k) + g(bonds, k);
      const slashed = asset === 'usdc' ? g(run.slashIn, ACCOUNTS.wallet(b)) : 0;
      const penalties = g(penaltyIn, `${ACCOUNTS.wallet(b)}|${asset}`);
      const expected = g(run.mintedTo, k) - g(run.completedBy, k) + slashed + penalties - g(charged, k) + g(leaseFeesIn, k) - g(bondLost, k);
      assert.equal(
        has,
        expected,
        `${b} ${asset}: wallet + escrow + bonds + pending payouts = minted − paid out + slashes, penalties and lease fees received − charged − bonds lost`,
      );
      const held = await store.escrowOfBuyer(b);
      assert.equal(held[asset] ?? 0, g(escrowed, k), `${b} ${asset}: escrowOfBuyer sums its unfinished jobs' escrow`);
    }
    for (const p of PROVIDERS) {
      const k = key(p, asset);
      const staked = asset === 'usdc' ? g(nodeMoney, p) : 0;
      const slashedOut = asset === 'usdc' ? sum(NODES.filter((n) => n.providerId === p).map((n) => g(run.slashOut, n.id))) : 0;
      const nodes = NODES.filter((n) => n.providerId === p);
      const penaltySlashOut = asset === 'usdc' ? sum(nodes.map((n) => g(penaltySlashed, n.id))) : 0;
      const has = (await store.getBalance(ACCOUNTS.wallet(p), asset)) + staked + g(pending, k) + g(pendingPay, k);
      const expected = g(run.mintedTo, k) - g(run.completedBy, k) + g(income, k) - slashedOut - penaltySlashOut - g(forfeited, k) - g(leaseFeesOut, k) + g(bondTo, k);
      assert.equal(
        has,
        expected,
        `${p} ${asset}: wallet + held pay + stake + unbonding + pending payouts = minted − paid out + earned + bonds won − slashed − forfeited − lease fees`,
      );
      const debits = (await store.walletHistory(p, { asset, limit: 10_000 })).items.filter((e) => e.amount < 0);
      for (const e of debits) assert.ok(['stake.deposit', 'payout.request', 'penalty.fee'].includes(e.kind), `${p}: its wallet was debited by ${e.kind}`);
      assert.equal(g(leaseFeesOut, k), run.leaseFeesPaid.get(k) ?? 0, `${p} ${asset}: the lease fees its wallet paid are the fees in the jobs' bills`);
    }
    for (const p of PROVIDERS) {
      // Fees never round away (issue 10 item 15): over every charge of the run, a provider's fees are
      // exactly floor(Σ charge × feeBps / 10000), and it keeps at least Σ charge × (1 − fee).
      const k = key(p, asset);
      const basis = feeBasis.get(k) ?? 0n;
      assert.equal(BigInt(g(feesBy, k)), basis / 10_000n, `${p} ${asset}: fees ${g(feesBy, k)} = floor(Σ charge × fee) = ${basis / 10_000n}`);
      const gross = BigInt(g(income, k) + g(feesBy, k));
      assert.ok(BigInt(g(income, k)) * 10_000n >= gross * 10_000n - basis, `${p} ${asset}: earned ${g(income, k)}, at least its charges net of the fee rate`);
      if (g(feesBy, k) > 0) run.count('provider paid fees with carry');
    }
    const treasury =
      g(fees, asset) + (asset === 'usdc' ? g(run.slashIn, ACCOUNTS.treasury) : 0) + run.treasuryFunded[asset] + g(treasuryFlows, asset) + g(penaltyIn, `${ACCOUNTS.treasury}|${asset}`);
    assert.equal(
      await store.getBalance(ACCOUNTS.treasury, asset),
      treasury,
      `treasury ${asset}: fees + slashes + funding − check runs' holds + their unspent rest + penalties' shares + referee costs`,
    );
  }
}
