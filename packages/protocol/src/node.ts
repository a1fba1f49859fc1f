/** What a node advertises about itself, and how the coordinator shows nodes. */
import { z } from 'zod';

export const GpuVendor = z.enum(['nvidia', 'amd']);
export type GpuVendor = z.infer<typeof GpuVendor>;

export const GpuDevice = z.object({
  index: z.number().int().min(0),
  uuid: z.string().min(1),
  vendor: GpuVendor,
  model: z.string().min(1).describe('Marketing name as the driver reports it, e.g. "NVIDIA H100 80GB HBM3"'),
  vramMb: z.number().int().min(0),
  driver: z.string().optional(),
  computeCapability: z.string().optional().describe('NVIDIA compute capability ("9.0") or AMD gfx target ("gfx942")'),
});
export type GpuDevice = z.infer<typeof GpuDevice>;

export const NodeAdvertisement = z.object({
  hostname: z.string().min(1).max(255),
  agentVersion: z.string(),
  os: z.string(),
  arch: z.string(),
  cpuCores: z.number().int().min(1),
  memoryMb: z.number().int().min(0),
  gpus: z.array(GpuDevice).max(64),
  docker: z.object({
    available: z.boolean(),
    version: z.string().optional(),
    gpuRuntime: z.enum(['nvidia', 'amd', 'none']).default('none'),
    problem: z.string().optional().describe('Why Docker or its GPU runtime is unusable, if it is'),
  }),
  executors: z.array(z.enum(['process', 'docker', 'simulated'])).min(1),
  region: z.string().min(1).max(64).optional(),
  labels: z.record(z.string(), z.string()).default({}),
  simulated: z.boolean().default(false).describe('True for demo/benchmark nodes whose executor only sleeps'),
});
export type NodeAdvertisement = z.output<typeof NodeAdvertisement>;
export type NodeAdvertisementInput = z.input<typeof NodeAdvertisement>;

export const NodeStatus = z.enum(['online', 'offline']);
export type NodeStatus = z.infer<typeof NodeStatus>;
/** active: takes work; cordoned: no new work; draining: no new work, reports drained when idle. */
export const NodeAdminState = z.enum(['active', 'cordoned', 'draining']);
export type NodeAdminState = z.infer<typeof NodeAdminState>;

export const NodeView = z.object({
  id: z.string(),
  status: NodeStatus,
  adminState: NodeAdminState,
  adminReason: z.string().nullable().optional().describe('Why the node is cordoned when the coordinator did it (e.g. repeated failures)'),
  drained: z.boolean().describe('Draining and no attempts left'),
  simulated: z.boolean(),
  advertisement: NodeAdvertisement,
  gpusTotal: z.number().int(),
  gpusBusy: z.number().int(),
  activeAttempts: z.number().int(),
  registeredAt: z.number().int(),
  lastHeartbeatAt: z.number().int(),
  providerId: z.string().nullable().optional().describe('The account that owns the node and is paid for its work; null for a node registered without a provider token'),
});
export type NodeView = z.infer<typeof NodeView>;
