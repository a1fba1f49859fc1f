/** A node's penalties with their evidence (issue 11): shown to its provider and to operators. */
import { type EquivocationRecord, GpuxError } from '@gpux/core';
import type { NodePenaltiesResponse, PenaltyView } from '@gpux/protocol';
import type { Principal } from '../http/bearer-auth.js';
import type { Runtime } from '../runtime.js';

function penaltyView(e: EquivocationRecord): PenaltyView {
  return {
    id: e.id,
    kind: 'equivocation',
    at: e.at,
    attemptId: e.attemptId,
    jobId: e.jobId,
    slashed: e.slashed,
    transferId: e.transferId,
    evidence: {
      first: { commitment: JSON.parse(e.first.commitment), signature: e.first.signature },
      second: { commitment: JSON.parse(e.second.commitment), signature: e.second.signature },
    },
  };
}

export async function nodePenalties(rt: Runtime, p: Principal, nodeId: string): Promise<NodePenaltiesResponse> {
  const node = await rt.store.getNode(nodeId);
  // Someone else's node reads as missing, like someone else's stake.
  if (!node || (p.role !== 'operator' && node.providerId !== p.accountId)) throw new GpuxError('NODE_NOT_FOUND', `no node ${nodeId} of yours`);
  const penalties = (await rt.store.listEquivocations(nodeId)).map(penaltyView);
  return { nodeId, publicKey: node.publicKey, banned: penalties.length > 0, penalties };
}
