/**
 * Credentials on the wire (issue 10 items 2 and 14): node enrollment tokens, which can do nothing but
 * register nodes for their provider account, and the listing and revoking of bearer tokens.
 */
import { z } from 'zod';

/** Enrollment tokens start with this, so a bearer route and the register route can tell them apart. */
export const ENROLLMENT_TOKEN_PREFIX = 'gpux_enroll_';
/** Longest expiry a token or an enrollment may be given: ten years. */
export const MAX_EXPIRES_IN_SECONDS = 10 * 366 * 24 * 3600;

const expiresIn = z
  .number()
  .int()
  .min(60)
  .max(MAX_EXPIRES_IN_SECONDS)
  .optional()
  .describe('Seconds until the credential stops working (60 s to 10 years); none: it never expires');

export const EnrollmentView = z.object({
  id: z.string(),
  accountId: z.string().describe('The provider account its nodes are bound to'),
  name: z.string(),
  createdAt: z.number().int(),
  expiresAt: z.number().int().nullable(),
  revokedAt: z.number().int().nullable(),
  maxNodes: z.number().int().nullable().describe('At most this many distinct nodes may register with it; null: no own limit'),
  nodes: z.number().int().describe('Nodes registered with it'),
});
export type EnrollmentView = z.infer<typeof EnrollmentView>;

export const CreateEnrollmentRequest = z
  .object({
    name: z.string().min(1).max(128),
    expiresInSeconds: expiresIn,
    maxNodes: z.number().int().min(1).max(100_000).optional(),
    accountId: z.string().min(1).max(128).optional().describe('Operators only: enroll nodes for this account instead of their own'),
  })
  .strict();
export type CreateEnrollmentRequest = z.input<typeof CreateEnrollmentRequest>;
export const CreateEnrollmentResponse = z.object({
  token: z.string().describe('gpux_enroll_…; shown once, only its hash is stored. Pass it to `gpux node start --enrollment-token`'),
  enrollment: EnrollmentView,
});
export type CreateEnrollmentResponse = z.infer<typeof CreateEnrollmentResponse>;

export const ListEnrollmentsQuery = z.object({
  accountId: z.string().min(1).max(128).optional().describe('Operators: only this account'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z.string().max(512).optional(),
});
export type ListEnrollmentsQuery = z.input<typeof ListEnrollmentsQuery>;
export const ListEnrollmentsResponse = z.object({ enrollments: z.array(EnrollmentView), nextCursor: z.string().nullable() });
export type ListEnrollmentsResponse = z.infer<typeof ListEnrollmentsResponse>;

export const RevokeEnrollmentRequest = z
  .object({ removeNodes: z.boolean().default(false).describe('Also remove its nodes: they are refused from now on and their running attempts are lost (the jobs retry elsewhere)') })
  .strict()
  .default({ removeNodes: false });
export type RevokeEnrollmentRequest = z.input<typeof RevokeEnrollmentRequest>;
export const RevokeEnrollmentResponse = z.object({
  enrollment: EnrollmentView,
  removedNodes: z.array(z.string()).describe('Nodes removed by this call'),
  lostAttempts: z.number().int().describe('Active attempts of those nodes that ended as lost'),
});
export type RevokeEnrollmentResponse = z.infer<typeof RevokeEnrollmentResponse>;

export const TokenView = z.object({
  id: z.string(),
  accountId: z.string(),
  role: z.enum(['buyer', 'operator']),
  name: z.string(),
  createdAt: z.number().int(),
  expiresAt: z.number().int().nullable(),
  revokedAt: z.number().int().nullable(),
});
export type TokenView = z.infer<typeof TokenView>;
export const ListTokensQuery = z.object({
  accountId: z.string().min(1).max(128).optional().describe('Operators: only this account'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z.string().max(512).optional(),
});
export type ListTokensQuery = z.input<typeof ListTokensQuery>;
export const ListTokensResponse = z.object({ tokens: z.array(TokenView), nextCursor: z.string().nullable() });
export type ListTokensResponse = z.infer<typeof ListTokensResponse>;
export const RevokeTokenResponse = z.object({ token: TokenView });
export type RevokeTokenResponse = z.infer<typeof RevokeTokenResponse>;

export { expiresIn as ExpiresInSeconds };
