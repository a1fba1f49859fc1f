/** Validate an untrusted job spec object into problems or a normalized spec. */
import { problemsFromZod, type Problem } from './errors.js';
import { JobSpec } from './job-spec.js';

export function parseJobSpec(input: unknown): { ok: true; spec: JobSpec } | { ok: false; problems: Problem[] } {
  const result = JobSpec.safeParse(input);
  return result.success ? { ok: true, spec: result.data } : { ok: false, problems: problemsFromZod(result.error) };
}
