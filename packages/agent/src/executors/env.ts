/** The environment a job process sees: a minimal base, the spec's env, then the gpux variables (which win). */
import type { ExecutionRequest } from '@gpux/core';

const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export const GPU_VISIBILITY_VARS = ['CUDA_VISIBLE_DEVICES', 'NVIDIA_VISIBLE_DEVICES', 'ROCR_VISIBLE_DEVICES', 'HIP_VISIBLE_DEVICES'] as const;

export function jobEnv(
  req: ExecutionRequest,
  dirs: { root: string; inputs: string; outputs: string; checkpoints?: string | undefined },
  hostEnv: Record<string, string | undefined> = process.env,
): Record<string, string> {
  const gpus = req.gpuIndices.join(',');
  const env: Record<string, string> = {
    PATH: hostEnv.PATH ?? DEFAULT_PATH,
    HOME: dirs.root,
    LANG: hostEnv.LANG ?? 'C.UTF-8',
    ...req.spec.env,
    GPUX_INPUTS: dirs.inputs,
    GPUX_OUTPUTS: dirs.outputs,
    GPUX_JOB_ID: req.jobId,
    GPUX_ATTEMPT_ID: req.attemptId,
    // A job with `spec.checkpoint` keeps its state here (issue 13).
    ...(dirs.checkpoints ? { GPUX_CHECKPOINTS: dirs.checkpoints } : {}),
  };
  // Empty string (not unset) for CPU-only attempts: CUDA and ROCm then see no device at all.
  for (const name of GPU_VISIBILITY_VARS) env[name] = gpus;
  return env;
}
