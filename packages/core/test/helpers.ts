/** Fixtures for the scheduler tests: node records, job records, a seeded Random, a placement context. */
import { JobSpec, type JobSpecInput, NodeAdvertisement, type NodeAdvertisementInput } from '@gpux/protocol';
import { type JobRecord, type NodeRecord, type PlacementContext, type Random, seededRandom } from '../src/index.js';

export const T0 = 1_700_000_000_000;

export const seeded = (seed = 1): Random => seededRandom(seed);

export interface NodeOpts {
  gpus?: number;
  model?: string;
  vendor?: 'nvidia' | 'amd';
  vramMb?: number;
  cpu?: number;
  memoryMb?: number;
  region?: string;
  labels?: Record<string, string>;
  status?: 'online' | 'offline';
  adminState?: 'active' | 'cordoned' | 'draining';
  /** Extra GPUs of another class, after the first `gpus`. */
  more?: { count: number; model: string; vramMb: number };
  hostname?: string;
}

export function node(id: string, o: NodeOpts = {}): NodeRecord {
  const gpus: NodeAdvertisementInput['gpus'] = [];
  const count = o.gpus ?? 1;
  for (let i = 0; i < count; i++) gpus.push({ index: i, uuid: `${id}-${i}`, vendor: o.vendor ?? 'nvidia', model: o.model ?? 'NVIDIA H100 80GB HBM3', vramMb: o.vramMb ?? 81559 });
  if (o.more) for (let i = 0; i < o.more.count; i++) gpus.push({ index: count + i, uuid: `${id}-m${i}`, vendor: 'nvidia', model: o.more.model, vramMb: o.more.vramMb });
  const ad: NodeAdvertisementInput = {
    hostname: o.hostname ?? `${id}.local`,
    agentVersion: '0.1.0',
    os: 'linux',
    arch: 'x64',
    cpuCores: o.cpu ?? 32,
    memoryMb: o.memoryMb ?? 262144,
    gpus,
    docker: { available: true, gpuRuntime: 'nvidia' },
    executors: ['docker'],
    labels: o.labels ?? {},
    ...(o.region ? { region: o.region } : {}),
  };
  return {
    id,
    publicKey: `key-${id}`,
    advertisement: NodeAdvertisement.parse(ad),
    status: o.status ?? 'online',
    adminState: o.adminState ?? 'active',
    simulated: false,
    providerId: null,
    registeredAt: T0,
    lastHeartbeatAt: T0,
  };
}

let seq = 0;
export function job(over: Partial<JobSpecInput> = {}, o: { id?: string; buyerId?: string; createdAt?: number; avoid?: string[]; runAfter?: number | null } = {}): JobRecord {
  const spec = JobSpec.parse({ name: 'j', image: 'img', command: ['run'], ...over });
  const id = o.id ?? `job-${String(++seq).padStart(6, '0')}`;
  return {
    id,
    name: 'j',
    buyerId: o.buyerId ?? 'buyer-a',
    state: 'queued',
    spec,
    attemptCount: 0,
    currentAttemptId: null,
    runAfter: o.runAfter ?? null,
    exitCode: null,
    error: null,
    cancelRequested: false,
    createdAt: o.createdAt ?? T0,
    updatedAt: o.createdAt ?? T0,
    startedAt: null,
    finishedAt: null,
    idempotencyKey: null,
    avoidNodeIds: o.avoid ?? [],
    payment: null,
  };
}

export function gpuJob(count: number, over: Partial<JobSpecInput> = {}, o: Parameters<typeof job>[1] = {}): JobRecord {
  return job({ ...over, resources: { cpuCores: 1, ...over.resources, gpu: { count, ...over.resources?.gpu } } }, o);
}

let attempts = 0;
/** Attempt ids are unique across contexts: the index ignores a second reservation under the same id. */
export function ctx(now = T0, random: Random = seeded(1)): PlacementContext {
  return { now, leaseTtlMs: 30_000, random, newAttemptId: () => `att-${++attempts}` };
}
