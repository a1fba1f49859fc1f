/** Mapping between database rows and domain records (JSON text, 0/1 booleans, null vs undefined). */
import { type AttemptPriceRecord, type AttemptRecord, type EventRecord, type JobCheckFields, type JobKind, type JobPaymentRecord, type JobRecord, jobPriority, type NewJob, type NodeProofRecord, type NodeRecord, PRIORITY_RANK, type Role, type TokenRecord } from '@gpux/core';
import { type Asset, type AttemptState, JobSpec, type JobState, type NodeAdminState, type NodeStatus, type OutputFile } from '@gpux/protocol';
import type { Selectable } from 'kysely';
import type { AttemptsTable, EventsTable, JobsTable, NodesTable, OutputsTable, TokensTable } from './schema.js';

export type JobRow = Selectable<JobsTable>;
export type AttemptRow = Selectable<AttemptsTable>;
export type NodeRow = Selectable<NodesTable>;

export function tokenFromRow(r: Selectable<TokensTable>): TokenRecord {
  const t: TokenRecord = { id: r.id, hash: r.hash, role: r.role as Role, accountId: r.account_id, name: r.name, createdAt: Number(r.created_at) };
  // Present only when set, like a node's adminReason.
  if (r.expires_at !== null && r.expires_at !== undefined) t.expiresAt = Number(r.expires_at);
  if (r.revoked_at !== null && r.revoked_at !== undefined) t.revokedAt = Number(r.revoked_at);
  return t;
}

const num = (v: number | null): number | null => (v === null ? null : Number(v));

export function jobFromRow(r: JobRow): JobRecord {
  const spec = JSON.parse(r.spec);
  // Since 0007 the payload lives in its own column, the row's last (older rows keep it inside spec).
  return jobRecordOf(r, inSpecOrder(r.spec_payload === null || r.spec_payload === undefined ? spec : { ...spec, ...JSON.parse(r.spec_payload) }));
}

function jobRecordOf(r: JobRow, spec: JobRecord['spec']): JobRecord {
  return {
    id: r.id,
    name: r.name,
    buyerId: r.buyer_id,
    state: r.state as JobState,
    spec,
    attemptCount: Number(r.attempt_count),
    currentAttemptId: r.current_attempt_id,
    runAfter: num(r.run_after),
    exitCode: num(r.exit_code),
    error: r.error,
    cancelRequested: Number(r.cancel_requested) === 1,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
    startedAt: num(r.started_at),
    finishedAt: num(r.finished_at),
    idempotencyKey: r.idempotency_key,
    avoidNodeIds: JSON.parse(r.avoid_node_ids),
    payment:
      r.pay_asset === null
        ? null
        : { asset: r.pay_asset as Asset, capPerUnitHour: Number(r.pay_cap), units: Number(r.pay_units), held: Number(r.pay_held) },
    ...checkFieldsOf(r),
  };
}

/** 0010: the check-run fields, present only when set (a buyer's job without held pay reads as before). */
function checkFieldsOf(r: JobRow): JobCheckFields {
  const out: JobCheckFields = {};
  if (r.kind && r.kind !== 'buyer') out.kind = r.kind as JobKind;
  if (r.check_of) out.checkOf = r.check_of;
  if (r.avoid_provider_ids && r.avoid_provider_ids !== '[]') out.avoidProviderIds = JSON.parse(r.avoid_provider_ids);
  if (Number(r.hold_pay ?? 0) === 1) out.holdPay = true;
  if (r.verify_window_ms !== null && r.verify_window_ms !== undefined && r.audit_floor_bps !== null && r.audit_floor_bps !== undefined) {
    out.verifyTerms = { disputeWindowMs: Number(r.verify_window_ms), auditFloorBps: Number(r.audit_floor_bps) };
  }
  return out;
}

/** 0010: a new job's check-run columns (a buyer's job: kind 'buyer', nothing avoided, pay not held). */
export function checkColumns(
  j: JobCheckFields,
): Pick<JobRow, 'kind' | 'check_of' | 'avoid_provider_ids' | 'hold_pay' | 'verify_window_ms' | 'audit_floor_bps'> {
  return {
    kind: j.kind ?? 'buyer',
    check_of: j.checkOf ?? null,
    avoid_provider_ids: JSON.stringify(j.avoidProviderIds ?? []),
    hold_pay: j.holdPay ? 1 : 0,
    verify_window_ms: j.verifyTerms?.disputeWindowMs ?? null,
    audit_floor_bps: j.verifyTerms?.auditFloorBps ?? null,
  };
}

/**
 * The spec fields the scheduling pass never reads, and most of a large spec (up to 64 KiB, and 1 MiB of
 * inline inputs): since migration 0007 they are stored apart, in jobs.spec_payload.
 */
const PAYLOAD_KEYS = ['command', 'args', 'env', 'labels', 'inputs', 'verify'] as const;
const SPEC_ORDER = Object.keys(JobSpec.shape);

/** The spec with its keys in the schema's order (the payload is merged back in from its own column). */
function inSpecOrder(spec: Record<string, unknown>): JobRecord['spec'] {
  const out: Record<string, unknown> = {};
  for (const k of SPEC_ORDER) if (k in spec) out[k] = spec[k];
  for (const k of Object.keys(spec)) if (!(k in out)) out[k] = spec[k];
  return out as JobRecord['spec'];
}

/**
 * A new job's spec columns: `spec`, the scheduling view (everything but the payload: a few hundred bytes
 * whatever the buyer sent), and spec_payload. The payload column is the row's last, so on SQLite reading any
 * other column never walks its overflow pages, and on PostgreSQL it is TOASTed apart and left unread.
 */
export function specColumns(spec: JobRecord['spec']): Pick<JobRow, 'spec' | 'spec_payload'> {
  const view: Record<string, unknown> = { ...spec };
  const payload: Record<string, unknown> = {};
  for (const k of PAYLOAD_KEYS) {
    payload[k] = view[k];
    delete view[k];
  }
  return { spec: JSON.stringify(view), spec_payload: JSON.stringify(payload) };
}

/** A claimed row: every jobs column but spec_payload. */
export type QueuedJobRow = Omit<JobRow, 'spec_payload'>;

/**
 * A claimed job: its spec is the scheduling view, with command, args, env, labels and inputs empty (specs
 * never change; getJob reads them). Parsing it costs the same whatever the buyer put in the payload.
 */
export function queuedJobFromRow(r: QueuedJobRow): JobRecord {
  return jobRecordOf({ ...r, spec_payload: null }, claimedSpec(r.id, r.spec));
}

/**
 * Scheduling views parsed by earlier passes, by job id. A job that waits (for GPUs no node has free) is claimed by
 * every pass, and a burst of submits kicks a pass each: parsing its spec again each time made a queue of 1,000
 * waiting jobs cost more than the submits themselves (bench/dispatch/stages-cpu.ts, issue 14). A spec never changes;
 * the text is compared all the same, so a reused id can never be handed another job's view. Shared, so read-only.
 */
const claimedSpecs = new Map<string, { text: string; spec: JobRecord['spec'] }>();
const CLAIMED_SPECS_KEPT = 4096;

function claimedSpec(id: string, text: string): JobRecord['spec'] {
  const hit = claimedSpecs.get(id);
  if (hit && hit.text === text) return hit.spec;
  const spec = Object.freeze(inSpecOrder({ ...JSON.parse(text), command: [], args: [], env: {}, labels: {}, inputs: [] })) as JobRecord['spec'];
  if (claimedSpecs.size >= CLAIMED_SPECS_KEPT) claimedSpecs.delete(claimedSpecs.keys().next().value as string);
  claimedSpecs.set(id, { text, spec });
  return spec;
}

/** The job row's payment columns (all null without a market). */
export function paymentColumns(p: JobPaymentRecord | undefined | null): Pick<JobRow, 'pay_asset' | 'pay_cap' | 'pay_units' | 'pay_held'> {
  return p ? { pay_asset: p.asset, pay_cap: p.capPerUnitHour, pay_units: p.units, pay_held: p.held } : { pay_asset: null, pay_cap: null, pay_units: null, pay_held: null };
}

/** A new queued job's row: a buyer's submission, or a run the coordinator makes (audit, referee, canary). */
export function newJobRow(j: Pick<NewJob, 'id' | 'buyerId' | 'spec' | 'idempotencyKey' | 'now'> & { payment?: JobPaymentRecord | null } & JobCheckFields): JobRow {
  return {
    id: j.id,
    buyer_id: j.buyerId,
    name: j.spec.name,
    state: 'queued',
    ...specColumns(j.spec),
    idempotency_key: j.idempotencyKey,
    attempt_count: 0,
    current_attempt_id: null,
    run_after: null,
    exit_code: null,
    error: null,
    cancel_requested: 0,
    avoid_node_ids: '[]',
    priority: PRIORITY_RANK[jobPriority(j.spec)],
    ...paymentColumns(j.payment),
    ...checkColumns(j),
    created_at: j.now,
    updated_at: j.now,
    started_at: null,
    finished_at: null,
  };
}

/** The attempt row's price columns (all null without a market). */
export function priceColumns(
  p: AttemptPriceRecord | undefined,
): Pick<AttemptRow, 'price_asset' | 'price_per_unit_hour' | 'price_units' | 'price_fee_bps' | 'price_provider_id' | 'price_stake_lock' | 'price_class'> {
  return p
    ? {
        price_asset: p.asset,
        price_per_unit_hour: p.pricePerUnitHour,
        price_units: p.units,
        price_fee_bps: p.feeBps,
        price_provider_id: p.providerId,
        price_stake_lock: p.stakeLock,
        price_class: p.marketClass,
      }
    : { price_asset: null, price_per_unit_hour: null, price_units: null, price_fee_bps: null, price_provider_id: null, price_stake_lock: null, price_class: null };
}

export function attemptPriceFromRow(r: AttemptRow): AttemptPriceRecord | null {
  if (r.price_asset === null) return null;
  return {
    asset: r.price_asset as Asset,
    pricePerUnitHour: Number(r.price_per_unit_hour),
    units: Number(r.price_units),
    feeBps: Number(r.price_fee_bps),
    providerId: r.price_provider_id as string,
    stakeLock: Number(r.price_stake_lock),
    marketClass: r.price_class as string,
  };
}

export function attemptFromRow(r: AttemptRow): AttemptRecord {
  const a: AttemptRecord = {
    id: r.id,
    jobId: r.job_id,
    nodeId: r.node_id,
    state: r.state as AttemptState,
    gpuIndices: JSON.parse(r.gpu_indices),
    exitCode: num(r.exit_code),
    error: r.error,
    outputDigest: r.output_digest,
    metrics: r.metrics === null ? null : JSON.parse(r.metrics),
    leaseExpiresAt: num(r.lease_expires_at),
    createdAt: Number(r.created_at),
    startedAt: num(r.started_at),
    finishedAt: num(r.finished_at),
    price: attemptPriceFromRow(r),
    settlement: { charged: Number(r.settled_charged), fee: Number(r.settled_fee), settledMs: Number(r.settled_ms) },
  };
  // Only gang members carry it, so ordinary attempts read back exactly as before migration 0002.
  if (r.gang_leader !== null && r.gang !== null) a.gang = { leaderAttemptId: r.gang_leader, ...JSON.parse(r.gang) };
  // 0009: present once the node's signed report ended the attempt.
  if (r.commitment) {
    a.commitment = r.commitment;
    a.commitmentSignature = r.commitment_signature ?? null;
  }
  return a;
}

export function nodeFromRow(r: NodeRow): NodeRecord {
  const n: NodeRecord = {
    id: r.id,
    publicKey: r.public_key,
    advertisement: JSON.parse(r.advertisement),
    status: r.status as NodeStatus,
    adminState: r.admin_state as NodeAdminState,
    simulated: Number(r.simulated) === 1,
    providerId: r.provider_id ?? null,
    registeredAt: Number(r.registered_at),
    lastHeartbeatAt: Number(r.last_heartbeat_at),
  };
  if (r.admin_reason !== null && r.admin_reason !== undefined) n.adminReason = r.admin_reason;
  if (r.enrollment_id !== null && r.enrollment_id !== undefined) n.enrollmentId = r.enrollment_id;
  if (r.removed_at !== null && r.removed_at !== undefined) n.removedAt = Number(r.removed_at);
  // 0015: the tier always; the proof only once set (a node never challenged reads unproven without it).
  if (r.tier !== undefined) n.tier = r.tier as NonNullable<NodeRecord['tier']>;
  if ((r.proof_state !== undefined && r.proof_state !== 'unproven') || (r.next_check_at !== null && r.next_check_at !== undefined)) n.proof = proofFromRow(r);
  return n;
}

/** 0015: the node's proof columns as a record. */
export function proofFromRow(r: Pick<NodeRow, 'proof_state' | 'proven_class' | 'proof_score' | 'proven_at' | 'proof_reason' | 'next_check_at'>): NodeProofRecord {
  return {
    state: (r.proof_state ?? 'unproven') as NodeProofRecord['state'],
    provenClass: r.proven_class ?? null,
    score: r.proof_score === null || r.proof_score === undefined ? null : Number(r.proof_score),
    provenAt: num(r.proven_at ?? null),
    reason: r.proof_reason ?? null,
    nextCheckAt: num(r.next_check_at ?? null),
  };
}

export function eventFromRow(r: Selectable<EventsTable>): EventRecord {
  return {
    seq: Number(r.seq),
    at: Number(r.at),
    subject: r.subject as 'job' | 'node',
    subjectId: r.subject_id,
    type: r.type,
    data: JSON.parse(r.data),
  };
}

export function outputFromRow(r: Selectable<OutputsTable>): OutputFile {
  const f: OutputFile = { path: r.path, size: Number(r.size), sha256: r.sha256 };
  if (r.content !== null) f.content = r.content;
  if (r.blob) f.blob = true;
  if (r.plain_sha256 != null && r.plain_size != null) f.encrypted = { sha256: r.plain_sha256, size: Number(r.plain_size) };
  return f;
}
