/**
 * Test helper: a coordinator signing key and the seals a real coordinator puts on its orders (issue 19), made with
 * the protocol's sealOrder, so fake coordinators in tests hand the agent orders it accepts (or, altered, refuses).
 */
import { createPrivateKey, type KeyObject, sign } from 'node:crypto';
import {
  type Assignment,
  type ChallengeAssignment,
  type CoordinatorKey,
  endorsementBytes,
  generateNodeKeyPair,
  keyFingerprint,
  type RegisterResponse,
  type SealedCancel,
  SEAL_TTL_MS,
  sealOrder,
} from '@gpux/protocol';
import { assignmentOrder, cancelOrder, challengeOrder } from '../src/orders.js';

export interface TestCoordinatorKey {
  keyId: string;
  publicKey: string;
  privateKey: KeyObject;
}

export function coordinatorKey(): TestCoordinatorKey {
  const pair = generateNodeKeyPair();
  return { keyId: keyFingerprint(pair.publicKey), publicKey: pair.publicKey, privateKey: createPrivateKey(pair.privateKeyPem) };
}

/** The key the fake coordinators of the agent tests sign with unless told otherwise. */
export const testKey = coordinatorKey();

export function sealAssignment(a: Assignment, nodeId: string, key: TestCoordinatorKey = testKey): Assignment {
  const { seal: _, ...unsealed } = a;
  return { ...unsealed, seal: sealOrder(assignmentOrder(unsealed, nodeId), key, Date.now() + SEAL_TTL_MS.assignment) };
}

export function sealedCancel(attemptId: string, nodeId: string, key: TestCoordinatorKey = testKey): SealedCancel {
  return { attemptId, seal: sealOrder(cancelOrder(attemptId, nodeId), key, Date.now() + SEAL_TTL_MS.cancel) };
}

export function sealChallenge(c: ChallengeAssignment, nodeId: string, key: TestCoordinatorKey = testKey): ChallengeAssignment {
  const { seal: _, ...unsealed } = c;
  return { ...unsealed, seal: sealOrder(challengeOrder(unsealed, nodeId), key, unsealed.deadlineAt) };
}

/** A registration answer as the coordinator signs it for this node. */
export function registrationAnswer(node: { nodeId: string; publicKey: string }, key: TestCoordinatorKey = testKey, over: Partial<RegisterResponse> = {}): RegisterResponse {
  const serverTime = Date.now();
  const seal = sealOrder({ kind: 'registration', nodeId: node.nodeId, nodePublicKey: node.publicKey, serverTime }, key, serverTime + SEAL_TTL_MS.registration);
  return { nodeId: node.nodeId, heartbeatIntervalMs: 100, leaseTtlMs: 10_000, serverTime, coordinator: { publicKey: key.publicKey, fingerprint: key.keyId, seal }, ...over };
}

/** `next` as a link of the endorsement chain, signed by `by` (null: the first key of a chain). */
export function chainLink(next: TestCoordinatorKey, by: TestCoordinatorKey | null, activeFrom = Date.now()): CoordinatorKey {
  if (!by) return { publicKey: next.publicKey, fingerprint: next.keyId, activeFrom, endorsement: null };
  const signature = sign(null, endorsementBytes({ publicKey: next.publicKey, activeFrom }, by.keyId), by.privateKey).toString('base64');
  return { publicKey: next.publicKey, fingerprint: next.keyId, activeFrom, endorsement: { by: by.keyId, signature } };
}
