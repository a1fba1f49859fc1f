/**
 * The canary catalog and the issuing pass (issue 11, TRUST.md layer 6).
 * - canaryCatalogIn: inside the transaction that marks a buyer's job audited-passed (two independent
 *   operators agreed on its output digest and exit code), keep its spec as a known answer, when the spec can
 *   be one (its buyer set canaryReuse, deterministic, no network, one node, paid). One entry per spec digest; the same spec verified with
 *   another answer is not reproducible and leaves the catalog.
 * - issueCanaries: one transaction draws (the coordinator's CSPRNG, core canaryDecision) for each buyer job
 *   whose verification opened since the cursor, and for each hit queues a canary: the entry's exact spec and
 *   payment terms, under a fresh buyer-looking account, avoiding the operators that produced the answer and
 *   those that already ran it, its escrow held from the treasury like an audit's. Also trims the catalog and
 *   closes canary runs that ended outside an attempt end (queue timeout).
 */
import { createHash } from 'node:crypto';
import { type CanaryIssueQuery, type CanaryPassResult, type CanaryStats, canaryDecision, type JobPaymentRecord, type JobRecord, newId, } from '@gpux/core';
import { type JobSpec, TERMINAL_JOB_STATES } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import { cryptoRandom } from '../random.js';
import { judgeCanaryIn } from './canaries.js';
import { inTx, type StoreContext } from './context.js';
import { insertEvents, type NewEvent } from './events.js';
import { newJobRow } from './rows.js';
import type { Database } from './schema.js';
import { checkRunHold, holdFromTreasuryIn, treasuryCanFund } from './verification-jobs.js';
import type { CheckRun, VerificationRow } from './verification-rows.js';

/** Canaries one catalog entry may be issued as: each use shows the spec to one more operator (and the buyer's data with it). */
export const CANARY_MAX_USES = 8;
/** The pass draws only for steps opened at least this long ago, so a transaction committing late is not skipped. */
export const CANARY_DRAW_LAG_MS = 2000;

/**
 * A spec that can be a known answer: its buyer allowed the reuse (a canary shows the spec, env and inputs to
 * more operators), and re-running it must reproduce the output bit for bit, on any one node.
 */
export function canaryFit(spec: JobSpec): boolean {
  return spec.canaryReuse === true && spec.deterministic !== false && spec.network !== true && (spec.nodes ?? 1) === 1;
}

const specDigest = (spec: JobSpec): string => createHash('sha256').update(JSON.stringify(spec)).digest('hex');
const num = (v: number | null): number | null => (v === null ? null : Number(v));

/** Called (one line) where the verification step is written passed with the label audited-passed. */
export async function canaryCatalogIn(trx: Kysely<Database>, _ctx: StoreContext, job: JobRecord, v: VerificationRow, checks: readonly CheckRun[], now: number): Promise<void> {
  if ((job.kind ?? 'buyer') !== 'buyer' || !job.payment || !canaryFit(job.spec)) return;
  const digest = specDigest(job.spec);
  const same = await trx.selectFrom('canary_specs').select(['id', 'output_digest', 'exit_code']).where('spec_digest', '=', digest).executeTakeFirst();
  if (same) {
    // Verified twice with different answers: not reproducible, so never a known answer.
    if (same.output_digest !== v.output_digest || num(same.exit_code) !== num(v.exit_code)) await trx.deleteFrom('canary_specs').where('id', '=', same.id).execute();
    return;
  }
  const agreed = checks.filter((c) => c.outcome.status === 'result' && c.outputDigest === v.output_digest && c.exitCode === num(v.exit_code));
  const operators = [...new Set([v.provider_id, ...checks.map((c) => c.providerId)].filter((p): p is string => p !== null))].sort();
  if (agreed.length === 0 || !v.provider_id) return;
  await trx
    .insertInto('canary_specs')
    .values({
      id: newId('cny', now, cryptoRandom),
      spec_digest: digest,
      source_job_id: job.id,
      spec: JSON.stringify(job.spec),
      payment: JSON.stringify(job.payment),
      output_digest: v.output_digest,
      exit_code: num(v.exit_code),
      operators: JSON.stringify(operators),
      uses: 0,
      created_at: now,
    })
    .execute();
}

/** One issuing pass in one transaction (CanaryPort.issueCanaries). */
export async function issueCanaries(ctx: StoreContext, q: CanaryIssueQuery): Promise<CanaryPassResult> {
  const out = await inTx(ctx, async (trx) => {
    const cursor = await trx
      .selectFrom('canary_cursor')
      .selectAll()
      .where('id', '=', 1)
      .$if(ctx.q.forUpdate, (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!cursor) {
      // First pass: draw for what ends from now on, never for the whole history at once.
      await trx.insertInto('canary_cursor').values({ id: 1, after_at: q.now - CANARY_DRAW_LAG_MS, after_job_id: '' }).onConflict((oc) => oc.column('id').doNothing()).execute();
      return { drawn: 0, issued: [] as string[] };
    }
    const after = Number(cursor.after_at);
    const due = await trx
      .selectFrom('verifications')
      .select(['job_id', 'created_at'])
      .where((eb) => eb.or([eb('created_at', '>', after), eb.and([eb('created_at', '=', after), eb('job_id', '>', cursor.after_job_id)])]))
      .where('created_at', '<=', q.now - CANARY_DRAW_LAG_MS)
      .orderBy('created_at')
      .orderBy('job_id')
      .limit(Math.max(1, Math.floor(q.limit)))
      .execute();
    const issued: string[] = [];
    const events: NewEvent[] = [];
    for (const row of due) {
      // One draw per buyer job, whatever the catalog holds: the rate is per job, not per opportunity.
      const d = canaryDecision(q.random, q.rate);
      if (!d.canary) continue;
      const one = await issueOneIn(trx, ctx, q, row.job_id, d.draw);
      if (one) {
        issued.push(one.id);
        events.push(...one.events);
      }
    }
    const last = due[due.length - 1];
    if (last) await trx.updateTable('canary_cursor').set({ after_at: Number(last.created_at), after_job_id: last.job_id }).where('id', '=', 1).execute();
    await trimCatalogIn(trx, q.catalogSize);
    await insertEvents(trx, ctx, events);
    return { drawn: due.length, issued };
  });
  return { ...out, reconciled: await reconcileCanaries(ctx, q.now, q.limit) };
}

async function issueOneIn(trx: Kysely<Database>, ctx: StoreContext, q: CanaryIssueQuery, drawnFor: string, draw: number): Promise<{ id: string; events: NewEvent[] } | null> {
  const ids = await trx
    .selectFrom('canary_specs')
    .select('id')
    .where('uses', '<', CANARY_MAX_USES)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(Math.max(1, q.catalogSize))
    .execute();
  if (ids.length === 0) return null;
  const pick = ids[Math.min(ids.length - 1, Math.floor(q.random.next() * ids.length))]?.id as string;
  const entry = await trx.selectFrom('canary_specs').selectAll().where('id', '=', pick).executeTakeFirstOrThrow();
  const spec = JSON.parse(entry.spec) as JobSpec;
  const payment = JSON.parse(entry.payment) as JobPaymentRecord;
  if (!(await treasuryCanFund(trx, ctx, { spec, payment }))) return null;
  const known: string[] = JSON.parse(entry.operators);
  const earlier = await trx.selectFrom('canary_runs').select('provider_id').where('spec_id', '=', entry.id).where('provider_id', 'is not', null).execute();
  const avoid = [...new Set([...known, ...earlier.map((r) => r.provider_id as string)])].sort();
  const id = newId('job', q.now, q.random);
  // A buyer-looking account of its own: nothing a node can see ties canaries together (README "Canaries" says what still can).
  const buyerId = newId('acct', q.now, q.random);
  const hold = checkRunHold({ spec, payment });
  const row = newJobRow({
    id,
    buyerId,
    spec,
    idempotencyKey: null,
    now: q.now,
    payment,
    kind: 'canary',
    checkOf: entry.source_job_id,
    avoidProviderIds: avoid,
    holdPay: true,
  });
  await trx.insertInto('jobs').values(row).execute();
  await holdFromTreasuryIn(trx, id, payment.asset, hold, `canary ${id} (known answer of job ${entry.source_job_id})`, q.now);
  await trx.updateTable('canary_specs').set({ uses: Number(entry.uses) + 1 }).where('id', '=', entry.id).execute();
  await trx
    .insertInto('canary_runs')
    .values({
      job_id: id,
      spec_id: entry.id,
      source_job_id: entry.source_job_id,
      buyer_id: buyerId,
      drawn_for: drawnFor,
      draw,
      known_digest: entry.output_digest,
      known_exit_code: num(entry.exit_code),
      known_operators: entry.operators,
      state: 'running',
      attempt_id: null,
      node_id: null,
      provider_id: null,
      output_digest: null,
      exit_code: null,
      referees: 0,
      verdict: null,
      created_at: q.now,
      resolved_at: null,
    })
    .execute();
  return {
    id,
    events: [
      { at: q.now, subject: 'job', subjectId: id, type: 'job.submitted', data: { buyerId, name: spec.name, idempotencyKey: null } },
      { at: q.now, subject: 'job', subjectId: id, type: 'canary.issued', data: { specId: entry.id, sourceJobId: entry.source_job_id, drawnFor, draw, avoidProviderIds: avoid } },
    ],
  };
}

/** Keep the newest `size` entries. */
async function trimCatalogIn(trx: Kysely<Database>, size: number): Promise<void> {
  const old = await trx.selectFrom('canary_specs').select('id').orderBy('created_at', 'desc').orderBy('id', 'desc').limit(1000).offset(Math.max(1, size)).execute();
  if (old.length > 0) await trx.deleteFrom('canary_specs').where('id', 'in', old.map((r) => r.id)).execute();
}

/**
 * Canary runs whose job (or last referee) ended without an attempt end seeing it (a queue timeout): judged
 * now, each in its own transaction (nothing is decided without a result; the escrow goes back to the treasury).
 */
async function reconcileCanaries(ctx: StoreContext, now: number, limit: number): Promise<number> {
  const terminal = [...TERMINAL_JOB_STATES];
  const n = Math.max(1, Math.floor(limit));
  const ended = await ctx.db
    .selectFrom('canary_runs as r')
    .innerJoin('jobs as j', 'j.id', 'r.job_id')
    .select('r.job_id')
    .where('r.state', '=', 'running')
    .where('j.state', 'in', terminal)
    .limit(n)
    .execute();
  const stalled = await ctx.db
    .selectFrom('canary_runs as r')
    .select('r.job_id')
    .where('r.state', '=', 'refereeing')
    .where(({ not, exists, selectFrom }) => not(exists(selectFrom('jobs as c').select('c.id').whereRef('c.check_of', '=', 'r.job_id').where('c.state', 'not in', terminal))))
    .limit(n)
    .execute();
  let moved = 0;
  for (const { job_id } of [...ended, ...stalled]) {
    const events = await inTx(ctx, async (trx) => {
      const ev = await judgeCanaryIn(trx, ctx, job_id, now);
      await insertEvents(trx, ctx, ev);
      return ev;
    });
    if (events.length > 0) moved++;
  }
  return moved;
}

export async function canaryStats(ctx: StoreContext): Promise<CanaryStats> {
  const rows = await ctx.db.selectFrom('canary_runs').select(['state', (eb) => eb.fn.countAll<number>().as('n')]).groupBy('state').execute();
  const by = (s: string) => Number(rows.find((r) => r.state === s)?.n ?? 0);
  const catalog = await ctx.db.selectFrom('canary_specs').select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirst();
  return {
    catalog: Number(catalog?.n ?? 0),
    issued: rows.reduce((s, r) => s + Number(r.n), 0),
    open: by('running') + by('refereeing'),
    passed: by('passed'),
    failed: by('failed'),
    dropped: by('dropped'),
    noResult: by('no-result'),
  };
}

export async function canaryBansSince(ctx: StoreContext, since: number): Promise<Array<{ nodeId: string; at: number }>> {
  const rows = await ctx.db
    .selectFrom('canary_runs')
    .select(['node_id', 'resolved_at'])
    .where('state', '=', 'failed')
    .where('resolved_at', '>=', since)
    .orderBy('resolved_at')
    .limit(1000)
    .execute();
  return rows.filter((r) => r.node_id !== null).map((r) => ({ nodeId: r.node_id as string, at: Number(r.resolved_at) }));
}
