/** A node's penalties with their evidence (issue 11): shown to its provider and to operators. */
import { GpuxError, type PenaltyRecord } from '@gpux/core';
import type { NodePenaltiesResponse, PenaltyView } from '@gpux/protocol';
import type { Principal } from '../principal.js';
import type { Needs } from '../runtime.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type PenaltiesDeps = Needs<'store'>;

const PAGE = 1000;
type OtherPenalty = NonNullable<NodePenaltiesResponse['otherPenalties']>[number];

/** Equivocation evidence is stored with the commitments as canonical JSON strings; the view parses them. */
function equivocationView(p: PenaltyRecord): PenaltyView {
  const side = (x: unknown) => {
    const o = x as { commitment: string; signature: string };
    return { commitment: JSON.parse(o.commitment), signature: o.signature };
  };
  return {
    id: p.id,
    kind: 'equivocation',
    at: p.at,
    attemptId: p.attemptId ?? '',
    jobId: p.jobId ?? '',
    slashed: p.slashed,
    transferId: p.transferId,
    evidence: { first: side(p.evidence.first), second: side(p.evidence.second) },
  };
}

function otherView(p: PenaltyRecord): OtherPenalty {
  const { id, at, attemptId, jobId, slashed, fee, banned, suspended, transferId, reason, evidence } = p;
  return { id, kind: p.kind as OtherPenalty['kind'], at, attemptId, jobId, slashed, fee, banned, suspended, transferId, reason, evidence };
}

export async function nodePenalties(rt: PenaltiesDeps, p: Principal, nodeId: string): Promise<NodePenaltiesResponse> {
  const node = await rt.store.getNode(nodeId);
  // Someone else's node reads as missing, like someone else's stake.
  if (!node || (p.role !== 'operator' && node.providerId !== p.accountId)) throw new GpuxError('NODE_NOT_FOUND', `no node ${nodeId} of yours`);
  const all: PenaltyRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await rt.store.listPenalties(nodeId, { limit: PAGE, ...(cursor ? { cursor } : {}) });
    all.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor && all.length < 10 * PAGE);
  const penalties = all.filter((x) => x.kind === 'equivocation').map(equivocationView);
  const otherPenalties = all.filter((x) => x.kind !== 'equivocation').map(otherView);
  return { nodeId, publicKey: node.publicKey, banned: all.some((x) => x.banned), penalties, otherPenalties };
}
