/**
 * The check of one job's bill: its transfers (hold, top-ups, settlements, the release), oldest first,
 * against its payment and its attempts' prices, run times and settlement totals.
 */
import assert from 'node:assert/strict';
import { ACCOUNTS, chargeFor, type JobRecord, lostJobPrice, type Store } from '@gpux/core';
import type { Run } from './model.js';
import { isTerminal } from './world.js';

export interface Bill {
  /** Paid out of the escrow by settlements, and of that the treasury's fees. */
  charged: number;
  fees: number;
  /** Provider → what its wallet received. */
  income: Map<string, number>;
  /** Provider → the treasury fees its charges paid, and Σ charge × feeBps over them (the fee carry's basis). */
  feesBy: Map<string, number>;
  feeBasis: Map<string, bigint>;
  /** The escrow left. */
  balance: number;
  /** Abandoned-lease fees (penalty.fee): provider → what its wallet paid the job's buyer. */
  leaseFees: Map<string, number>;
}

/** Checks of one job's bill (its transfers, oldest first) against its attempts. Returns its money flows. */
export async function checkBill(run: Run, store: Store, job: JobRecord): Promise<Bill> {
  const m = run.jobs.get(job.id);
  assert.ok(m, `job ${job.id} is in the model`);
  const { asset } = m.payment;
  const escrow = ACCOUNTS.escrow(job.id);
  const wallet = ACCOUNTS.wallet(m.buyerId);
  const transfers = await store.jobTransfers(job.id);
  const attempts = await store.listAttempts(job.id);
  const what = `job ${job.id} (${job.state})`;
  let held = 0;
  let charged = 0;
  let released = 0;
  let fees = 0;
  const income = new Map<string, number>(); // provider → paid
  const feesBy = new Map<string, number>();
  const feeBasis = new Map<string, bigint>();
  const perAttempt = new Map<string, { charged: number; fee: number }>();
  const leaseFees = new Map<string, number>();
  for (const [i, t] of transfers.entries()) {
    const legs = new Map(t.postings.map((p) => [p.account, p.amount]));
    assert.equal(legs.size, t.postings.length, `${what}: one posting per account in ${t.kind}`);
    for (const p of t.postings) assert.equal(p.asset, asset, `${what}: ${t.kind} in the job's asset`);
    const out = -(legs.get(escrow) ?? 0);
    switch (t.kind) {
      case 'escrow.hold':
        assert.equal(i, 0, `${what}: the hold comes first`);
        assert.deepEqual(
          legs,
          new Map<string, number>([
            [escrow, m.payment.held],
            [wallet, -m.payment.held],
          ]),
          `${what}: the hold moves payment.held from the buyer`,
        );
        held += m.payment.held;
        break;
      case 'escrow.topup':
        assert.ok(-out > 0 && legs.get(wallet) === out && legs.size === 2, `${what}: a top-up moves money from the buyer to the escrow`);
        held += -out;
        break;
      case 'escrow.release':
        assert.ok(out > 0 && legs.get(wallet) === out && legs.size === 2, `${what}: a release moves money from the escrow to the buyer`);
        assert.ok(isTerminal(job.state), `${what}: only a finished job's escrow is released`);
        released += out;
        break;
      case 'settlement': {
        const a = attempts.find((x) => x.id === t.attemptId);
        assert.ok(a?.price, `${what}: settlement ${t.id} names a priced attempt of the job`);
        const fee = legs.get(ACCOUNTS.treasury) ?? 0;
        const provider = legs.get(ACCOUNTS.wallet(a.price.providerId)) ?? 0;
        const paysOut = out > 0 && fee >= 0 && provider >= 0 && fee + provider === out;
        assert.ok(paysOut, `${what}: settlement ${t.id} pays the escrow out to the provider and the treasury`);
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
  for (const a of attempts) {
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
  return { charged, fees, income, feesBy, feeBasis, balance, leaseFees };
}
