/** Operator views of nodes, their admin state (cordon, uncordon, drain) and trust tier (curated by an operator). */
import { GpuxError, type NodeRecord, tierChangeRefusal } from '@gpux/core';
import type { ListNodesResponse, NodeAdminState, NodeStatus, NodeTier, NodeView } from '@gpux/protocol';
import type { Needs } from '../runtime.js';
import { nodeView, reputationView } from '../views.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type NodesDeps = Needs<'clock' | 'index' | 'logger' | 'signals' | 'store'>;

/** The node's view with its reputation valued now. */
async function viewOf(rt: NodesDeps, node: NodeRecord): Promise<NodeView> {
  return nodeView(node, rt.index, reputationView(await rt.store.getReputation(node.id), rt.clock.now()));
}

export async function listNodes(rt: NodesDeps, q: { status?: NodeStatus; limit: number; cursor?: string }): Promise<ListNodesResponse> {
  const page = await rt.store.listNodes({ limit: q.limit, ...(q.status ? { status: q.status } : {}), ...(q.cursor ? { cursor: q.cursor } : {}) });
  // One query for the page's reputations.
  const reps = new Map((await rt.store.getReputations(page.items.map((n) => n.id))).map((r) => [r.nodeId, r]));
  const now = rt.clock.now();
  return { nodes: page.items.map((n) => nodeView(n, rt.index, reputationView(reps.get(n.id), now))), nextCursor: page.nextCursor };
}

export async function getNode(rt: NodesDeps, id: string): Promise<NodeView> {
  const node = await rt.store.getNode(id);
  if (!node) throw new GpuxError('NODE_NOT_FOUND', `no node ${id}`);
  return viewOf(rt, node);
}

export async function setAdminState(rt: NodesDeps, id: string, state: NodeAdminState): Promise<NodeView> {
  if (!(await rt.store.getNode(id))) throw new GpuxError('NODE_NOT_FOUND', `no node ${id}`);
  const node = await rt.store.setNodeAdminState(id, state, rt.clock.now());
  await rt.signals.nodeChanged(id); // schedulable again only if online and active
  rt.logger.info({ nodeId: id, adminState: state }, 'node admin state set');
  if (state === 'active') rt.signals.kick();
  return viewOf(rt, node);
}

/**
 * An operator vouches for a node (curated) or takes it back (open). attested is refused: only hardware TEE
 * evidence checked by an attestation verifier makes a node attested (TRUST.md "Tiers").
 */
export async function setTier(rt: NodesDeps, id: string, tier: NodeTier, operatorId: string): Promise<NodeView> {
  const refusal = tierChangeRefusal(tier, 'operator');
  if (refusal) throw new GpuxError('REQUEST_INVALID', refusal, { problems: [{ path: 'tier', message: 'attested cannot be set by hand' }] });
  if (!(await rt.store.getNode(id))) throw new GpuxError('NODE_NOT_FOUND', `no node ${id}`);
  const node = await rt.store.setNodeTier(id, tier, rt.clock.now(), { source: 'operator', reason: `set by ${operatorId}` });
  await rt.signals.nodeChanged(id); // the scheduler's tier filter reads it from the index
  rt.logger.info({ nodeId: id, tier, by: operatorId }, 'node tier set');
  if (tier === 'curated') rt.signals.kick(); // jobs asking for curated may fit now
  return viewOf(rt, node);
}
