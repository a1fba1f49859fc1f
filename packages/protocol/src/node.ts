/** What a node advertises about itself, and how the coordinator shows nodes. */
import { z } from 'zod';
import { NodeProofView } from './challenge.js';
import { ReputationView } from './verification.js';

export const GpuVendor = z.enum(['nvidia', 'amd']);
export type GpuVendor = z.infer<typeof GpuVendor>;

/**
 * Bounds of an advertisement (issue 10 item 2): a node cannot claim more than real hardware has. The
 * coordinator also checks what a schema cannot (a GPU uuid held by another provider's node, a known
 * model's VRAM): see the coordinator's services/advertisement-check.ts.
 */
export const AD_LIMITS = {
  cpuCores: 1024,
  memoryMb: 64 * 1024 * 1024, // 64 TiB
  gpus: 16,
  vramMbPerGpu: 512 * 1024, // 512 GiB
  labels: 64,
  labelKey: 63,
  labelValue: 256,
  text: 128,
} as const;

const text = (max: number = AD_LIMITS.text) => z.string().max(max);

export const GpuDevice = z.object({
  index: z.number().int().min(0).max(255),
  uuid: z.string().min(1).max(AD_LIMITS.text),
  vendor: GpuVendor,
  model: z.string().min(1).max(AD_LIMITS.text).describe('Marketing name as the driver reports it, e.g. "NVIDIA H100 80GB HBM3"'),
  vramMb: z.number().int().min(0).max(AD_LIMITS.vramMbPerGpu),
  driver: text(64).optional(),
  computeCapability: text(32).optional().describe('NVIDIA compute capability ("9.0") or AMD gfx target ("gfx942")'),
});
export type GpuDevice = z.infer<typeof GpuDevice>;

export const NodeAdvertisement = z
  .object({
    hostname: z.string().min(1).max(255),
    agentVersion: text(64),
    os: text(64),
    arch: text(64),
    cpuCores: z.number().int().min(1).max(AD_LIMITS.cpuCores),
    memoryMb: z.number().int().min(0).max(AD_LIMITS.memoryMb),
    gpus: z.array(GpuDevice).max(AD_LIMITS.gpus),
    docker: z.object({
      available: z.boolean(),
      version: text(64).optional(),
      gpuRuntime: z.enum(['nvidia', 'amd', 'none']).default('none'),
      problem: z.string().max(2048).optional().describe('Why Docker or its GPU runtime is unusable, if it is'),
    }),
    executors: z.array(z.enum(['process', 'docker', 'simulated'])).min(1).max(3),
    region: z.string().min(1).max(64).optional(),
    labels: z
      .record(z.string().min(1).max(AD_LIMITS.labelKey), z.string().max(AD_LIMITS.labelValue))
      .refine((l) => Object.keys(l).length <= AD_LIMITS.labels, `at most ${AD_LIMITS.labels} labels`)
      .default({}),
    simulated: z.boolean().default(false).describe('True for demo/benchmark nodes whose executor only sleeps'),
  })
  .superRefine((ad, ctx) => {
    // Each GPU once: a repeated index or uuid would count one device twice as supply.
    const indices = new Set<number>();
    const uuids = new Set<string>();
    ad.gpus.forEach((g, i) => {
      if (indices.has(g.index)) ctx.addIssue({ code: 'custom', path: ['gpus', i, 'index'], message: `GPU index ${g.index} appears twice` });
      if (uuids.has(g.uuid)) ctx.addIssue({ code: 'custom', path: ['gpus', i, 'uuid'], message: `GPU uuid ${g.uuid} appears twice` });
      indices.add(g.index);
      uuids.add(g.uuid);
    });
  });
export type NodeAdvertisement = z.output<typeof NodeAdvertisement>;
export type NodeAdvertisementInput = z.input<typeof NodeAdvertisement>;

export const NodeStatus = z.enum(['online', 'offline']);
export type NodeStatus = z.infer<typeof NodeStatus>;
/** active: takes work; cordoned: no new work; draining: no new work, reports drained when idle. */
export const NodeAdminState = z.enum(['active', 'cordoned', 'draining']);
export type NodeAdminState = z.infer<typeof NodeAdminState>;

/**
 * Trust tiers (TRUST.md "Tiers, shown to buyers and never blurred"): open (stake and the timed challenge),
 * attested (hardware TEE evidence checked by a configured attestation verifier; none ships, so no node is
 * attested), curated (an operator vouches: gpux node tier set ID curated).
 */
export const NodeTier = z.enum(['open', 'attested', 'curated']);
export type NodeTier = z.infer<typeof NodeTier>;

/** POST /v1/nodes/:id/tier. attested is refused (400): only verified evidence makes a node attested. */
export const SetNodeTierRequest = z.object({ tier: NodeTier.describe('curated: an operator vouches for the node; open: takes it back. attested cannot be set by hand') }).strict();
export type SetNodeTierRequest = z.infer<typeof SetNodeTierRequest>;

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
  providerId: z.string().nullable().optional().describe('The account that owns the node and is paid for its work (the account of the enrollment token it registered with)'),
  enrollmentId: z.string().nullable().optional().describe('The enrollment token the node registered with'),
  removedAt: z.number().int().nullable().optional().describe('When the node was removed (its enrollment revoked with removeNodes); its requests are refused'),
  proof: NodeProofView.optional().describe('Proof of hardware (issue 12): the class proven by the timed, checked challenge, its score and when'),
  tier: NodeTier.optional().describe('Trust tier: open, attested (verified TEE evidence; never without a configured verifier) or curated (an operator vouches)'),
  reputation: ReputationView.nullable().optional().describe('From audits, canaries, completions and lost leases, decayed over time (issue 11); null before its first outcome'),
});
export type NodeView = z.infer<typeof NodeView>;
