/** Error codes and the error body every API response uses. */
import { z } from 'zod';

export const ERROR_CODES = [
  'SPEC_INVALID',
  'REQUEST_INVALID',
  'BODY_TOO_LARGE',
  'UNAUTHORIZED',
  'FORBIDDEN',
  'SIGNATURE_INVALID',
  'JOB_NOT_FOUND',
  'ATTEMPT_NOT_FOUND',
  'NODE_NOT_FOUND',
  'NOT_FOUND',
  'CONFLICT',
  'JOB_FINISHED',
  'RESULT_NOT_READY',
  'KEY_NOT_RELEASED',
  'IDEMPOTENCY_KEY_REUSED',
  'INSUFFICIENT_FUNDS',
  'RATE_LIMITED',
  'LIMIT_EXCEEDED',
  'GONE',
  'UNAVAILABLE',
  'INTERNAL',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

export const Problem = z.object({
  path: z.string().describe('Dotted path to the offending field, e.g. "resources.gpu.count"'),
  message: z.string(),
});
export type Problem = z.infer<typeof Problem>;

export const ErrorBody = z.object({
  error: z.object({
    code: z.enum(ERROR_CODES),
    message: z.string(),
    problems: z.array(Problem).optional(),
  }),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** Turn zod issues into user-facing `{ path, message }` problems. */
export function problemsFromZod(error: z.ZodError): Problem[] {
  return error.issues.map((issue) => ({
    path: issue.path.length ? issue.path.map(String).join('.') : '(root)',
    message: issue.message,
  }));
}
