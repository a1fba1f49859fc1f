/**
 * Prices before launch (issue 16): GET /v1/offers, what the network offers now (a marketplace search over live
 * nodes, identical nodes grouped into one row), and POST /v1/jobs/quote, a dry run of a submit: the spec checked as
 * submit checks it, the hold, the price range over the nodes that fit, how many fit now and the expected wait.
 * Nothing is written by either. Offers never name a node, a host or a provider: only what a market shows.
 */
import { z } from 'zod';
import { JobPayment } from './job.js';
import { Amount, Asset } from './money.js';
import { NodeTier } from './node.js';

/** The most offer rows one answer holds (more: `truncated`). */
export const OFFERS_MAX_LIMIT = 500;

/** A query flag: true/false or 1/0 (a query string has no booleans). */
const Flag = z.enum(['true', 'false', '1', '0']).transform((v) => v === 'true' || v === '1');

export const OffersQuery = z.object({
  gpu: z
    .string()
    .min(1)
    .max(64)
    .regex(/^[A-Za-z0-9 ._+-]+$/, 'letters, digits, spaces and . _ + - only, e.g. H100 or nvidia-h100-80gb')
    .optional()
    .describe('GPU class or model, case-insensitive, e.g. H100, rtx4090 or nvidia-h100-80gb; cpu: CPU-only nodes'),
  count: z.coerce.number().int().min(0).max(1024).optional().describe('At least this many GPUs per node (of the offered class)'),
  maxPrice: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional().describe('Price at most this, minor units per GPU-hour (per job-hour for cpu)'),
  region: z.string().min(1).max(128).optional().describe('Only nodes in this region'),
  proven: Flag.optional().describe('true: only nodes proven by the proof-of-hardware challenge'),
  all: Flag.optional().describe('true: also nodes that cannot take a job now (offline, cordoned, draining, not proven, no free stake), with the reason'),
  limit: z.coerce.number().int().min(1).max(OFFERS_MAX_LIMIT).default(50),
});
export type OffersQuery = z.input<typeof OffersQuery>;

export const OfferView = z.object({
  class: z.string().describe('Market class, e.g. nvidia-h100-80gb; cpu for a node without GPUs'),
  vendor: z.string().nullable(),
  model: z.string().nullable().describe('GPU model as the class names it (lower case, vendor word dropped)'),
  vramGb: z.number().int().nullable(),
  gpusPerNode: z.number().int().describe('GPUs of this class on each node'),
  freeGpus: z.number().int().describe('Of them, free now on each node'),
  nodes: z.number().int().min(1).describe('Identical nodes in this row'),
  cpuCores: z.number(),
  memoryGb: z.number().int(),
  region: z.string().nullable(),
  tier: NodeTier,
  unit: z.enum(['GPU-hour', 'job-hour']),
  price: Amount.nullable().describe('What a job pays there per unit-hour with a cap at or above it: the class index, or the ask plus the network fee when higher, never below the class floor; null without a market'),
  lowestCap: Amount.nullable().describe('The least cap (maxPricePerGpuHour) that clears there: the ask plus the fee, or the index without an ask, never below the floor; a cap between this and price pays the cap'),
  reliability: z.number().min(0).max(1).describe('Reputation (audits, canaries, completions, lost leases) times uptime, 0-1; 0.5 for a new node'),
  proven: z.boolean().describe('Passed the proof-of-hardware challenge (a timed, checked computation) for its class'),
  online: z.boolean(),
  available: z.boolean().describe('Can take a job now (busy ones too: freeGpus may be 0)'),
  unavailable: z.string().nullable().describe('Why not, when available is false'),
});
export type OfferView = z.infer<typeof OfferView>;

export const OffersResponse = z.object({
  market: z.boolean().describe('false: this coordinator runs without a market (jobs are free; no prices)'),
  asset: Asset.describe('The asset prices are quoted in (credit prices like USDC)'),
  feeBps: z.number().int().describe('The network fee included in every price, in basis points of the charge'),
  offers: z.array(OfferView).describe('Cheapest first, then most reliable'),
  total: z.number().int().describe('Rows that matched, before the limit'),
  nodes: z.number().int().describe('Nodes in the rows that matched'),
  truncated: z.boolean(),
});
export type OffersResponse = z.infer<typeof OffersResponse>;

export const WaitEstimate = z.object({
  kind: z.enum(['now', 'recent', 'unknown', 'never']).describe('now: enough nodes fit and are free; recent: from recent placement waits; unknown: too little data; never: no node can run it as specified'),
  seconds: z.number().int().min(0).nullable().describe('The estimate, when there is one'),
  basis: z.string().describe('How it was estimated, in words'),
});
export type WaitEstimate = z.infer<typeof WaitEstimate>;

/**
 * Issue 15, routing as advice: which regions could run the job, from this region's nodes and its peers' last signed
 * summaries (a peer's figures are per class: a class-level estimate), and the region the routing rules would pick.
 * Nothing is forwarded yet. Present only when this coordinator has peers; a peer's URL only for operators.
 */
export const RegionOptionView = z.object({
  region: z.string().describe("The region's name (its summary's)"),
  local: z.boolean().describe('This region'),
  peer: z.string().nullable().describe("The peer's name here (operators only; null for buyers and for this region)"),
  url: z.string().nullable().describe("The peer's URL (operators only)"),
  fitsNow: z.boolean().describe('Enough free GPUs now: node-level here, class-level for a peer'),
  class: z.string().nullable().describe('The market class the figures are for'),
  freeGpus: z.number().int(),
  totalGpus: z.number().int(),
  priceIndex: z.number().int().nullable().describe('Class index price per GPU-hour, minor units'),
  withinCap: z.boolean().nullable().describe("Whether the index is within the job's cap; null without a cap"),
  rttMs: z.number().int().nullable(),
  summaryAgeMs: z.number().int().nullable(),
  why: z.string(),
});
export type RegionOptionView = z.infer<typeof RegionOptionView>;

export const RegionAdvice = z.object({
  options: z.array(RegionOptionView).describe('Regions that could run the job, best first (fits now, nearer, cheaper, name)'),
  skipped: z.array(z.string()).describe('Peers left out and why (not ok, no summary, summary older than 3 exchange periods, no accepted class)'),
  verdict: z.object({
    rule: z.enum(['named', 'no-local-capacity', 'cheaper-within-latency', 'stay', 'nowhere']),
    region: z.string().nullable(),
    sentence: z.string().describe('The choice and why, in words, and whether the job is (or will be) forwarded there'),
  }),
});
export type RegionAdvice = z.infer<typeof RegionAdvice>;

export const QuoteJobResponse = z.object({
  name: z.string(),
  market: z.boolean(),
  payment: JobPayment.nullable().describe('The cap and the escrow a submit would hold (null without a market)'),
  runs: z.number().int().min(1).describe('2 for replicas: 2 (the replica run holds escrow too)'),
  holdTotal: Amount.nullable().describe('All a submit would hold: payment.held × runs'),
  available: Amount.nullable().describe('Your wallet in the job\'s asset now'),
  enoughFunds: z.boolean().nullable().describe('Whether available covers holdTotal now'),
  unit: z.enum(['GPU-hour', 'job-hour']),
  priceLow: Amount.nullable().describe('Cheapest fitting node, as the job would pay there per unit-hour at its cap'),
  priceHigh: Amount.nullable().describe('Dearest fitting node, likewise'),
  nodesNeeded: z.number().int(),
  nodesTotal: z.number().int(),
  nodesFitting: z.number().int().describe('Nodes that can take it now'),
  nodesBusy: z.number().int().describe('Nodes that fit but are busy now'),
  wait: WaitEstimate,
  suggestions: z.array(z.string()).describe('What to change when no node can run it as specified'),
  regions: RegionAdvice.optional().describe('Issue 15: the regions that could run it and the one routing picks (the forwarder sends the job there when it is a peer); only when this coordinator has peers'),
});
export type QuoteJobResponse = z.infer<typeof QuoteJobResponse>;
