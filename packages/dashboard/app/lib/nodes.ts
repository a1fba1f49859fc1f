/** Node facts shared by the nodes table and the node page, and loading every node page by page. */
import type { ListNodesResponse, NodeView } from '@gpux/protocol';
import { api } from './api.js';

/** online, offline, cordoned or draining: the one word an operator wants. */
export function nodeState(n: NodeView): string {
  if (n.status === 'offline') return 'offline';
  return n.adminState === 'active' ? 'online' : n.adminState;
}

/** GPU classes on the node, e.g. "8 × Tesla T4". */
export function gpuSummary(n: NodeView): string {
  if (n.advertisement.gpus.length === 0) return 'CPU only';
  const counts = new Map<string, number>();
  for (const g of n.advertisement.gpus) counts.set(g.model, (counts.get(g.model) ?? 0) + 1);
  return [...counts].map(([m, c]) => `${c} × ${m}`).join(', ');
}

export const MAX_NODE_PAGES = 5;

/** Every node, up to MAX_NODE_PAGES pages of 1000; `more` tells that some were left out. */
export async function loadAllNodes(signal: AbortSignal): Promise<{ nodes: NodeView[]; more: boolean }> {
  const nodes: NodeView[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < MAX_NODE_PAGES; i++) {
    const page: ListNodesResponse = await api<ListNodesResponse>(`/v1/nodes?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, { signal });
    nodes.push(...page.nodes);
    cursor = page.nextCursor;
    if (!cursor) return { nodes, more: false };
  }
  return { nodes, more: true };
}
