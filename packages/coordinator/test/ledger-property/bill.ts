/**
 * The check of one job's bill: its transfers (hold, top-ups, settlements, the release, and with held pay
 * (issue 11) the pay's release or forfeit, the penalty's slash and the dispute bond), oldest first, against
 * its payment and its attempts' prices, run times and settlement totals. Every transfer's legs are checked
 * for shape (who may pay whom under its kind); the flows it returns feed each party's expected money.
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, type AttemptPriceRecord, type AttemptRecord, chargeFor, type JobRecord, lostJobPrice, type Store } from '@gpux/core';
import type { Run } from './model.js';
import { isTerminal, SYSTEM_AUDIT } from './world.js';

export interface Bill {
  /** Paid out of the escrow by settlements, and of that the treasury's fees. */
  charged: number;
  fees: number;
  /** Provider → what its settlements paid it (its wallet, or the attempt's pending account with held pay). */
  income: Map<string, number>;
  /** Provider → the treasury fees its charges paid, and Σ charge × feeBps over them (the fee carry's basis). */
  feesBy: Map<string, number>;
  feeBasis: Map<string, bigint>;
  /** The escrow left. */
  balance: number;
  /** Abandoned-lease fees (penalty.fee): provider → what its wallet paid the job's buyer. */
  leaseFees: Map<string, number>;
  /** Provider → what is still held for it in its attempts' pending accounts. */
  pending: Map<string, number>;
  /** Wrong results: provider → pay forfeited; node → stake slashed (USDC); account → what it received (key(account, asset)). */
  forfeited: Map<string, number>;
  slashed: Map<string, number>;
  penaltyIn: Map<string, number>;
  /** The treasury's side of a check run: what it held for the run, and the unspent rest swept back. */
  treasuryHeld: number;
  treasurySwept: number;
  /** Dispute bonds: what the buyer lost (forfeits), what the provider got, the referee cost to the treasury, and the bond left. */
  bondLost: number;
  bondTo: Map<string, number>;
  refereeCost: number;
  bond: number;
}

/** Checks of one job's bill (its transfers, oldest first) against its attempts. Returns its money flows. */
export async function checkBill(run: Run, store: Store, job: JobRecord): Promise<Bill> {
  const m = run.jobs.get(job.id);
  assert.ok(m, `job ${job.id} is in the model`);
  const { asset } = m.payment;
  const escrow = ACCOUNTS.escrow(job.id);
  const wallet = ACCOUNTS.wallet(m.buyerId);
  const bondAccount = ACCOUNTS.bond(job.id);
  const transfers = await store.jobTransfers(job.id);
  const attempts = await store.listAttempts(job.id);
  const what = `job ${job.id} (${job.state})`;
  // Where a check run's forfeited pay goes: whoever paid for the run (the treasury, or the buyer for a replica).
  const payee = m.buyerId === SYSTEM_AUDIT ? ACCOUNTS.treasury : ACCOUNTS.wallet((run.jobs.get(m.rootId) ?? m).buyerId);
  let held = 0;
  let charged = 0;
  let released = 0;
  let fees = 0;
  const income = new Map<string, number>(); // provider → paid
  const feesBy = new Map<string, number>();
  const feeBasis = new Map<string, bigint>();
  const perAttempt = new Map<string, { charged: number; fee: number }>();
  const leaseFees = new Map<string, number>();
  const forfeited = new Map<string, number>();
  const slashed = new Map<string, number>();
  const penaltyIn = new Map<string, number>();
  const bondTo = new Map<string, number>();
  let treasuryHeld = 0;
  let treasurySwept = 0;
  let bondIn = 0;
  let bondLost = 0;
  let refereeCost = 0;
  const attemptOf = (id: string | null, kind: string): AttemptRecord & { price: AttemptPriceRecord } => {
    const a = attempts.find((x) => x.id === id);
    assert.ok(a?.price, `${what}: ${kind} names a priced attempt of the job`);
    return { ...a, price: a.price };
  };
  for (const [i, t] of transfers.entries()) {
    assert.equal(new Set(t.postings.map((p) => `${p.account}|${p.asset}`)).size, t.postings.length, `${what}: one posting per account and asset in ${t.kind}`);
    // Only a penalty's slash moves the stake's asset (USDC) in a job of another asset: its legs are read below.
    const penalty = t.kind === 'slash' || t.kind === 'pay.forfeit';
    if (!penalty) for (const p of t.postings) assert.equal(p.asset, asset, `${what}: ${t.kind} in the job's asset`);
    const legs = new Map(t.postings.filter((p) => p.asset === asset).map((p) => [p.account, p.amount]));
    const out = -(legs.get(escrow) ?? 0);
    const only = (expected: [string, number][], why: string) => assert.deepEqual(legs, new Map(expected), `${what}: ${t.kind} ${t.id} ${why}`);
    switch (t.kind) {
      case 'escrow.hold':
        assert.equal(i, 0, `${what}: the hold comes first`);
        only(
          [
            [escrow, m.holdTotal],
            [m.funder, -m.holdTotal],
          ],
          `moves ${m.holdTotal} from ${m.funder}`,
        );
        held += m.holdTotal;
        if (m.funder === ACCOUNTS.treasury) treasuryHeld += m.holdTotal;
        break;
      case 'escrow.topup':
        assert.notEqual(m.buyerId, SYSTEM_AUDIT, `${what}: a check run's hold covers every try, so it is never topped up`);
        assert.ok(-out > 0 && legs.get(wallet) === out && legs.size === 2, `${what}: a top-up moves money from the buyer to the escrow`);
        held += -out;
        break;
      case 'escrow.release':
        if (out === 0 && m.buyerId === SYSTEM_AUDIT) {
          // The check run's unspent rest, swept from the system buyer's wallet back to the treasury.
          const x = legs.get(ACCOUNTS.treasury) ?? 0;
          only(
            [
              [wallet, -x],
              [ACCOUNTS.treasury, x],
            ],
            'sweeps the system wallet back to the treasury',
          );
          treasurySwept += x;
          break;
        }
        assert.ok(out > 0 && legs.get(wallet) === out && legs.size === 2, `${what}: a release moves money from the escrow to the buyer`);
        assert.ok(isTerminal(job.state), `${what}: only a finished job's escrow is released`);
        released += out;
        break;
      case 'settlement': {
        const a = attemptOf(t.attemptId, `settlement ${t.id}`);
        const fee = legs.get(ACCOUNTS.treasury) ?? 0;
        // Held pay (issue 11): the provider's share waits in pending:<attempt> until verification.
        const to: string = m.holdPay ? ACCOUNTS.pending(a.id) : ACCOUNTS.wallet(a.price.providerId);
        const provider: number = legs.get(to) ?? 0;
        const paysOut = out > 0 && fee >= 0 && provider >= 0 && fee + provider === out;
        assert.ok(paysOut, `${what}: settlement ${t.id} pays the escrow out to ${to} and the treasury`);
        assert.equal(legs.size, 1 + (fee > 0 ? 1 : 0) + (provider > 0 ? 1 : 0), `${what}: settlement ${t.id} has no other legs`);
        const s = perAttempt.get(a.id) ?? { charged: 0, fee: 0 };
        perAttempt.set(a.id, { charged: s.charged + out, fee: s.fee + fee });
        charged += out;
        fees += fee;
        run.add(income, a.price.providerId, provider);
        run.add(feesBy, a.price.providerId, fee);
        feeBasis.set(a.price.providerId, (feeBasis.get(a.price.providerId) ?? 0n) + BigInt(out) * BigInt(a.price.feeBps));
        break;
      }
      case 'pay.release': {
        assert.ok(m.holdPay, `${what}: only held pay is released`);
        const a = attemptOf(t.attemptId, `pay release ${t.id}`);
        const x = legs.get(ACCOUNTS.wallet(a.price.providerId)) ?? 0;
        only(
          [
            [ACCOUNTS.pending(a.id), -x],
            [ACCOUNTS.wallet(a.price.providerId), x],
          ],
          `moves ${a.id}'s held pay to its provider`,
        );
        assert.ok(x > 0, `${what}: a release moves something`);
        break;
      }
      case 'pay.forfeit':
      case 'slash': {
        // A wrong result confirmed (core penaltyPlan): the attempt's held pay to whoever paid for the run,
        // min(stake, 20 × its charge) from its node's stake to the reporter and that payer.
        assert.ok(m.holdPay, `${what}: only a verified job's attempt is penalized`);
        const a = attemptOf(t.attemptId, `${t.kind} ${t.id}`);
        assert.ok(run.lies.has(a.id), `${what}: ${t.kind} ${t.id} penalizes ${a.id} on ${a.nodeId}, whose result was right (an honest node penalized)`);
        const stakeLeg = t.postings.find((p) => p.account === ACCOUNTS.stake(a.nodeId));
        if (stakeLeg) assert.equal(stakeLeg.asset, 'usdc', `${what}: the stake is USDC`);
        const payLeg = legs.get(ACCOUNTS.pending(a.id)) ?? 0;
        assert.equal(t.kind === 'slash', (stakeLeg?.amount ?? 0) < 0, `${what}: a slash transfer takes stake, a forfeit none`);
        for (const p of t.postings) {
          if (p.account === ACCOUNTS.stake(a.nodeId) || p.account === ACCOUNTS.pending(a.id)) {
            assert.ok(p.amount < 0, `${what}: ${t.kind} only takes from ${p.account}`);
            continue;
          }
          const allowed = p.account === payee || p.account === ACCOUNTS.treasury || p.account === ACCOUNTS.wallet(m.buyerId);
          assert.ok(allowed && p.amount > 0, `${what}: ${t.kind} ${t.id} pays ${p.account}, which is neither the payer of the run nor the reporter`);
          run.add(penaltyIn, `${p.account}|${p.asset}`, p.amount);
        }
        run.add(forfeited, a.price.providerId, -payLeg);
        if (stakeLeg) run.add(slashed, a.nodeId, -stakeLeg.amount);
        run.count(`penalty on ${m.kind === 'buyer' ? 'an executor' : `a ${m.kind} run`}`);
        break;
      }
      case 'dispute.bond': {
        const x = legs.get(bondAccount) ?? 0;
        only(
          [
            [wallet, -x],
            [bondAccount, x],
          ],
          "moves the buyer's bond into bond:<job>",
        );
        bondIn += x;
        break;
      }
      case 'dispute.return': {
        const x = legs.get(wallet) ?? 0;
        only(
          [
            [bondAccount, -x],
            [wallet, x],
          ],
          'returns the bond to the buyer',
        );
        bondIn -= x;
        break;
      }
      case 'dispute.forfeit': {
        const bond = -(legs.get(bondAccount) ?? 0);
        const cost = legs.get(ACCOUNTS.treasury) ?? 0;
        const exec = attempts.find((a) => a.price && legs.has(ACCOUNTS.wallet(a.price.providerId)));
        assert.ok(exec?.price, `${what}: a false dispute's bond goes to the provider of one of the job's attempts`);
        const toProvider = legs.get(ACCOUNTS.wallet(exec.price.providerId)) ?? 0;
        assert.ok(bond > 0 && cost >= 0 && cost + toProvider === bond && legs.size === 2 + (cost > 0 ? 1 : 0), `${what}: the bond goes to the provider less the referee cost`);
        bondIn -= bond;
        bondLost += bond;
        refereeCost += cost;
        run.add(bondTo, exec.price.providerId, toProvider);
        break;
      }
      case 'penalty.fee': {
        // An abandoned lease: at most one hour of the lost attempt's price, its provider's wallet → the buyer.
        const a = attempts.find((x) => x.id === t.attemptId);
        assert.ok(a?.price && a.state === 'lost', `${what}: lease fee ${t.id} names a lost priced attempt of the job`);
        const fee = legs.get(wallet) ?? 0;
        assert.ok(fee > 0 && fee <= lostJobPrice(a.price), `${what}: lease fee ${fee} is at most one hour of ${a.id}'s price`);
        assert.deepEqual(
          legs,
          new Map([
            [wallet, fee],
            [ACCOUNTS.wallet(a.price.providerId), -fee],
          ]),
          `${what}: lease fee ${t.id} moves money from the provider to the buyer only`,
        );
        run.add(leaseFees, a.price.providerId, fee);
        run.count('lease fee');
        break;
      }
      default:
        assert.fail(`${what}: unexpected ${t.kind} transfer in a job's bill`);
    }
  }
  assert.equal(transfers[0]?.kind, 'escrow.hold', `${what}: its bill starts with the hold`);
  const balance = await store.getBalance(escrow, asset);
  assert.equal(balance, held - charged - released, `${what}: escrow = holds + top-ups − charges − releases`);
  assert.ok(charged <= held, `${what}: charged ${charged} ≤ held ${held}`);
  if (isTerminal(job.state)) assert.equal(balance, 0, `${what}: a finished job's escrow is empty`);
  assert.equal(await store.getBalance(bondAccount, asset), bondIn, `${what}: bond:<job> = bonds − returns − forfeits`);
  const pending = new Map<string, number>();
  for (const a of attempts) {
    if (a.price) run.add(pending, a.price.providerId, await store.getBalance(ACCOUNTS.pending(a.id), asset));
    const s = perAttempt.get(a.id) ?? { charged: 0, fee: 0 };
    assert.deepEqual({ charged: a.settlement.charged, fee: a.settlement.fee }, s, `${what}: attempt ${a.id}'s settlement totals match its transfers`);
    if (!a.price || a.startedAt === null) {
      assert.equal(s.charged, 0, `${what}: attempt ${a.id} never ran at a price, so it charged nothing`);
      continue;
    }
    const ran = (a.finishedAt ?? run.now) - a.startedAt;
    // The fee carries its remainder per provider (across attempts and jobs), so one attempt's fee is within
    // a unit per chunk of its own rate; the exact rule is checked per provider at the end (checks.ts).
    assert.ok(s.fee <= s.charged && s.fee >= 0, `${what}: attempt ${a.id}'s fee ${s.fee} is within what it charged ${s.charged}`);
    assert.ok(a.settlement.settledMs <= ran, `${what}: attempt ${a.id} settled ${a.settlement.settledMs} ms of ${ran}`);
    const stop = run.cancelStops.get(job.id);
    const billable = stop === undefined ? ran : Math.min(ran, Math.max(0, stop - a.startedAt));
    const most = chargeFor(a.price.pricePerUnitHour, a.price.units, billable, job.spec.timeoutSeconds);
    assert.ok(s.charged <= most, `${what}: attempt ${a.id} charged ${s.charged}, at most ${most} for ${billable} ms (ran ${ran}, cancel stop ${stop})`);
    if (stop !== undefined && a.startedAt < stop && ran > stop - a.startedAt) run.count('attempt billed only to its cancel stop');
  }
  return {
    charged,
    fees,
    income,
    feesBy,
    feeBasis,
    balance,
    leaseFees,
    pending,
    forfeited,
    slashed,
    penaltyIn,
    treasuryHeld,
    treasurySwept,
    bondLost,
    bondTo,
    refereeCost,
    bond: bondIn,
  };
}
