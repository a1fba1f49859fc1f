/**
 * Node registration: only with a provider's enrollment token (issue 10 item 2). The token binds the node
 * to its provider account; registrations are rate-limited per provider and counted against the provider's
 * and the enrollment's node limits; the advertisement is checked for consistency (known models' memory, a
 * GPU uuid that another provider's node holds). Then the node enters the capacity index with its asks.
 */
import { GpuxError } from '@gpux/core';
import { type NodeAdvertisement, type NodeEncryptionKey, type RegisterResponse, SEAL_TTL_MS } from '@gpux/protocol';
import type { Needs } from '../runtime.js';
import { ENROLLMENT_TOKEN_PREFIX, hashToken, TOKEN_PREFIX } from '../tokens.js';
import { adProblems } from './advertisement-check.js';
import { afterRegister } from './challenges.js';
import { checkNodeEncryptionKey, storeNodeEncryptionKey } from './e2e-keys.js';
import { RegisterRate } from './register-rate.js';

/** What this module uses of the coordinator's runtime (wired in runtime.ts). */
type RegisterDeps = Needs<'book' | 'bus' | 'clock' | 'config' | 'decider' | 'delivery' | 'index' | 'logger' | 'logs' | 'metrics' | 'nodeKeys' | 'offlineNodes' | 'random' | 'signals' | 'signer' | 'store' | 'work'>;

const HOW = 'create one with `gpux enrollment create` (or POST /v1/enrollments) and start the agent with --enrollment-token';

/** One limiter per runtime (a coordinator process), created on first use. */
const rates = new WeakMap<object, RegisterRate>();
function rateOf(rt: RegisterDeps): RegisterRate {
  let r = rates.get(rt);
  if (!r) {
    r = new RegisterRate(rt.config.registerRatePerMin);
    rates.set(rt, r);
  }
  return r;
}

export interface RegisterInput {
  nodeId: string;
  publicKey: string;
  advertisement: NodeAdvertisement;
  enrollmentToken?: string | undefined;
  /** Issue 13: the node's X25519 key, signed by its identity key. */
  encryptionKey?: NodeEncryptionKey | undefined;
  /** The body had the old `providerToken` field: the refusal says what replaced it. */
  legacyProviderToken?: boolean;
}

/** The enrollment a token names; every way it can fail is a 401 that says how to fix it. */
async function enrollmentOf(rt: RegisterDeps, input: RegisterInput) {
  const token = input.enrollmentToken;
  if (token === undefined) {
    if (input.legacyProviderToken) throw new GpuxError('UNAUTHORIZED', `providerToken is no longer accepted: nodes register with an enrollment token (gpux_enroll_…); ${HOW}`);
    throw new GpuxError('UNAUTHORIZED', `registration needs an enrollment token (enrollmentToken): ${HOW}`);
  }
  if (!token.startsWith(ENROLLMENT_TOKEN_PREFIX)) {
    const bearer = token.startsWith(TOKEN_PREFIX);
    throw new GpuxError(
      'UNAUTHORIZED',
      bearer ? `an account bearer token cannot register nodes (it could withdraw your money if a node leaked it): ${HOW}` : `enrollmentToken must be a gpux_enroll_… token: ${HOW}`,
    );
  }
  const e = await rt.store.findEnrollmentByHash(hashToken(token));
  if (!e) throw new GpuxError('UNAUTHORIZED', `unknown enrollment token: ${HOW}`);
  return e;
}

export async function register(rt: RegisterDeps, input: RegisterInput): Promise<RegisterResponse> {
  const { nodeId, publicKey, advertisement } = input;
  const now = rt.clock.now();
  const enrollment = await enrollmentOf(rt, input);
  // Every try with a real enrollment counts, refused ones too, so probing the checks is as slow as registering.
  const waitMs = rateOf(rt).take(enrollment.accountId, now);
  if (waitMs > 0) {
    throw new RegisterRateLimited(
      `provider ${enrollment.accountId} registered ${rt.config.registerRatePerMin} nodes in the last minute, the most allowed (GPUX_REGISTER_RATE_PER_MIN); retry in ${Math.ceil(waitMs / 1000)} s`,
      waitMs,
    );
  }
  checkNodeEncryptionKey(input.encryptionKey, publicKey);
  const problems = adProblems(advertisement);
  if (problems.length > 0) {
    throw new GpuxError('REQUEST_INVALID', `the advertisement is inconsistent: ${problems.map((p) => `${p.path}: ${p.message}`).join('; ')}`, { problems });
  }
  // The advertisement before, so a changed one is challenged again (issue 12).
  const before = await rt.store.getNode(nodeId);
  // Revocation, expiry, node limits and the GPU uuid check run inside the store's transaction.
  const node = await rt.store.registerNode({
    id: nodeId,
    publicKey,
    advertisement,
    now,
    providerId: enrollment.accountId,
    enrollment: { id: enrollment.id, maxProviderNodes: rt.config.maxNodesPerProvider },
  });
  await storeNodeEncryptionKey(rt, nodeId, input.encryptionKey);
  rt.nodeKeys.remember(nodeId, publicKey);
  await rt.signals.nodeChanged(node.id);
  // Proof of hardware: challenge it (provider-wide) unless proven for this advertisement; off: 'skipped'.
  // The node is registered either way: if this fails, the challenge loop issues it on its next pass.
  await afterRegister(rt, before, node).catch((err: unknown) => rt.logger.error({ err, nodeId }, 'issuing the proof-of-hardware challenge failed'));
  rt.logger.info({ nodeId, hostname: advertisement.hostname, gpus: advertisement.gpus.length, enrollmentId: enrollment.id }, 'node registered');
  rt.signals.kick();
  return { nodeId, heartbeatIntervalMs: rt.config.heartbeatIntervalMs, leaseTtlMs: rt.config.leaseTtlMs, serverTime: now, coordinator: identityFor(rt, nodeId, publicKey, now) };
}

/** The coordinator's key and its seal over this registration (issue 19): the agent checks it against the key it pinned. */
function identityFor(rt: RegisterDeps, nodeId: string, nodePublicKey: string, serverTime: number): NonNullable<RegisterResponse['coordinator']> {
  const seal = rt.signer.seal({ kind: 'registration', nodeId, nodePublicKey, serverTime }, serverTime + SEAL_TTL_MS.registration);
  return { publicKey: rt.signer.publicKeyOf(seal.keyId), fingerprint: seal.keyId, seal };
}

/** RATE_LIMITED with the wait, so the route can send Retry-After. */
export class RegisterRateLimited extends GpuxError {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super('RATE_LIMITED', message);
  }
}
