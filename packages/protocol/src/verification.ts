/** Verification labels and reputation on the wire (issue 11, TRUST.md): what a buyer and a provider see. */
import { z } from 'zod';
import { Amount, Asset } from './money.js';

export const VerificationState = z.enum(['auditing', 'refereeing', 'window', 'passed', 'released', 'failed']);
export const VerificationLabel = z.enum(['audit-pending', 'audited-passed', 'replica-pending', 'replicated-agreed', 'sampled-out', 'not-verifiable', 'unaudited', 'disputed', 'dispute-rejected', 'wrong-result']);
export type VerificationLabel = z.infer<typeof VerificationLabel>;

export const VerificationView = z.object({
  state: VerificationState,
  label: VerificationLabel.describe('The honest label: audited and passed, replicated and agreed, sampled out (with p), not verifiable, disputed, …'),
  summary: z.string().describe('The label in one sentence, with p, the window and the stake behind it'),
  attemptId: z.string(),
  nodeId: z.string(),
  p: z.number().min(0).max(1).describe('Probability the result was audited with'),
  draw: z.number().nullable().describe('The CSPRNG draw compared with p (audited iff draw < p); null when none was needed'),
  reason: z.string(),
  windowClosesAt: z.number().int().describe('Until when the buyer may dispute (pay is held until then, or until an audit passes)'),
  checks: z.array(
    z.object({
      kind: z.enum(['audit', 'referee', 'checker']),
      state: z.string(),
      agreed: z.boolean().nullable().describe("audit, referee: whether the run agreed with the executor's result (by digest, or by the buyer's checker with verify); checker: whether the checker said its two output sets agree; null while running or unknown"),
    }),
  ),
  dispute: z.object({ reason: z.string(), bond: Amount, asset: Asset, at: z.number().int() }).nullable(),
  verdict: z.string().nullable(),
  resolvedAt: z.number().int().nullable(),
});
export type VerificationView = z.infer<typeof VerificationView>;

export const DisputeRequest = z
  .object({ reason: z.string().min(1).max(2000).describe('What is wrong with the result, for the record') })
  .strict();
export type DisputeRequest = z.infer<typeof DisputeRequest>;

export const ReputationView = z.object({
  score: z.number().min(0).max(1).describe('Decayed ratio of good to bad outcomes: 0.5 for a new node, toward 1 with verified work'),
  good: z.number().describe('Decayed weight of audits and canaries passed and jobs completed'),
  bad: z.number().describe('Decayed weight of failed audits and canaries and lost leases'),
  auditsPassed: z.number().int().describe('Audits passed in a row (sets the audit rate)'),
  asOf: z.number().int(),
});
export type ReputationView = z.infer<typeof ReputationView>;

/** POST /v1/jobs/:id/dispute: the job's verification step as the dispute left it (state refereeing, label disputed). */
export const DisputeResponse = z.object({
  verification: VerificationView,
  bond: Amount.describe('The bond taken from your wallet: returned if the referee finds the result wrong, paid to the node if not'),
  asset: Asset,
});
export type DisputeResponse = z.infer<typeof DisputeResponse>;
