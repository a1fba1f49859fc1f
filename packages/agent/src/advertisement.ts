/** Builds the node advertisement from detected hardware and config; fake GPUs for simulated nodes. */
import type { GpuDevice, NodeAdvertisementInput } from '@gpux/protocol';
import type { AgentConfig } from './config.js';
import type { DetectedHardware } from './detect/index.js';
import { AGENT_VERSION } from './version.js';

export function buildAdvertisement(hw: DetectedHardware, config: AgentConfig, executor: 'process' | 'docker' | 'simulated'): NodeAdvertisementInput {
  const ad: NodeAdvertisementInput = {
    hostname: config.name ?? hw.hostname,
    agentVersion: AGENT_VERSION,
    os: hw.os,
    arch: hw.arch,
    cpuCores: hw.cpuCores,
    memoryMb: hw.memoryMb,
    gpus: hw.gpus,
    docker: hw.docker,
    executors: [executor],
    labels: { ...config.labels },
    simulated: executor === 'simulated',
  };
  if (executor === 'simulated') ad.labels = { ...ad.labels, simulated: 'true' };
  if (config.region) ad.region = config.region;
  return ad;
}

/** GPUs a simulated node pretends to have; uuids start with SIM- so nobody mistakes them for real ones. */
export function simulatedGpus(count: number, tag: string, model = 'Simulated GPU', vramMb = 16_384, computeCapability?: string): GpuDevice[] {
  return Array.from({ length: count }, (_, index) => {
    const gpu: GpuDevice = { index, uuid: `SIM-${tag}-${index}`, vendor: 'nvidia', model, vramMb };
    if (computeCapability) gpu.computeCapability = computeCapability;
    return gpu;
  });
}
