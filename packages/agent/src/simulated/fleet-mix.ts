/**
 * The fleet mix of a real GPU cluster, for simulated nodes: the distinct node shapes of the Alibaba GPU cluster trace
 * (cluster-trace-gpu-v2023, openb_node_list_gpu_node.csv: 1,213 GPU nodes; alibaba/clusterdata) with how many nodes
 * have each shape. Cite: Weng, Yang, et al., "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with
 * Fragmentation Gradient Descent", USENIX ATC '23. Shipped as a table because a user's clone has no trace files.
 * Generated once from the CSV (columns sn,cpu_milli,memory_mib,gpu,model); cpu_milli / 1000 = cores.
 */
export type TraceGpuModel = 'G2' | 'G3' | 'T4' | 'P100' | 'V100M16' | 'V100M32' | 'A10';

export interface NodeShape {
  /** Nodes of this shape in the trace. */
  count: number;
  gpuCount: number;
  model: TraceGpuModel;
  cpuCores: number;
  memoryMb: number;
}

export const TRACE_NODE_COUNT = 1213;

export const FLEET_MIX: readonly NodeShape[] = [
  { count: 549, gpuCount: 8, model: 'G2', cpuCores: 96, memoryMb: 393216 },
  { count: 387, gpuCount: 2, model: 'T4', cpuCores: 104, memoryMb: 524288 },
  { count: 107, gpuCount: 2, model: 'P100', cpuCores: 16, memoryMb: 122880 },
  { count: 39, gpuCount: 8, model: 'G3', cpuCores: 128, memoryMb: 786432 },
  { count: 28, gpuCount: 4, model: 'V100M16', cpuCores: 32, memoryMb: 131072 },
  { count: 22, gpuCount: 2, model: 'P100', cpuCores: 64, memoryMb: 262144 },
  { count: 21, gpuCount: 8, model: 'V100M32', cpuCores: 96, memoryMb: 786432 },
  { count: 19, gpuCount: 1, model: 'V100M16', cpuCores: 8, memoryMb: 32768 },
  { count: 17, gpuCount: 4, model: 'T4', cpuCores: 96, memoryMb: 393216 },
  { count: 9, gpuCount: 4, model: 'V100M32', cpuCores: 48, memoryMb: 376832 },
  { count: 7, gpuCount: 8, model: 'V100M16', cpuCores: 64, memoryMb: 262144 },
  { count: 3, gpuCount: 1, model: 'P100', cpuCores: 8, memoryMb: 61440 },
  { count: 2, gpuCount: 1, model: 'A10', cpuCores: 128, memoryMb: 1048576 },
  { count: 2, gpuCount: 2, model: 'P100', cpuCores: 8, memoryMb: 61440 },
  { count: 1, gpuCount: 8, model: 'V100M16', cpuCores: 82, memoryMb: 344064 },
];

export interface GpuModelInfo {
  name: string;
  vramMb: number;
  computeCapability?: string;
}

/**
 * How the trace's model codes are advertised. Names and memory follow what nvidia-smi reports for these cards.
 * G2 and G3 are internal codes the trace does not disclose: they are advertised as such, with a VRAM size that is
 * a plausible guess (not data), and no compute capability.
 */
export const TRACE_GPU_MODELS: Record<TraceGpuModel, GpuModelInfo> = {
  T4: { name: 'Tesla T4', vramMb: 15360, computeCapability: '7.5' },
  P100: { name: 'Tesla P100-PCIE-16GB', vramMb: 16384, computeCapability: '6.0' },
  V100M16: { name: 'Tesla V100-SXM2-16GB', vramMb: 16160, computeCapability: '7.0' },
  V100M32: { name: 'Tesla V100-SXM2-32GB', vramMb: 32510, computeCapability: '7.0' },
  A10: { name: 'NVIDIA A10', vramMb: 23028, computeCapability: '8.6' },
  G2: { name: 'Alibaba G2 (undisclosed)', vramMb: 32768 },
  G3: { name: 'Alibaba G3 (undisclosed)', vramMb: 81920 },
};
