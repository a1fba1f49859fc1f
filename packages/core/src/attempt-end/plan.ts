/**
 * The attempt-end rules as one pure function: a snapshot (snapshot.ts) → a plan the store applies in the
 * same transaction. In order:
 *
 * 1. the attempt ends (ending.ts) and, unless it was lost, is settled for its runtime (settle.ts): a lost
 *    attempt is not settled further, its runtime since the last chunk is the provider's loss;
 * 2. if the job no longer follows this attempt (it ended, or another attempt is current) nothing else moves;
 * 3. a gang member that succeeds moves the job only when it is the last active member; any other end stops
 *    the still-active members (cancelled, settled for the time they ran: their stop is not their fault);
 * 4. `decide` chooses the job's next state; the job's money follows (money.ts: release, or top-up before a
 *    retry, which fails the job when the buyer's wallet is short);
 * 5. the node's track record, the runtime expectation and auto-cordon (node-outcome.ts), and its
 *    reputation event;
 * 6. an abandoned lease (lease-penalty.ts): the penalty record, the fee after 1 free loss in 7 days (from
 *    the provider's wallet as the plan's other transfers leave it), the suspension after 3.
 *
 * The store reads in two rounds: the basis, then what `attemptEndNeeds` asks for; `planAttemptEnd` throws
 * when the snapshot lacks something it needs (an invariant: the store read too little).
 */
import { type Asset, type JobState, TERMINAL_JOB_STATES } from '@gpux/protocol';
import { ACCOUNTS, type NewTransfer } from '../market/ledger.js';
import type { AttemptSettlementRecord } from '../market/records.js';
import type { AttemptEnd, JobRecord, JobTransition } from '../records.js';
import type { ReputationEventKind } from '../trust/reputation.js';
import { type AttemptEndRow, endingOf } from './ending.js';
import { type AttemptEndPenalty, isAbandonedLease, leasePenaltyNeeds, netOf, planLeasePenalty } from './lease-penalty.js';
import { jobMoneyNeedsWallet, planJobMoney } from './money.js';
import { type NodeOutcomePlan, nodeOutcomeKind, planNodeOutcome, reputationEventOf, teachesExpectation } from './node-outcome.js';
import { type PlannedEvent, planSettlement, type SettlementPiece, settlementNeedsCarry } from './settle.js';
import type { AttemptEndBasis, AttemptEndCause, AttemptEndNeeds, AttemptEndPolicy, AttemptEndSnapshot, AttemptFacts, CarryKey, FeeCarry, NodeFacts, RuntimeExpectation } from './snapshot.js';

const isTerminal = (s: JobState) => TERMINAL_JOB_STATES.includes(s);

/** A gang member stopped because another member ended: cancelled, with its final settlement. */
export interface SiblingStop {
  attemptId: string;
  error: string;
  settlement: AttemptSettlementRecord | null;
}

/** The job row as the plan writes it. */
export interface JobRowUpdate {
  state: JobState;
  runAfter: number | null;
  error: string | null;
  exitCode: number | null;
  avoidNodeIds: string[];
  currentAttemptId: string | null;
  updatedAt: number;
  finishedAt: number | null;
}

export interface JobMove {
  /** The transition applied: `decide`'s, or a failure when a retry could not be paid for. */
  transition: JobTransition;
  row: JobRowUpdate;
  /** The job as the plan leaves it. */
  job: JobRecord;
}

export interface AttemptEndPlan {
  /** What `decide` and the node's record were told. */
  end: AttemptEnd;
  /** The ending attempt's row update, with its settled totals (null: unchanged). */
  attempt: AttemptEndRow & { id: string; settlement: AttemptSettlementRecord | null };
  /** Gang siblings to stop, by id. */
  siblings: SiblingStop[];
  /** Ledger transfers in posting order: settlements (the attempt's, then its siblings'), then the job's top-up or release. */
  transfers: NewTransfer[];
  /** The final fee carry of each (provider, asset) a settlement moved. */
  carries: FeeCarry[];
  /** null: the job does not move. */
  job: JobMove | null;
  node: NodeOutcomePlan | null;
  /** The runtime expectation to write; null: none. */
  expectation: RuntimeExpectation | null;
  /** An abandoned lease's penalty (lease-penalty.ts), applied after `transfers`; at most one. */
  penalties: AttemptEndPenalty[];
  /** The node's reputation event: completed (it ran the job to an end), lease-lost (an abandoned lease), or none. */
  reputation: ReputationEventKind | null;
  /** The job's events in order (a cordon's node event travels with `node`, a penalty's with its penalty). */
  events: PlannedEvent[];
}

/** Does the job still follow this attempt (not finished, and it, or its gang's leader, is current)? */
export function drivesJob(job: Pick<JobRecord, 'state' | 'currentAttemptId'>, a: Pick<AttemptFacts, 'id' | 'gangLeader'>): boolean {
  return !isTerminal(job.state) && job.currentAttemptId === (a.gangLeader ?? a.id);
}

const carryKey = (k: CarryKey) => `${k.providerId}\u0000${k.asset}`;

/** The money side, shared by the needs round (lookups may be missing) and the plan. */
function compose(s: AttemptEndBasis & Partial<Pick<AttemptEndSnapshot, 'carries' | 'wallet'>>, policy: AttemptEndPolicy) {
  const { job, attempt: a, now } = s;
  const ending = endingOf(a, s.cause, now, job.spec.timeoutSeconds);
  const missing = { carries: new Map<string, CarryKey>(), wallet: null as Asset | null };
  const carries = new Map<string, FeeCarry>((s.carries ?? []).map((c) => [carryKey(c), c]));
  const moved = new Map<string, FeeCarry>();
  const escrow = { ...s.escrow };
  const transfers: NewTransfer[] = [];
  const settle = (x: AttemptFacts): SettlementPiece => {
    const asset = x.price?.asset;
    const input = { attempt: x, timeoutSeconds: job.spec.timeoutSeconds, holdPay: job.holdPay === true, now, escrowLeft: asset ? (escrow[asset] ?? 0) : 0 };
    const key = settlementNeedsCarry(input);
    let carry: number | undefined;
    if (key) {
      carry = carries.get(carryKey(key))?.carry;
      if (carry === undefined) missing.carries.set(carryKey(key), key);
    }
    const piece = planSettlement({ ...input, carry: carry ?? 0 });
    if (asset && piece.step.charge > 0) escrow[asset] = (escrow[asset] ?? 0) - piece.step.charge;
    if (piece.transfer) transfers.push(piece.transfer);
    if (piece.carry) {
      carries.set(carryKey(piece.carry), piece.carry);
      moved.set(carryKey(piece.carry), piece.carry);
    }
    return piece;
  };

  const own = ending.end.outcome === 'lost' ? null : settle(a);
  const events: PlannedEvent[] = [ending.event, ...(own?.event ? [own.event] : [])];
  const siblings: SiblingStop[] = [];
  let move: JobMove | null = null;
  const current = a.gangLeader ?? a.id;
  const stays = !drivesJob(job, a) || (a.gangLeader !== null && ending.end.outcome === 'succeeded' && s.siblings.length > 0);
  if (!stays) {
    if (a.gangLeader !== null && ending.end.outcome !== 'succeeded' && s.siblings.length > 0) {
      const stopped = [...s.siblings].sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
      const error = `gang member ${a.id} ended (${ending.end.outcome}); the gang stops`;
      events.push({ at: now, subject: 'job', subjectId: job.id, type: 'gang.stopped', data: { cause: a.id, attemptIds: stopped.map((x) => x.id) } });
      for (const x of stopped) {
        const piece = settle(x);
        siblings.push({ attemptId: x.id, error, settlement: piece.settlement });
        if (piece.event) events.push(piece.event);
      }
    }
    let t = policy.decide(job, ending.end, now);
    if (t.state !== 'queued' && !isTerminal(t.state)) throw new Error(`invariant: decide() returned ${t.state}; after an attempt a job is queued or finished`);
    let moneyEvents: PlannedEvent[] = [];
    if (job.payment) {
      const m = { job: { ...job, payment: job.payment }, transition: t, escrowLeft: escrow[job.payment.asset] ?? 0, now };
      if (jobMoneyNeedsWallet(m) && s.wallet === undefined) missing.wallet = job.payment.asset;
      else {
        const money = planJobMoney({ ...m, ...(s.wallet !== undefined ? { wallet: s.wallet } : {}) });
        t = money.transition;
        transfers.push(...money.transfers);
        moneyEvents = money.events;
      }
    }
    const terminal = isTerminal(t.state);
    const avoid = t.avoidNode && !job.avoidNodeIds.includes(a.nodeId) ? [...job.avoidNodeIds, a.nodeId] : job.avoidNodeIds;
    const row: JobRowUpdate = {
      state: t.state,
      runAfter: terminal ? null : t.runAfter,
      error: t.error,
      exitCode: t.exitCode,
      avoidNodeIds: avoid,
      currentAttemptId: terminal ? current : null,
      updatedAt: now,
      finishedAt: terminal ? now : null,
    };
    move = { transition: t, row, job: { ...job, ...row } };
    const data: Record<string, unknown> = { attemptId: a.id, nodeId: a.nodeId, error: t.error, exitCode: t.exitCode };
    if (t.state === 'queued') data.runAfter = t.runAfter;
    if (t.avoidNode) data.avoidNode = a.nodeId;
    events.push({ at: now, subject: 'job', subjectId: job.id, type: t.state === 'queued' ? 'job.requeued' : `job.${t.state}`, data }, ...moneyEvents);
  }
  return { ending, own, siblings, move, transfers, carries: [...moved.values()], events, missing };
}

const byKey = (x: CarryKey, y: CarryKey) => (carryKey(x) < carryKey(y) ? -1 : carryKey(x) > carryKey(y) ? 1 : 0);

/** A refused assignment (issue 19) is no failure of the node's: it did the right thing with an order it could not verify. */
const countsForNode = (cause: AttemptEndCause): boolean => cause.kind !== 'refused';

/** What the store must read after the basis. */
export function attemptEndNeeds(s: AttemptEndBasis, policy: AttemptEndPolicy): AttemptEndNeeds {
  const c = compose(s, policy);
  const nodeEnd = { ...c.ending.end, durationMs: c.ending.durationMs };
  const lease = isAbandonedLease(s.cause, c.ending.end.outcome, s.node) ? leasePenaltyNeeds(s.attempt) : { leaseLosses: false, providerWallet: null };
  return {
    carries: [...c.missing.carries.values()].sort(byKey),
    wallet: c.missing.wallet,
    nodeStats: countsForNode(s.cause) && nodeOutcomeKind(nodeEnd) !== null,
    expectation: teachesExpectation(nodeEnd),
    ...lease,
  };
}

export function planAttemptEnd(s: AttemptEndSnapshot, policy: AttemptEndPolicy): AttemptEndPlan {
  const c = compose(s, policy);
  if (c.missing.carries.size > 0 || c.missing.wallet !== null) {
    const what = [...[...c.missing.carries.values()].map((k) => `the fee carry of ${k.providerId} in ${k.asset}`), ...(c.missing.wallet ? ["the buyer's wallet"] : [])];
    throw new Error(`invariant: the end of attempt ${s.attempt.id} needs ${what.join(' and ')}; read attemptEndNeeds first`);
  }
  const nodeEnd = { ...c.ending.end, durationMs: c.ending.durationMs };
  const read = { ...(s.nodeStats ? { stats: s.nodeStats } : {}), ...(s.expectation !== undefined ? { expectation: s.expectation } : {}) };
  const node = countsForNode(s.cause) ? planNodeOutcome(s.attempt.nodeId, nodeEnd, read, s.now, policy.nodeStats) : { node: null, expectation: null };
  const abandoned = isAbandonedLease(s.cause, c.ending.end.outcome, s.node);
  const penalties = abandoned ? [leasePenaltyOf(s, c.transfers)] : [];
  return {
    end: c.ending.end,
    attempt: { id: s.attempt.id, ...c.ending.row, settlement: c.own?.settlement ?? null },
    siblings: c.siblings,
    transfers: c.transfers,
    carries: c.carries,
    job: c.move,
    node: node.node,
    expectation: node.expectation,
    penalties,
    reputation: reputationEventOf(nodeEnd, abandoned),
    events: c.events,
  };
}

function leasePenaltyOf(s: AttemptEndSnapshot, transfers: readonly NewTransfer[]): AttemptEndPenalty {
  const a = s.attempt;
  const { providerWallet } = leasePenaltyNeeds(a);
  if (s.leaseLosses === undefined || (providerWallet && s.providerWallet === undefined)) {
    throw new Error(`invariant: the abandoned lease of attempt ${a.id} needs the node's earlier losses and its provider's wallet; read attemptEndNeeds first`);
  }
  // The fee comes after the plan's transfers: a provider that is also the buyer has paid its top-up first.
  const wallet = providerWallet ? (s.providerWallet as number) + netOf(transfers, ACCOUNTS.wallet(providerWallet.providerId), providerWallet.asset) : undefined;
  return planLeasePenalty({ job: s.job, attempt: a, node: s.node as NodeFacts, earlierLosses: s.leaseLosses, walletBalance: wallet, now: s.now });
}
