/** Operator views of nodes and their admin state (cordon, uncordon, drain). */
import { GpuxError } from '@gpux/core';
import type { ListNodesResponse, NodeAdminState, NodeStatus, NodeView } from '@gpux/protocol';
import type { Runtime } from '../runtime.js';
import { nodeView } from '../views.js';

export async function listNodes(rt: Runtime, q: { status?: NodeStatus; limit: number; cursor?: string }): Promise<ListNodesResponse> {
  const page = await rt.store.listNodes({ limit: q.limit, ...(q.status ? { status: q.status } : {}), ...(q.cursor ? { cursor: q.cursor } : {}) });
  return { nodes: page.items.map((n) => nodeView(n, rt.index)), nextCursor: page.nextCursor };
}

export async function getNode(rt: Runtime, id: string): Promise<NodeView> {
  const node = await rt.store.getNode(id);
  if (!node) throw new GpuxError('NODE_NOT_FOUND', `no node ${id}`);
  return nodeView(node, rt.index);
}

export async function setAdminState(rt: Runtime, id: string, state: NodeAdminState): Promise<NodeView> {
  if (!(await rt.store.getNode(id))) throw new GpuxError('NODE_NOT_FOUND', `no node ${id}`);
  const node = await rt.store.setNodeAdminState(id, state, rt.clock.now());
  rt.index.upsertNode(node); // schedulable again only if online and active
  rt.logger.info({ nodeId: id, adminState: state }, 'node admin state set');
  if (state === 'active') rt.scheduling.kick();
  return nodeView(node, rt.index);
}
