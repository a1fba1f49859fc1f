/**
 * The orders an agent acts on, as the coordinator sealed them (issue 19): the exact fields its seal covers. Built
 * from what arrived, so a field changed on the way (the command, the GPUs, the gang) changes a digest and the
 * seal no longer verifies.
 */
import { assignmentOrder, type ChallengeAssignment, canonicalDigest, type Order } from '@gpux/protocol';

export { assignmentOrder };

export function cancelOrder(attemptId: string, nodeId: string): Order {
  return { kind: 'cancel', attemptId, nodeId };
}

export function challengeOrder(c: ChallengeAssignment, nodeId: string): Order {
  const { seal: _, ...unsealed } = c;
  return { kind: 'challenge', challengeId: c.id, nodeId, challengeDigest: canonicalDigest(unsealed) };
}
