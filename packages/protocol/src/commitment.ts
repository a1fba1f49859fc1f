/**
 * Signed result commitments (TRUST.md layer 2): what a node binds itself to for one attempt, signed with
 * its ed25519 node key. The coordinator stores the commitment and its signature with the attempt, shows
 * them with the result, and treats two different valid commitments for one attempt as equivocation.
 *
 * Canonical encoding: the string "gpux-commitment-v1\n" followed by the JSON of the commitment with its
 * keys sorted (no whitespace), UTF-8. Every field is a string or an integer (exitCode may be null), so the
 * JSON is the same on every implementation.
 */
import { type KeyObject, sign, verify } from 'node:crypto';
import { z } from 'zod';
import type { AttemptMetrics } from './job.js';
import { outputRootDigest, privateKeyObject, publicKeyFromRaw, sha256Hex } from './signing.js';

const Digest = z.string().regex(/^[0-9a-f]{64}$/);

export const ResultCommitment = z
  .object({
    v: z.literal(1),
    jobId: z.string().min(1).max(128),
    attemptId: z.string().min(1).max(128),
    nodeId: z.string().min(1).max(128),
    inputDigest: Digest.describe('Root digest over the inputs as the node received them: sha256 of sorted "path\\0sha256\\n" lines (inline: of the decoded bytes; blob and URL inputs: their sha256)'),
    outputDigest: Digest.describe('Root digest over the outputs (same rule)'),
    exitCode: z.number().int().nullable(),
    metricsDigest: Digest.describe('sha256 of the canonical (sorted-key) JSON of the metrics'),
    ciphertextDigest: Digest.optional().describe(
      'Encrypted jobs only (issue 13): root digest over the outputs as stored, each by the sha256 of its ciphertext, so the node commits to the bytes the buyer downloads as well as to the plaintext (outputDigest)',
    ),
  })
  .strict();
export type ResultCommitment = z.infer<typeof ResultCommitment>;

/** An ed25519 signature, base64 of 64 bytes. */
export const CommitmentSignature = z.string().regex(/^[A-Za-z0-9+/]{86}==$/, 'base64 of a 64-byte ed25519 signature');

export const COMMITMENT_DOMAIN = 'gpux-commitment-v1\n';

/** JSON with object keys sorted at every level; undefined members dropped (as JSON.stringify does). */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v ?? null)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** The bytes that are signed. */
export function canonicalCommitment(c: ResultCommitment): Buffer {
  const fields: ResultCommitment = {
    v: 1,
    jobId: c.jobId,
    attemptId: c.attemptId,
    nodeId: c.nodeId,
    inputDigest: c.inputDigest,
    outputDigest: c.outputDigest,
    exitCode: c.exitCode,
    metricsDigest: c.metricsDigest,
    // Absent for plain jobs: canonicalJson drops it, so their bytes are what they always were.
    ciphertextDigest: c.ciphertextDigest,
  };
  return Buffer.from(COMMITMENT_DOMAIN + canonicalJson(fields), 'utf8');
}

/**
 * Root digest over all inputs by path (same rule as outputRootDigest): an inline input by the sha256 of its decoded
 * bytes, a blob input by its blob digest, a URL input by its expected sha256 (the node checks the bytes it got).
 */
export function inputRootDigest(
  inputs: ReadonlyArray<{ path: string; content: string; encoding?: 'utf8' | 'base64' | undefined } | { path: string; blob: string } | { path: string; sha256: string; url: string }>,
): string {
  return outputRootDigest(
    inputs.map((f) => ({
      path: f.path,
      sha256: 'content' in f ? sha256Hex(Buffer.from(f.content, f.encoding === 'base64' ? 'base64' : 'utf8')) : 'blob' in f ? f.blob : f.sha256,
    })),
  );
}

/** sha256 of the canonical metrics: only the known fields, so both ends digest the same object. */
export function metricsDigest(m: AttemptMetrics): string {
  return sha256Hex(canonicalJson({ durationMs: m.durationMs, logBytes: m.logBytes, logsTruncated: m.logsTruncated }));
}

export function signCommitment(c: ResultCommitment, privateKeyPem: string): string {
  return sign(null, canonicalCommitment(c), privateKeyObject(privateKeyPem)).toString('base64');
}

/**
 * True when the signature is the node key's over this commitment. Never throws. `publicKey`: the node's key,
 * base64 of its 32 raw bytes, or already made (a verifier's cache).
 */
export function verifyCommitment(c: ResultCommitment, signatureB64: string, publicKey: string | KeyObject): boolean {
  try {
    const sig = Buffer.from(signatureB64, 'base64');
    if (sig.length !== 64) return false;
    return verify(null, canonicalCommitment(c), typeof publicKey === 'string' ? publicKeyFromRaw(publicKey) : publicKey, sig);
  } catch {
    return false;
  }
}

/** The commitment a node makes for a report, given what it was assigned. */
export function buildCommitment(a: {
  jobId: string;
  attemptId: string;
  nodeId: string;
  /** All of the job's inputs (inline, blob and URL): see inputRootDigest. */
  inputs: Parameters<typeof inputRootDigest>[0];
  outputDigest: string;
  exitCode: number | null;
  metrics: AttemptMetrics;
  /** Encrypted jobs: outputRootDigest over the outputs' ciphertext digests. */
  ciphertextDigest?: string | undefined;
}): ResultCommitment {
  return {
    ...(a.ciphertextDigest === undefined ? {} : { ciphertextDigest: a.ciphertextDigest }),
    v: 1,
    jobId: a.jobId,
    attemptId: a.attemptId,
    nodeId: a.nodeId,
    inputDigest: inputRootDigest(a.inputs),
    outputDigest: a.outputDigest,
    exitCode: a.exitCode,
    metricsDigest: metricsDigest(a.metrics),
  };
}

/** One penalty of a node with its evidence (GET /v1/nodes/:id/penalties). */
export const PenaltyView = z.object({
  id: z.string().describe('The evidence id'),
  kind: z.literal('equivocation').describe('equivocation: two different signed commitments for one attempt'),
  at: z.number().int(),
  attemptId: z.string(),
  jobId: z.string(),
  slashed: z.number().int().min(0).describe('USDC minor units moved from the node stake to the treasury'),
  transferId: z.string().nullable().describe('The slash transfer in the ledger'),
  evidence: z.object({
    first: z.object({ commitment: ResultCommitment, signature: z.string() }),
    second: z.object({ commitment: ResultCommitment, signature: z.string() }),
  }),
});
export type PenaltyView = z.infer<typeof PenaltyView>;
export const NodePenaltiesResponse = z.object({
  nodeId: z.string(),
  publicKey: z.string().describe('The node key the evidence verifies against'),
  banned: z.boolean(),
  penalties: z.array(PenaltyView),
  /** Issue 11: penalties other than equivocation (a referee-confirmed wrong result, …), newest first. */
  otherPenalties: z
    .array(
      z.object({
        id: z.string(),
        kind: z.enum(['wrong-result', 'canary-failed', 'lease-abandoned', 'attestation-invalid', 'false-dispute']),
        at: z.number().int(),
        attemptId: z.string().nullable(),
        jobId: z.string().nullable(),
        slashed: z.number().int().min(0).describe('USDC minor units taken from the node stake'),
        fee: z.number().int().min(0),
        banned: z.boolean(),
        suspended: z.boolean(),
        transferId: z.string().nullable(),
        reason: z.string(),
        evidence: z.record(z.string(), z.unknown()).describe('wrong-result: the executor commitment and signature, every check run output digest and exit code, the output the referees agreed on'),
      }),
    )
    .optional(),
});
export type NodePenaltiesResponse = z.infer<typeof NodePenaltiesResponse>;
