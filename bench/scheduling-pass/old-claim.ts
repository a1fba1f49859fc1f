/**
 * The fair claim as it was before issue 10 item 7, kept as the benchmark's baseline: the same pairs and
 * windows, but every claimed row read whole (`select *`, spec and inline inputs included) and its spec
 * JSON-parsed, on every pass.
 */
import type { JobRecord } from '@gpux/core';
import type { Kysely } from 'kysely';
import type { Database } from '../../packages/coordinator/src/store/index.js';
import { jobFromRow } from '../../packages/coordinator/src/store/rows.js';

interface Pair {
  buyerId: string;
  priority: number;
}

async function nextPair(db: Kysely<Database>, after: Pair): Promise<Pair | undefined> {
  const same = await db
    .selectFrom('jobs')
    .select(['buyer_id', 'priority'])
    .where('state', '=', 'queued')
    .where('buyer_id', '=', after.buyerId)
    .where('priority', '>', after.priority)
    .orderBy('priority')
    .limit(1)
    .executeTakeFirst();
  const row =
    same ??
    (await db
      .selectFrom('jobs')
      .select(['buyer_id', 'priority'])
      .where('state', '=', 'queued')
      .where('buyer_id', '>', after.buyerId)
      .orderBy('buyer_id')
      .orderBy('priority')
      .limit(1)
      .executeTakeFirst());
  return row ? { buyerId: row.buyer_id, priority: Number(row.priority) } : undefined;
}

async function pairs(db: Kysely<Database>, limit: number, fromBuyer: string): Promise<Pair[]> {
  const out: Pair[] = [];
  let cursor: Pair = { buyerId: fromBuyer, priority: -1 };
  while (out.length < limit) {
    const p = await nextPair(db, cursor);
    if (!p) break;
    out.push(p);
    cursor = p;
  }
  if (fromBuyer === '') return out;
  cursor = { buyerId: '', priority: -1 };
  while (out.length < limit) {
    const p = await nextPair(db, cursor);
    if (!p || p.buyerId >= fromBuyer) break;
    out.push(p);
    cursor = p;
  }
  return out;
}

function duePairJobs(db: Kysely<Database>, p: Pair, now: number, limit: number, after?: JobRecord) {
  return db
    .selectFrom('jobs')
    .selectAll()
    .where('state', '=', 'queued')
    .where('buyer_id', '=', p.buyerId)
    .where('priority', '=', p.priority)
    .$if(after !== undefined, (qb) =>
      qb.where((eb) => eb.or([eb('created_at', '>', (after as JobRecord).createdAt), eb.and([eb('created_at', '=', (after as JobRecord).createdAt), eb('id', '>', (after as JobRecord).id)])])),
    )
    .where((eb) => eb.or([eb('run_after', 'is', null), eb('run_after', '<=', now)]))
    .where('cancel_requested', '=', 0)
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** claimQueuedFair before the change: select * and JSON.parse of each spec. */
export async function oldClaimQueuedFair(db: Kysely<Database>, now: number, limit: number, fromBuyer = ''): Promise<JobRecord[]> {
  const n = Math.max(0, Math.floor(limit));
  if (n === 0) return [];
  const found = await pairs(db, n, fromBuyer);
  if (found.length === 0) return [];
  const per = Math.ceil(n / found.length);
  const out: JobRecord[] = [];
  const full: Array<{ pair: Pair; last: JobRecord }> = [];
  for (const p of found) {
    const rows = await duePairJobs(db, p, now, per);
    for (const r of rows) out.push(jobFromRow(r));
    const last = out.at(-1);
    if (rows.length === per && last) full.push({ pair: p, last });
  }
  const left = n - out.length;
  if (left > 0 && full.length > 0) {
    const more = Math.ceil(left / full.length);
    for (const f of full) for (const r of await duePairJobs(db, f.pair, now, more, f.last)) out.push(jobFromRow(r));
  }
  return out;
}
