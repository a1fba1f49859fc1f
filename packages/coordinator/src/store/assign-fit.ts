/**
 * The commit-time fit check of assign (issue 14): a placement whose GPUs an active attempt already holds on its
 * node is not written, whatever the scheduler's index believed. The index of one leader is right in the normal
 * run; this is what keeps a node from being oversubscribed when it is not (a replica that led a moment ago, a
 * change message lost). Two assigns never interleave: the leader's writes are fenced by its lease (a takeover
 * waits for the write in flight) and SQLite's write transaction is exclusive, so a read here is current at commit.
 * CPU and memory are not checked here: they are shared, soft limits the agent enforces per container.
 */
import type { Placement } from '@gpux/core';
import type { Kysely } from 'kysely';
import { chunks, type StoreContext } from './context.js';
import type { Database } from './schema.js';

export async function fitAtCommit(trx: Kysely<Database>, ctx: StoreContext, reps: readonly Placement[], members: ReadonlyMap<string, Placement[]>): Promise<Placement[]> {
  const all = (rep: Placement) => (rep.gang ? (members.get(rep.jobId) ?? []) : [rep]);
  const nodeIds = [...new Set(reps.flatMap((rep) => all(rep).filter((p) => p.gpuIndices.length > 0).map((p) => p.nodeId)))];
  if (nodeIds.length === 0) return [...reps];
  const busy = new Map<string, Set<number>>();
  for (const part of chunks(nodeIds, 1, ctx.q)) {
    const rows = await trx.selectFrom('attempts').select(['node_id', 'gpu_indices']).where('node_id', 'in', part).where('state', 'in', ['assigned', 'running']).execute();
    for (const r of rows) {
      const held = busy.get(r.node_id) ?? new Set<number>();
      for (const g of JSON.parse(r.gpu_indices) as number[]) held.add(g);
      busy.set(r.node_id, held);
    }
  }
  const out: Placement[] = [];
  for (const rep of reps) {
    const ps = all(rep);
    const taking = new Map<string, Set<number>>();
    const clash = ps.some((p) =>
      p.gpuIndices.some((g) => {
        const mine = taking.get(p.nodeId) ?? new Set<number>();
        taking.set(p.nodeId, mine);
        if (busy.get(p.nodeId)?.has(g) || mine.has(g)) return true;
        mine.add(g);
        return false;
      }),
    );
    if (clash) continue;
    for (const [nodeId, gs] of taking) {
      const held = busy.get(nodeId) ?? new Set<number>();
      for (const g of gs) held.add(g);
      busy.set(nodeId, held);
    }
    out.push(rep);
  }
  return out;
}
