/** Shared fixtures of the Store conformance suite: specs, advertisements, ids, and a run-on-a-fresh-store helper. */
import assert from 'node:assert/strict';
import type { EnrollmentRecord, FinishAttemptInput, Placement, Store } from '@gpux/core';
import { JobSpec, type JobSpecInput, NodeAdvertisement, type NodeAdvertisementInput } from '@gpux/protocol';

export interface StoreUnderTest {
  store: Store;
  /** Close every store opened through this handle and delete the database. */
  cleanup(): Promise<void>;
  /** Open the same database again (after store.close()): for the durability test. */
  reopen?(): Promise<Store>;
}

export type OpenStore = () => Promise<StoreUnderTest>;

/** Run `fn` on a fresh store, always cleaning up. */
export async function withStore(open: OpenStore, fn: (store: Store, h: StoreUnderTest) => Promise<void>): Promise<void> {
  const h = await open();
  try {
    await fn(h.store, h);
  } finally {
    await h.cleanup();
  }
}

export const T0 = 1_700_000_000_000;

export function spec(over: Partial<JobSpecInput> = {}): JobSpec {
  return JobSpec.parse({ name: 'train', image: 'busybox:1.36', command: ['sh', '-c', 'echo hi'], ...over });
}

export function advertisement(over: Partial<NodeAdvertisementInput> = {}): NodeAdvertisement {
  return NodeAdvertisement.parse({
    hostname: 'gpu-box-1',
    agentVersion: '0.1.0',
    os: 'linux',
    arch: 'x64',
    cpuCores: 16,
    memoryMb: 65536,
    gpus: [{ index: 0, uuid: 'GPU-0', vendor: 'nvidia', model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 }],
    docker: { available: true, gpuRuntime: 'nvidia' },
    executors: ['docker'],
    ...over,
  });
}

export async function submit(store: Store, id: string, now: number, over: { buyerId?: string; key?: string | null; spec?: Partial<JobSpecInput> } = {}) {
  const r = await store.submitJob({ id, buyerId: over.buyerId ?? 'buyer-1', spec: spec(over.spec), idempotencyKey: over.key ?? null, now });
  return r.job;
}

export async function register(store: Store, id: string, now: number, adv: Partial<NodeAdvertisementInput> = {}) {
  return store.registerNode({ id, publicKey: `key-${id}`, advertisement: advertisement(adv), now });
}

export function placement(jobId: string, attemptId: string, nodeId: string, leaseExpiresAt: number, gpuIndices: number[] = [0]): Placement {
  return { jobId, attemptId, nodeId, gpuIndices, leaseExpiresAt };
}

let gpuPairs = 0;
/**
 * Two GPU indices no earlier call returned: assign checks GPUs at commit, and money tests put several 2-GPU attempts
 * on one fixture node (the check does not hold indices to the advertisement; the scheduler does).
 */
export function distinctGpuPair(): number[] {
  const base = 2 * gpuPairs++;
  return [base, base + 1];
}

/** Submit a job and assign it to `nodeId` (registering the node); returns the attempt. */
export async function assigned(store: Store, jobId: string, attemptId: string, nodeId: string, now: number, jobOver: Parameters<typeof submit>[3] = {}) {
  if (!(await store.getNode(nodeId))) await register(store, nodeId, now);
  if (!(await store.getJob(jobId))) await submit(store, jobId, now, jobOver);
  // The lowest GPU index no active attempt holds: assign checks GPUs at commit (a fixture node may run several jobs).
  const held = new Set((await store.listActiveAttempts(nodeId)).flatMap((a) => a.gpuIndices));
  let gpu = 0;
  while (held.has(gpu)) gpu++;
  const [attempt] = await store.assign([placement(jobId, attemptId, nodeId, now + 30_000, [gpu])], now);
  if (!attempt) throw new Error(`could not assign ${jobId}`);
  return attempt;
}

/** The members of a gang job on `nodes` (rank 0, the leader, on the first), each with attempt id `<leader>-r<rank>`. */
export function gang(jobId: string, leader: string, nodes: string[], lease: number): Placement[] {
  const peers = nodes.map((nodeId, rank) => ({ rank, nodeId, address: `${nodeId}.local` }));
  return nodes.map((nodeId, rank) => ({
    jobId,
    attemptId: rank === 0 ? leader : `${leader}-r${rank}`,
    nodeId,
    gpuIndices: [0],
    leaseExpiresAt: lease,
    gang: { leaderAttemptId: leader, rank, worldSize: nodes.length, peers },
  }));
}

/** A node enrollment of prov-a (tokens port), open-ended unless told. */
export const enrollment = (over: Partial<EnrollmentRecord> = {}): EnrollmentRecord => ({
  id: 'enr-1',
  hash: 'e'.repeat(64),
  accountId: 'prov-a',
  name: 'rack',
  createdAt: T0,
  expiresAt: null,
  revokedAt: null,
  maxNodes: null,
  ...over,
});

/** Register a node through an enrollment, with one GPU (uuid GPU-<node> unless told). */
export function enroll(store: Store, nodeId: string, now: number, e: { id: string; accountId: string }, opts: { uuid?: string; maxProviderNodes?: number } = {}) {
  const adv = advertisement({ gpus: [{ index: 0, uuid: opts.uuid ?? `GPU-${nodeId}`, vendor: 'nvidia', model: 'NVIDIA H100 80GB HBM3', vramMb: 81559 }] });
  return store.registerNode({ id: nodeId, publicKey: `key-${nodeId}`, advertisement: adv, now, providerId: e.accountId, enrollment: { id: e.id, maxProviderNodes: opts.maxProviderNodes ?? 1000 } });
}

export const DIGEST_A = 'a'.repeat(64);
export const DIGEST_B = 'b'.repeat(64);

export function result(attemptId: string, nodeId: string, now: number, over: Partial<FinishAttemptInput> = {}): FinishAttemptInput {
  return {
    attemptId,
    nodeId,
    outcome: 'succeeded',
    exitCode: 0,
    error: null,
    outputDigest: DIGEST_A,
    outputs: [],
    metrics: { durationMs: 1200 },
    now,
    ...over,
  };
}

export async function eventTypes(store: Store, subject: 'job' | 'node', id: string): Promise<string[]> {
  return (await store.listEvents(subject, id, 1000)).map((e) => e.type);
}

/** assert.rejects matcher for a GpuxError code (shows the actual error when it differs). */
export const code = (c: string) => (err: unknown) => {
  assert.equal((err as { code?: string }).code, c, `expected GpuxError ${c}, got ${String(err)}`);
  return true;
};
