/**
 * Which challenge runner a node uses (GPUX_CHALLENGE_RUNNER): `cpu`, `nvidia-torch`, or `auto` (default):
 * nvidia-torch when the node advertises NVIDIA GPUs and PyTorch can reach them (host python3 first, else the
 * NVIDIA container runtime with GPUX_CHALLENGE_IMAGE), otherwise cpu — with a warning on a GPU node, whose
 * challenge will then fail on time (a CPU is not the GPU class it claims).
 */
import type { Logger } from '@gpux/core';
import type { GpuDevice } from '@gpux/protocol';
import { type CommandRunner, execFileRunner } from '../detect/runner.js';
import { CpuChallengeRunner } from './cpu-runner.js';
import { DEFAULT_CHALLENGE_IMAGE, NvidiaTorchChallengeRunner } from './nvidia-torch.js';
import type { ChallengeRunner } from './runner.js';

export type ChallengeRunnerSetting = 'auto' | 'cpu' | 'nvidia-torch';
export const CHALLENGE_RUNNER_SETTINGS: readonly ChallengeRunnerSetting[] = ['auto', 'cpu', 'nvidia-torch'];

/** Exit 0 only when torch imports and sees CUDA. */
export const TORCH_PROBE = 'import sys, torch; sys.exit(0 if torch.cuda.is_available() and torch.cuda.device_count() > 0 else 3)';

export interface ChooseRunnerOptions {
  setting: ChallengeRunnerSetting;
  gpus: readonly GpuDevice[];
  /** From the advertisement: the NVIDIA container runtime is usable. */
  dockerGpuRuntime: 'nvidia' | 'amd' | 'none';
  python?: string;
  image?: string;
  logger: Logger;
  /** Injectable for tests; default runs the probe with a 60 s timeout (a cold torch import is slow). */
  run?: CommandRunner;
}

export async function chooseChallengeRunner(o: ChooseRunnerOptions): Promise<ChallengeRunner> {
  const nvidia = o.gpus.some((g) => g.vendor === 'nvidia');
  if (o.setting === 'cpu' || (o.setting === 'auto' && !nvidia)) {
    if (o.gpus.length > 0) o.logger.warn({ gpus: o.gpus.length }, 'challenge runner: cpu on a node that advertises GPUs; its proof-of-hardware challenge will fail on time');
    return new CpuChallengeRunner();
  }
  const python = o.python ?? 'python3';
  const probe = await (o.run ?? execFileRunner(60_000))(python, ['-c', TORCH_PROBE]);
  if (probe.code === 0) {
    o.logger.info({ python }, 'challenge runner: nvidia-torch on the host python');
    return new NvidiaTorchChallengeRunner({ kind: 'host', python }, o.logger);
  }
  if (o.dockerGpuRuntime === 'nvidia' || o.setting === 'nvidia-torch') {
    const image = o.image ?? DEFAULT_CHALLENGE_IMAGE;
    o.logger.info({ image }, 'challenge runner: nvidia-torch in a container (no PyTorch with CUDA on the host)');
    return new NvidiaTorchChallengeRunner({ kind: 'docker', image }, o.logger);
  }
  o.logger.warn(
    { python, probe: probe.failure ?? probe.code },
    'challenge runner: no PyTorch with CUDA on the host and no NVIDIA container runtime; falling back to cpu, and the proof-of-hardware challenge will fail on time. Install PyTorch with CUDA or the NVIDIA container toolkit',
  );
  return new CpuChallengeRunner();
}
