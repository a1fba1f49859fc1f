/**
 * Group commit (issue 14): the job verbs a burst sends at once (submits, starts) share one durable write
 * transaction per kind instead of one each. A verb that arrives while its group is committing waits for the
 * next group; the first of an idle store runs after one turn of the event loop, so an idle system pays almost
 * nothing in latency and a busy one pays one disk flush, one wallet row lock and one connection per group
 * rather than per job.
 *
 * A verb that throws (INSUFFICIENT_FUNDS, CONFLICT) is rolled back alone and gets its own error; the others
 * commit. A group first runs without savepoints (two statements less per verb); when a verb throws, that
 * transaction is rolled back whole and the group runs again with a savepoint per verb, as do the next
 * CAREFUL_GROUPS groups of its kind (a buyer at its limit makes every group fail for a while). Every caller hears its answer only after the shared COMMIT
 * returned (durable before acknowledged); when the transaction itself fails (the commit, a lost fence, a
 * dropped connection), nothing of it is durable and every verb of the group gets that error. A group of one
 * is a plain transaction (no savepoint).
 *
 * Locks: a group holds the rows of all its verbs until it commits, so it may meet another transaction in an
 * order no single verb would (PostgreSQL). A verb chosen as a deadlock victim, or failing serialization, is
 * run again alone once its group committed. Results are grouped on SQLite only, where a write transaction
 * holds the whole database and there is no lock order to break. On PostgreSQL an attempt's end locks its
 * job, its attempt and then its node, and the expiry pass takes the same locks one job at a time: a group of
 * ends would hold one node's row while it waits for the next job, the reverse of that order.
 *
 * On SQLite the saving is mostly pages: an attempt's end writes about 50 database pages to the WAL (the
 * attempt, job, ledger, events and their indexes), and ends in one group share the hot ones (the buyer's
 * and the treasury's balance rows, the fee carry, each index's last page).
 */
import { type Kysely, sql } from 'kysely';
import { inTx, type StoreContext } from './context.js';
import type { Database } from './schema.js';

/** The most verbs one group commits: bounds how long one transaction holds its locks. */
export const GROUP_COMMIT_MAX = 64;

type Body = (trx: Kysely<Database>) => Promise<unknown>;

interface Waiting {
  fn: Body;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

interface Group {
  queue: Waiting[];
  running: boolean;
  /** Groups still to run with savepoints after a verb threw. */
  careful: number;
}

/** Groups of a kind that run with savepoints after one of its verbs threw. */
const CAREFUL_GROUPS = 16;

/** What a group commits: verbs of one kind only, so a group's locks stay those of one verb, repeated. */
export type GroupKind = 'submit' | 'start' | 'result';

/** Per store context and kind (a fenced view of the store has its own: its transactions check its lease). */
const groups = new WeakMap<StoreContext, Map<GroupKind, Group>>();

/** Run `fn` as inTx would, in the next group commit of this kind on this store. `fn` may await only the database. */
export function groupTx<T>(ctx: StoreContext, kind: GroupKind, fn: (trx: Kysely<Database>) => Promise<T>): Promise<T> {
  let byKind = groups.get(ctx);
  if (!byKind) {
    byKind = new Map();
    groups.set(ctx, byKind);
  }
  let group = byKind.get(kind);
  if (!group) {
    group = { queue: [], running: false, careful: 0 };
    byKind.set(kind, group);
  }
  const g = group;
  return new Promise<T>((resolve, reject) => {
    g.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
    if (!g.running) void drain(ctx, g);
  });
}

/** PostgreSQL's deadlock victim and serialization failure: the verb is sound, only this interleaving failed. */
function retryable(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === '40P01' || code === '40001';
}

async function drain(ctx: StoreContext, g: Group): Promise<void> {
  g.running = true;
  try {
    while (g.queue.length > 0) {
      // One turn of the event loop first: requests that arrived meanwhile join this group. SQLite's driver
      // is synchronous, so none is read while a transaction runs; without this turn every group is one verb.
      await new Promise<void>((resolve) => setImmediate(resolve));
      await runGroup(ctx, g, g.queue.splice(0, GROUP_COMMIT_MAX));
    }
  } finally {
    g.running = false;
  }
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** A verb threw in a group run without savepoints: the transaction is rolled back and the group runs again. */
class VerbThrew extends Error {}

async function runGroup(ctx: StoreContext, g: Group, batch: Waiting[]): Promise<void> {
  const only = batch.length === 1 ? batch[0] : undefined;
  if (only) {
    await inTx(ctx, only.fn).then(only.resolve, only.reject);
    return;
  }
  if (g.careful > 0) g.careful--;
  else if (await runWithoutSavepoints(ctx, batch)) return;
  else g.careful = CAREFUL_GROUPS;
  await runWithSavepoints(ctx, batch);
}

/** The group in one transaction, no savepoints. False (nothing committed, no one answered) when a verb threw. */
async function runWithoutSavepoints(ctx: StoreContext, batch: Waiting[]): Promise<boolean> {
  let values: unknown[];
  try {
    values = await inTx(ctx, async (trx) => {
      const out: unknown[] = [];
      for (const w of batch) {
        try {
          out.push(await w.fn(trx));
        } catch {
          throw new VerbThrew();
        }
      }
      return out;
    });
  } catch (err) {
    if (err instanceof VerbThrew) return false;
    for (const w of batch) w.reject(err);
    return true;
  }
  for (const [i, w] of batch.entries()) w.resolve(values[i]);
  return true;
}

async function runWithSavepoints(ctx: StoreContext, batch: Waiting[]): Promise<void> {
  const outcomes: Outcome[] = [];
  try {
    await inTx(ctx, async (trx) => {
      for (let i = 0; i < batch.length; i++) {
        const w = batch[i] as Waiting;
        await sql.raw(`savepoint gc${i}`).execute(trx);
        try {
          const value = await w.fn(trx);
          await sql.raw(`release savepoint gc${i}`).execute(trx);
          outcomes.push({ ok: true, value });
        } catch (error) {
          // Undo this verb only; if even that fails, the transaction is broken and the whole group fails.
          await sql.raw(`rollback to savepoint gc${i}`).execute(trx);
          outcomes.push({ ok: false, error });
        }
      }
    });
  } catch (err) {
    for (const w of batch) w.reject(err);
    return;
  }
  for (const [i, w] of batch.entries()) {
    const o = outcomes[i] as Outcome;
    if (o.ok) w.resolve(o.value);
    else if (retryable(o.error)) await inTx(ctx, w.fn).then(w.resolve, w.reject);
    else w.reject(o.error);
  }
}
