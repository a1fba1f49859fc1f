/**
 * Checker runs (spec.verify, issue 11): a job that cannot be bit-exact is compared by the buyer's checker.
 * A checker run is a check job of kind 'checker' of the checked job: the buyer's verify image and command,
 * no GPU, no network, a short timeout, with the two runs' stored outputs as its inline inputs (the first
 * run's under a/, the second's under b/), placed with none of the step's operators, its escrow held from the
 * treasury like an audit's. Its name records the pair it compares (`checker:<a>:<b>`, each 'executor' or a
 * check run's job id), read back by verification-rows.ts. The pure rules are core's (trust/checker*.ts).
 */
import { createHash } from 'node:crypto';
import { CHECKER_SIDES, EXECUTOR, holdFor, type JobPaymentRecord, type JobRecord, maxCapFor, type OutputSetFacts } from '@gpux/core';
import { DEFAULT_CHECKER_TIMEOUT_S, JobSpec } from '@gpux/protocol';
import type { Kysely } from 'kysely';
import type { StoreContext } from './context.js';
import type { NewEvent } from './events.js';
import type { Database } from './schema.js';
import { CHECK_MAX_RETRIES, checkRunHold, insertCheckJobIn, treasuryCanFund } from './verification-jobs.js';

/** A run's outputs as the checker would receive them. */
export interface StoredOutputs {
  files: Array<{ path: string; content: string }>;
  facts: OutputSetFacts;
}

const PREFIX = 'checker:';

/** The checker run's name for a pair, and the pair back from a name (null: not a checker's name). */
export const checkerName = (pair: readonly [string, string]): string => `${PREFIX}${pair[0]}:${pair[1]}`;
export function pairOfName(name: string): [string, string] | null {
  if (!name.startsWith(PREFIX)) return null;
  const [a, b, ...rest] = name.slice(PREFIX.length).split(':');
  return a && b && rest.length === 0 ? [a, b] : null;
}

/**
 * The outputs of these attempts with their content. A set is null when any file was stored without its
 * content (too large to return inline) or with content that is not the bytes it committed to (sha256 and
 * size): the checker must compare what the node committed to, or nothing.
 */
export async function outputSetsIn(trx: Kysely<Database>, attemptIds: readonly string[]): Promise<Map<string, StoredOutputs | null>> {
  const ids = [...new Set(attemptIds)];
  const out = new Map<string, StoredOutputs | null>(ids.map((id) => [id, { files: [], facts: { files: 0, chars: 0, longestPath: 0 } }]));
  if (ids.length === 0) return out;
  const rows = await trx.selectFrom('outputs').selectAll().where('attempt_id', 'in', ids).orderBy('attempt_id').orderBy('path').execute();
  for (const r of rows) {
    const set = out.get(r.attempt_id);
    if (!set) continue;
    const bytes = r.content === null ? null : Buffer.from(r.content, 'base64');
    if (!bytes || bytes.length !== Number(r.size) || createHash('sha256').update(bytes).digest('hex') !== r.sha256) {
      out.set(r.attempt_id, null);
      continue;
    }
    // Re-encoded: the stored text may carry base64 the decoder tolerated (whitespace, padding).
    const content = bytes.toString('base64');
    set.files.push({ path: r.path, content });
    set.facts = { files: set.facts.files + 1, chars: set.facts.chars + content.length, longestPath: Math.max(set.facts.longestPath, r.path.length) };
  }
  return out;
}

/** The checker run's spec for a pair, or null when the two sets do not make a valid spec (too large). */
export function checkerSpec(job: JobRecord, pair: readonly [string, string], a: StoredOutputs, b: StoredOutputs): JobSpec | null {
  const verify = job.spec.verify;
  if (!verify) return null;
  const side = (prefix: string, s: StoredOutputs) => s.files.map((f) => ({ path: `${prefix}${f.path}`, content: f.content, encoding: 'base64' as const }));
  const parsed = JobSpec.safeParse({
    name: checkerName(pair),
    image: verify.image,
    command: verify.command,
    resources: { gpu: { count: 0 } },
    inputs: [...side(CHECKER_SIDES[0], a), ...side(CHECKER_SIDES[1], b)],
    timeoutSeconds: verify.timeoutSeconds ?? DEFAULT_CHECKER_TIMEOUT_S,
    maxRetries: CHECK_MAX_RETRIES,
    ...(job.spec.asset ? { asset: job.spec.asset } : {}),
  });
  return parsed.success ? parsed.data : null;
}

/**
 * What a checker run may cost: the checked job's cap, per job-hour (it needs no GPU), lowered when needed so
 * its hold stays within the largest amount; null without a market.
 */
export function checkerPayment(job: Pick<JobRecord, 'payment'>, spec: JobSpec): JobPaymentRecord | null {
  const p = job.payment;
  if (!p) return null;
  const cap = Math.min(p.capPerUnitHour, maxCapFor(spec));
  return { asset: p.asset, capPerUnitHour: cap, units: 1, held: holdFor(spec, cap) };
}

export type CheckerQueueing = { events: NewEvent[] } | { not: 'unfunded' | 'uncheckable' };

/**
 * Queue one checker run per pair, all or none: 'uncheckable' when a pair's outputs cannot make its inputs,
 * 'unfunded' when the treasury cannot hold them all. `attemptOf` maps a side ('executor' or a check run's
 * job id) to the attempt carrying its result; `avoid`: the operators of the step's parties.
 */
export async function queueCheckersIn(
  trx: Kysely<Database>,
  ctx: StoreContext,
  q: { job: JobRecord; pairs: ReadonlyArray<readonly [string, string]>; attemptOf: (side: string) => string | null; sets: ReadonlyMap<string, StoredOutputs | null>; avoid: string[]; now: number },
): Promise<CheckerQueueing> {
  const runs: Array<{ spec: JobSpec; payment: JobPaymentRecord | null }> = [];
  for (const pair of q.pairs) {
    const [a, b] = pair.map((side) => q.sets.get(q.attemptOf(side) ?? ''));
    const spec = a && b ? checkerSpec(q.job, pair, a, b) : null;
    if (!spec) return { not: 'uncheckable' };
    runs.push({ spec, payment: checkerPayment(q.job, spec) });
  }
  const first = runs[0];
  if (!first) return { events: [] };
  // Every checker run has the same retries, so their holds together are one hold of the summed per-try amount.
  const perTry = runs.reduce((n, r) => n + (r.payment?.held ?? 0), 0);
  const all = first.payment ? { spec: first.spec, payment: { ...first.payment, held: perTry } } : first;
  if (checkRunHold(all) > 0 && !(await treasuryCanFund(trx, ctx, all))) return { not: 'unfunded' };
  const events: NewEvent[] = [];
  for (const run of runs) events.push(...(await insertCheckJobIn(trx, ctx, { of: q.job, kind: 'checker', avoidProviderIds: q.avoid, now: q.now, run })).events);
  return { events };
}

/** The attempt carrying each side's result: the step's executor attempt, or a check run's current attempt. */
export function attemptOfSide(executorAttemptId: string, checks: ReadonlyArray<{ jobId: string; attemptId: string | null }>): (side: string) => string | null {
  return (side) => (side === EXECUTOR ? executorAttemptId : (checks.find((c) => c.jobId === side)?.attemptId ?? null));
}
