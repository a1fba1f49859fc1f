/**
 * The orders an agent acts on, as the coordinator sealed them (issue 19): the exact fields its seal covers. Built
 * from what arrived, so a field changed on the way (the command, the GPUs, the gang) changes a digest and the
 * seal no longer verifies.
 */
import { type Assignment, type ChallengeAssignment, canonicalDigest, type Order, specDigest } from '@gpux/protocol';

export function assignmentOrder(a: Assignment, nodeId: string): Order {
  return {
    kind: 'assignment',
    attemptId: a.attemptId,
    jobId: a.jobId,
    nodeId,
    specDigest: specDigest(a.spec),
    gpuIndices: a.gpuIndices,
    leaseExpiresAt: a.leaseExpiresAt,
    gangDigest: a.gang ? canonicalDigest(a.gang) : null,
  };
}

export function cancelOrder(attemptId: string, nodeId: string): Order {
  return { kind: 'cancel', attemptId, nodeId };
}

export function challengeOrder(c: ChallengeAssignment, nodeId: string): Order {
  const { seal: _, ...unsealed } = c;
  return { kind: 'challenge', challengeId: c.id, nodeId, challengeDigest: canonicalDigest(unsealed) };
}
