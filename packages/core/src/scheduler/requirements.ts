/**
 * What a job asks of a node, lowered once per job from its spec: GPU class wants, count, CPU, memory,
 * placement constraints, trust tier, price cap, priority and gang size. Absent optional fields mean: priority
 * normal, nodes 1, no price cap, trust tier open. Trust tiers rank open < attested < curated: a job asking for
 * curated goes only to nodes an operator vouched for (the node's tier comes from its record, capacity-index.ts).
 */
import type { JobSpec } from '@gpux/protocol';
import { stakeToLock, unitsOf } from '../market/settlement.js';
import type { JobRecord } from '../records.js';
import type { GpuWant } from './gpu-class.js';

export type PriorityClass = 'high' | 'normal' | 'low';
/** Smaller runs first. Stored as an integer column for the fair-share claim. */
export const PRIORITY_RANK: Record<PriorityClass, number> = { high: 0, normal: 1, low: 2 };
export const PRIORITY_CLASSES: readonly PriorityClass[] = ['high', 'normal', 'low'];

export type TrustTier = 'open' | 'attested' | 'curated';
export const TRUST_RANK: Record<TrustTier, number> = { open: 0, attested: 1, curated: 2 };

export interface JobRequirements {
  gpu: GpuWant;
  gpuCount: number;
  cpu: number;
  memoryMb: number;
  region: string | undefined;
  preferredRegion: string | undefined;
  labels: ReadonlyArray<readonly [string, string]>;
  minTrust: number;
  /** The job's cap per unit-hour: its payment's (market) or the spec's maxPricePerGpuHour. */
  maxPrice: number | undefined;
  /**
   * A market job: only nodes with a provider (to be paid), a clearing price within the cap (never below the
   * class floor) and free stake covering the lock at that price take it (filters.ts priceAt, stakeLockAt).
   */
  paid: boolean;
  /** The most stake an attempt can lock (core market/settlement.ts stakeToLock at the cap); 0 without a market. */
  stakeNeeded: number;
  /** Priced units per node and the timeout: with a node's clearing price they give its exact stake lock. */
  units: number;
  timeoutSeconds: number;
  avoid: ReadonlySet<string>;
  /** Operators (provider accounts) the job may not be placed with: an audit or referee avoids those it checks. Hard filter. */
  avoidProviders: ReadonlySet<string>;
  /** A check run (audit, referee): placed on a uniformly drawn eligible node, not the best-scored one. */
  check: 'audit' | 'referee' | 'checker' | null;
  /** Gang size (members on distinct nodes); 1 for ordinary jobs. */
  nodes: number;
  priority: PriorityClass;
  /** Jobs with equal shapes share it: a shape that found no node in a pass is not searched again in that pass. */
  shape: string;
  /** The GPU-class part of the shape: which classes (pools) are acceptable. */
  gpuShape: string;
  /** gpuShape and region: the key of the pools the job accepts (capacity-index.ts poolsFor), made once. */
  poolKey: string;
}

/** What a job takes from a node besides GPUs. */
export function jobCpu(job: Pick<JobRecord, 'spec'>): number {
  return job.spec.resources.cpuCores ?? 1;
}
export function jobMemoryMb(job: Pick<JobRecord, 'spec'>): number {
  return Math.ceil((job.spec.resources.memoryGb ?? 0) * 1024);
}
export function jobPriority(spec: JobSpec): PriorityClass {
  return spec.priority ?? 'normal';
}
/** The least trust tier the job accepts: constraints.minTrustTier, or its alias minTier (the schema refuses both differing). */
export function jobMinTier(spec: JobSpec): TrustTier {
  return spec.constraints.minTrustTier ?? spec.constraints.minTier ?? 'open';
}
export function jobNodes(spec: JobSpec): number {
  return spec.nodes ?? 1;
}

const cache = new WeakMap<object, JobRequirements>();
/** The avoid sets of the many jobs that avoid nothing share this one (read-only), so queued jobs cost less memory. */
const NO_IDS: ReadonlySet<string> = new Set<string>();
/**
 * Jobs that avoid no node and no operator, pay through no market and check no one (their requirements are a function
 * of the spec alone) and whose specs ask the same share one requirements object (read-only, as every one is): a queue
 * holds many jobs of few kinds, and the object, strings and lists made per job (about 840 bytes, 500 of them kept)
 * were half of what a placement run at 50,000 nodes still held at its end (bench/placement README). The key is the
 * spec's fields that requirements read, as JSON (made per new job, then dropped); specs equal but for key order or fields
 * nothing reads get objects of their own, equal in value. Bounded: past SHARED_MAX keys the table starts over.
 */
const shared = new Map<string, JobRequirements>();
const SHARED_MAX = 4096;

export function requirementsOf(
  job: Pick<JobRecord, 'spec' | 'avoidNodeIds'> & { payment?: JobRecord['payment']; kind?: JobRecord['kind']; avoidProviderIds?: JobRecord['avoidProviderIds'] },
): JobRequirements {
  const hit = cache.get(job);
  if (hit) return hit;
  const key = sharedKey(job);
  const had = key === undefined ? undefined : shared.get(key);
  if (had) {
    cache.set(job, had);
    return had;
  }
  const r = lower(job);
  if (key !== undefined) {
    if (shared.size >= SHARED_MAX) shared.clear();
    shared.set(key, r);
  }
  cache.set(job, r);
  return r;
}

type RequirementsInput = Parameters<typeof requirementsOf>[0];

/** The key of `shared` for a job whose requirements depend on its spec alone; undefined for any other. */
function sharedKey(job: RequirementsInput): string | undefined {
  if (job.avoidNodeIds.length > 0 || (job.avoidProviderIds?.length ?? 0) > 0 || job.payment || isCheck(job.kind)) return undefined;
  const s = job.spec;
  return JSON.stringify([s.resources, s.constraints, s.maxPricePerGpuHour ?? null, s.timeoutSeconds, s.nodes ?? null, s.priority ?? null]);
}

const isCheck = (kind: JobRecord['kind'] | undefined): kind is 'audit' | 'referee' | 'checker' => kind === 'audit' || kind === 'referee' || kind === 'checker';

/** The job's requirements, made anew. */
function lower(job: RequirementsInput): JobRequirements {
  const s = job.spec;
  const g = s.resources.gpu;
  const gpuCount = g.count;
  const gpu: GpuWant =
    gpuCount === 0 ? {} : { vendor: g.vendor, models: g.models?.map((m) => m.toLowerCase()), minVramMb: g.minVramGb === undefined ? undefined : g.minVramGb * 1024 };
  const labels = Object.entries(s.constraints.nodeLabels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const gpuShape = gpuCount === 0 ? 'cpu' : `${gpu.vendor ?? '*'}|${gpu.models?.join(',') ?? '*'}|${gpu.minVramMb ?? 0}`;
  const r: JobRequirements = {
    gpu,
    gpuCount,
    cpu: jobCpu(job),
    memoryMb: jobMemoryMb(job),
    region: s.constraints.region,
    preferredRegion: s.constraints.preferredRegion,
    labels,
    minTrust: TRUST_RANK[jobMinTier(s)],
    maxPrice: job.payment ? job.payment.capPerUnitHour : s.maxPricePerGpuHour,
    paid: !!job.payment,
    stakeNeeded: job.payment ? stakeToLock(job.payment.capPerUnitHour, job.payment.units, s.timeoutSeconds) : 0,
    units: job.payment?.units ?? unitsOf(s),
    timeoutSeconds: s.timeoutSeconds,
    avoid: job.avoidNodeIds.length > 0 ? new Set(job.avoidNodeIds) : NO_IDS,
    avoidProviders: job.avoidProviderIds?.length ? new Set(job.avoidProviderIds) : NO_IDS,
    check: isCheck(job.kind) ? job.kind : null,
    nodes: jobNodes(s),
    priority: jobPriority(s),
    gpuShape,
    poolKey: `${gpuShape}@${s.constraints.region ?? '\u0000'}`,
    shape: '',
  };
  r.shape = JSON.stringify([gpuShape, gpuCount, r.cpu, r.memoryMb, r.region ?? null, labels, r.minTrust, r.maxPrice ?? null, r.stakeNeeded, r.nodes, [...r.avoidProviders].sort(), r.check]);
  return r;
}
