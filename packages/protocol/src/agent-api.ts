/** Bodies of the signed node-agent API (/v1/agent/...). */
import { z } from 'zod';
import { ChallengeAssignment } from './challenge.js';
import { BoundedEventData } from './bounded-data.js';
import { CommitmentSignature, ResultCommitment } from './commitment.js';
import { CheckpointRef } from './agent-blob-api.js';
import { Fingerprint, Seal, SealedCancel } from './coordinator-identity.js';
import { AttemptMetrics, LogEntry, OutputFile } from './job.js';
import { JobSpec } from './job-spec.js';
import { NodeAdvertisement } from './node.js';
import { NodeEncryptionKey, WrappedKey } from './e2e-api.js';

/** Most bytes of attestation evidence a registration may carry (base64 text): room for a GPU and a CPU TEE report with certificate chains. */
export const MAX_ATTESTATION_EVIDENCE_CHARS = 256 * 1024;

/**
 * Hardware TEE evidence (TRUST.md "attested"), checked by the coordinator's attestation verifier plug-in. With
 * no verifier configured (the default, and the only case this repository ships) it is dropped unread.
 */
export const AttestationEvidence = z
  .object({
    format: z.string().regex(/^[a-z0-9][a-z0-9.+_-]{0,63}$/, 'lower-case letters, digits, ".", "+", "_" or "-", at most 64').describe('Which verifier reads it, e.g. "nvidia-cc+sev-snp"'),
    evidence: z.string().min(1).max(MAX_ATTESTATION_EVIDENCE_CHARS).regex(/^[A-Za-z0-9+/=]*$/, 'base64').describe('The evidence, base64'),
  })
  .strict();
export type AttestationEvidence = z.infer<typeof AttestationEvidence>;

export const RegisterRequest = z.object({
  publicKey: z.string().describe('ed25519 public key, base64 of the 32 raw bytes'),
  advertisement: NodeAdvertisement,
  enrollmentToken: z
    .string()
    .min(1)
    .max(256)
    .optional()
    .describe("A node enrollment token (gpux_enroll_…) of the provider: binds the node to that account, which is paid for its work and owns its stake. Required; it can do nothing but register nodes"),
  attestation: AttestationEvidence.optional().describe('Hardware TEE evidence for the attested tier; without a configured verifier it is ignored and the node stays open'),
  encryptionKey: NodeEncryptionKey.optional().describe('Issue 13: the node\'s X25519 key, signed by its identity key; without one the node is not given encrypted jobs\' keys'),
});
export type RegisterRequest = z.input<typeof RegisterRequest>;
export const RegisterResponse = z.object({
  nodeId: z.string(),
  heartbeatIntervalMs: z.number().int(),
  leaseTtlMs: z.number().int(),
  serverTime: z.number().int(),
  coordinator: z
    .object({
      publicKey: z.string().describe("The coordinator's signing key now, base64 of 32 raw bytes"),
      fingerprint: Fingerprint,
      seal: Seal.describe('Over {kind: registration, nodeId, nodePublicKey, serverTime}: proves the answer comes from the key'),
    })
    .optional()
    .describe("The coordinator's identity (issue 19): the agent checks it against the key it pinned and refuses a coordinator it does not trust"),
});
export type RegisterResponse = z.infer<typeof RegisterResponse>;

export const HeartbeatRequest = z.object({
  activeAttemptIds: z.array(z.string()).max(1024).describe('Attempts the agent is currently holding'),
  rttMs: z.number().min(0).max(600_000).optional().describe("Round trip of the agent's previous heartbeat, measured by the agent (feeds the latency score)"),
});
export type HeartbeatRequest = z.infer<typeof HeartbeatRequest>;
export const HeartbeatResponse = z.object({
  cancel: z.array(SealedCancel).max(1024).describe('Attempts to stop now (job cancelled, or the lease was lost), each sealed by the coordinator'),
  challenge: ChallengeAssignment.optional().describe('A proof-of-hardware challenge to run now (issue 12); absent: none pending'),
  heartbeatIntervalMs: z.number().int(),
  serverTime: z.number().int(),
});
export type HeartbeatResponse = z.infer<typeof HeartbeatResponse>;

export const GangPeer = z.object({ rank: z.number().int().min(0), nodeId: z.string(), address: z.string().optional().describe("The peer node's hostname") });
export type GangPeer = z.infer<typeof GangPeer>;
export const GangAssignment = z.object({
  rank: z.number().int().min(0),
  worldSize: z.number().int().min(1),
  peers: z.array(GangPeer).describe('Every member, this one included, by rank'),
});
export type GangAssignment = z.infer<typeof GangAssignment>;

export const Assignment = z.object({
  attemptId: z.string(),
  jobId: z.string(),
  spec: JobSpec,
  gpuIndices: z.array(z.number().int()),
  leaseExpiresAt: z.number().int(),
  gang: GangAssignment.optional().describe('Set for members of a gang job (spec.nodes > 1); the agent passes GPUX_RANK, GPUX_WORLD_SIZE, GPUX_PEERS'),
  checkpoint: CheckpointRef.optional().describe('Issue 13: restore this checkpoint into /gpux/checkpoints before starting (GET /v1/agent/attempts/:id/checkpoint)'),
  seal: Seal.optional().describe('The coordinator signature over the attempt, job, node, spec digest, GPUs, lease and gang (issue 19); the agent refuses an assignment without a valid one'),
});
export type Assignment = z.infer<typeof Assignment>;

export const WorkQuery = z.object({ waitMs: z.coerce.number().int().min(0).max(60000).default(25000) });
export const WorkResponse = z.object({
  assignments: z.array(Assignment),
  cancel: z.array(SealedCancel).max(1024).optional().describe('Attempts of this node to stop now (their job was cancelled), each sealed; a cancel wakes the long-poll'),
});
export type WorkResponse = z.infer<typeof WorkResponse>;

export const StartAttemptResponse = z.object({
  ok: z.literal(true),
  cancel: z.boolean().describe('The job was cancelled meanwhile: stop it'),
  cancelSeal: Seal.optional().describe('With cancel: the sealed cancel order the agent verifies before stopping'),
});
export type StartAttemptResponse = z.infer<typeof StartAttemptResponse>;

/** Starts one work exchange carries at most: more wait for the next one. */
export const MAX_EXCHANGE_STARTS = 64;

export const WorkExchangeRequest = z.object({
  waitMs: z.number().int().min(0).max(60000).default(25000),
  started: z
    .array(z.string().min(1).max(128))
    .max(MAX_EXCHANGE_STARTS)
    .default([])
    .describe('Assignments the agent has verified and takes up: the coordinator starts them (as POST …/start would) before anything else, and then answers at once'),
});
export type WorkExchangeRequest = z.input<typeof WorkExchangeRequest>;

/** One carried start: started (cancel: the job was cancelled meanwhile), or refused (the attempt is not this node's to run). */
export const StartOutcome = z.discriminatedUnion('ok', [
  StartAttemptResponse.extend({ attemptId: z.string() }),
  z.object({
    attemptId: z.string(),
    ok: z.literal(false),
    error: z.object({ code: z.string(), message: z.string() }).describe('Why it did not start (ATTEMPT_NOT_FOUND, CONFLICT: ended, or another node\'s): drop it'),
  }),
]);
export type StartOutcome = z.infer<typeof StartOutcome>;

export const WorkExchangeResponse = WorkResponse.extend({
  started: z.array(StartOutcome).max(MAX_EXCHANGE_STARTS).describe('One outcome per distinct carried start'),
});
export type WorkExchangeResponse = z.infer<typeof WorkExchangeResponse>;

export const LogBatch = z.object({ entries: z.array(LogEntry).min(1).max(1000) });
export type LogBatch = z.infer<typeof LogBatch>;
export const LogBatchResponse = z.object({
  accepted: z.number().int(),
  cancel: z.boolean(),
  cancelSeal: Seal.optional().describe('With cancel: the sealed cancel order the agent verifies before stopping'),
  truncated: z.boolean().optional().describe("The attempt's log budget is spent: entries past it are dropped (the coordinator stored one marker); stop sending"),
});
export type LogBatchResponse = z.infer<typeof LogBatchResponse>;

/** Job events an attempt reports for the job's history (image pulls; best effort, not idempotent). */
export const AttemptEventType = z.enum(['image.pull.started', 'image.pull.progress', 'image.pull.finished', 'image.pull.failed']);
export type AttemptEventType = z.infer<typeof AttemptEventType>;
export const AttemptEvent = z.object({ type: AttemptEventType, at: z.number().int(), data: BoundedEventData.describe('At most 4 levels deep, 32 keys per object, 4 KiB of JSON') });
export type AttemptEvent = z.infer<typeof AttemptEvent>;
export const AttemptEventBatch = z.object({ events: z.array(AttemptEvent).min(1).max(100) });
export type AttemptEventBatch = z.infer<typeof AttemptEventBatch>;
export const AttemptEventBatchResponse = z.object({
  accepted: z.number().int(),
  truncated: z.boolean().optional().describe("The attempt's event budget is spent: later events are dropped; stop sending"),
});
export type AttemptEventBatchResponse = z.infer<typeof AttemptEventBatchResponse>;

/** The signed result commitment of one attempt. The whole request body is signed by the node key. */
export const ResultReport = z.object({
  outcome: z.enum(['succeeded', 'failed', 'cancelled']),
  exitCode: z.number().int().nullable(),
  error: z.string().max(4096).nullable().default(null).describe('e.g. "timed out after 60 s", "executor failed: …"'),
  outputDigest: z.string().regex(/^[0-9a-f]{64}$/).describe('sha256 over the sorted "path\\0sha256\\n" lines of all outputs'),
  outputs: z.array(OutputFile).max(1000),
  outputKey: WrappedKey.optional().describe('Encrypted jobs: the attempt\'s output key wrapped to spec.encryption.buyerKey (required there; must equal one announced at /output-key)'),
  metrics: AttemptMetrics,
  commitment: ResultCommitment.describe('What the node commits to for this attempt (commitment.ts); must match the route, this report and the job'),
  commitmentSignature: CommitmentSignature.describe("ed25519 signature of the node key over the commitment's canonical bytes"),
});
export type ResultReport = z.input<typeof ResultReport>;
export const ResultResponse = z.object({ accepted: z.boolean(), duplicate: z.boolean() });
export type ResultResponse = z.infer<typeof ResultResponse>;
