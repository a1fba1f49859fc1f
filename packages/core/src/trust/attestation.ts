/**
 * The attested tier's plug-in point (TRUST.md "Tiers"): a node may send hardware TEE evidence at
 * registration (NVIDIA confidential computing on H100/H200-class GPUs inside an SEV-SNP or TDX VM); an
 * AttestationVerifier checks it. Evidence formats and verifiers are plug-ins, and none ships: with no
 * verifier configured the evidence is dropped unread and no node is ever attested. An operator can never
 * set the tier by hand (only verified evidence makes a node attested).
 *
 * Pure: the verifier itself may do I/O (fetch a vendor's certificate chain), so it lives in an adapter;
 * what its answer does to the node's tier is decided here.
 */
import type { NodeRecord } from '../records.js';
import type { TrustTier } from '../scheduler/requirements.js';

/** What a node sends: a format name the verifier knows and the evidence itself (base64), both bounded by the protocol. */
export interface AttestationEvidence {
  format: string;
  evidence: string;
}

export interface AttestationResult {
  valid: boolean;
  /** Why it is invalid (or what was checked when valid), in words. */
  reason: string | null;
  /** After this instant the evidence is stale and must be sent again; null: the verifier gives no expiry. */
  expiresAt: number | null;
}

export interface AttestationVerifier {
  /** The evidence formats it checks; evidence of another format is not this verifier's to judge. */
  readonly formats: readonly string[];
  verify(evidence: AttestationEvidence, node: NodeRecord, now: number): Promise<AttestationResult>;
}

/** How a tier may be set: an operator vouches (curated) or takes it back (open); only a verifier attests. */
export type TierSource = 'operator' | 'attestation';

/**
 * Whether `source` may set `tier`; null when it may, else the reason (a REQUEST_INVALID message). An operator
 * sets curated or open; attested comes only from a verifier's valid answer.
 */
export function tierChangeRefusal(tier: TrustTier, source: TierSource): string | null {
  if (tier === 'attested' && source !== 'attestation') {
    return 'a node cannot be made attested by hand: only hardware TEE evidence checked by an attestation verifier makes a node attested (none is configured on this coordinator); use curated to vouch for an operator';
  }
  if (source === 'attestation' && tier === 'curated') return 'attestation evidence makes a node attested, never curated';
  return null;
}

/**
 * The tier after a registration: a verifier's valid answer makes an open or attested node attested; a
 * curated node stays curated (an operator's vouching ranks above it). Evidence that is invalid or stale,
 * or missing on a node that was attested, takes it back to open (TRUST.md: dispatch to the attested tier
 * stops, no slash). No evidence or no verifier: the tier is unchanged, except that attested lapses.
 */
export function tierAfterAttestation(current: TrustTier, result: AttestationResult | null, now: number): TrustTier {
  if (current === 'curated') return current;
  if (result?.valid && (result.expiresAt === null || result.expiresAt > now)) return 'attested';
  return 'open';
}
