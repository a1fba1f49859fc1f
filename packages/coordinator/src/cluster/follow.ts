/**
 * How a replica's caches follow the store (issue 14). Every change to a node, an ask, the prices or an attempt's
 * end is applied here from a fresh store read: on the replica that made it (after its commit), and on the others
 * when the bus tells them. A full resync (on election, after a bus gap, and every indexResyncMs) catches whatever a
 * lost message missed.
 */
import { CapacityIndex, isPeerNodeId } from '@gpux/core';
import { loadBook, rebuildIndex, reservationOf } from '../loops/capacity.js';
import type { Needs, } from '../runtime.js';
import { applyNodeAsks } from '../services/market.js';
import type { ClusterMessage } from './messages.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type FollowDeps = Needs<'book' | 'bus' | 'config' | 'delivery' | 'index' | 'logger' | 'logs' | 'nodeKeys' | 'offlineNodes' | 'predictions' | 'scheduling' | 'store' | 'work'>;

/** Re-read the node into this replica's index, and tell the other replicas to do the same. */
export async function nodeChanged(rt: FollowDeps, nodeId: string): Promise<void> {
  await applyNode(rt, nodeId);
  rt.bus.publish({ t: 'node', node: nodeId });
}

/** The node's record, stake and asks, as the store has them now, into the index. */
export async function applyNode(rt: FollowDeps, nodeId: string): Promise<void> {
  const node = await rt.store.getNode(nodeId);
  if (!node) return;
  rt.index.upsertNode(node);
  applyNodeAsks(rt, node.id, node.providerId, node.advertisement.gpus);
  rt.index.setStake(nodeId, (await rt.store.getStake(nodeId)).staked);
  if (node.removedAt !== null && node.removedAt !== undefined) {
    // Refused from its next request on this replica too; never brought back by a heartbeat.
    rt.nodeKeys.markRemoved(nodeId, node.removedAt);
    rt.index.setSchedulable(nodeId, false);
    rt.offlineNodes.delete(nodeId);
  } else if (node.status === 'offline') rt.offlineNodes.add(nodeId);
  else rt.offlineNodes.delete(nodeId);
}

/**
 * Off the leader: the node's reservations as the store has them (the leader placed them; this replica's views of
 * the node's room follow). Never on the leader, whose placements are reserved before they commit.
 */
export async function syncReservations(rt: FollowDeps, nodeId: string): Promise<void> {
  // A forwarded attempt's pseudo node peer:<id> (issue 15) holds nothing here (a cancel wakes it like any node).
  if (isPeerNodeId(nodeId)) return;
  const active = await rt.store.listActiveAttempts(nodeId);
  const live = new Set(active.map((a) => a.id));
  for (const id of rt.index.reservedOn(nodeId)) if (!live.has(id)) rt.index.release(id);
  for (const a of active) {
    if (rt.index.hasReservation(a.id)) continue;
    rt.index.reserve(reservationOf(a, await rt.store.getJob(a.jobId)));
  }
}

/** The price book from the store, and every node re-priced. */
export async function reloadBook(rt: FollowDeps): Promise<void> {
  await loadBook(rt);
  for (const n of rt.index.allNodes()) applyNodeAsks(rt, n.nodeId, n.providerId, n.gpus);
}

/**
 * A fresh index from the store, swapped in whole. The leader runs it between scheduling passes (a pass's
 * placements are reserved before they commit: a rebuild in the middle would drop them). Round trips carry over.
 */
export async function resyncIndex(rt: FollowDeps): Promise<void> {
  const old = rt.index;
  const fresh = new CapacityIndex();
  fresh.requireProof = old.requireProof;
  const view: FollowDeps = Object.create(rt, { index: { value: fresh }, offlineNodes: { value: new Set<string>() } });
  await rebuildIndex(view);
  for (const n of old.allNodes()) if (n.rttMs !== undefined) fresh.noteRtt(n.nodeId, n.rttMs);
  rt.index = fresh;
  rt.offlineNodes = view.offlineNodes;
}

/**
 * What this replica does with another's message. Only the leader passes a kick on to its scheduling: a follower's
 * kick() would publish it again, and two followers would bounce it between them forever.
 */
export async function onClusterMessage(rt: FollowDeps, m: ClusterMessage, leads: boolean): Promise<void> {
  const kick = () => {
    if (leads) rt.scheduling.kick();
  };
  switch (m.t) {
    case 'work':
      rt.work.wakeLocal(m.node);
      if (!leads) await syncReservations(rt, m.node);
      return;
    case 'logs':
      rt.logs.wakeLocal(m.job);
      return;
    case 'kick':
      kick();
      return;
    case 'node':
      await applyNode(rt, m.node);
      kick();
      return;
    case 'ended':
      rt.index.release(m.attempt);
      rt.predictions?.attemptEnded(m.attempt);
      rt.delivery.forget(m.attempt);
      rt.logs.wakeLocal(m.job);
      kick();
      return;
    case 'asks':
    case 'prices':
      await reloadBook(rt);
      kick();
      return;
  }
}
