/** Proof-of-hardware challenge runners (issue 12). */
export * from './runner.js';
export { CpuChallengeRunner } from './cpu-runner.js';
export { DEFAULT_CHALLENGE_IMAGE, NVIDIA_TORCH_SCRIPT, type NvidiaTorchMode, NvidiaTorchChallengeRunner, nvidiaTorchCommand } from './nvidia-torch.js';
export { CHALLENGE_RUNNER_SETTINGS, type ChallengeRunnerSetting, type ChooseRunnerOptions, chooseChallengeRunner, TORCH_PROBE } from './choose.js';
export { type ChallengeTaskDeps, runChallenge } from './task.js';
