/** Which GPU devices a container gets, per vendor: NVIDIA through device requests by UUID, AMD through /dev/kfd and render nodes. */
import type { GpuDevice } from '@gpux/protocol';
import type Docker from 'dockerode';

export type GpuHostConfig = Pick<Docker.HostConfig, 'DeviceRequests' | 'Devices' | 'GroupAdd'>;

export interface AmdDeviceOptions {
  /** The render node of one GPU. Default /dev/dri/renderD<128 + index> (the DRM minor order of amdgpu). */
  renderNode?(gpu: GpuDevice): string;
  /** The owning group of a device node on the host, so the container user may open it. Unknown: undefined. */
  deviceGid?(path: string): number | undefined;
}

/**
 * The device part of a container's HostConfig for the GPUs assigned to one attempt (no GPUs: nothing at all).
 * NVIDIA: one device request for exactly the assigned UUIDs (the NVIDIA container toolkit mounts only those).
 * AMD: /dev/kfd (compute) plus only the assigned GPUs' render nodes; ROCm sees a GPU only through its render node.
 */
export function gpuHostConfig(assigned: GpuDevice[], amd: AmdDeviceOptions = {}): GpuHostConfig {
  const nvidia = assigned.filter((g) => g.vendor === 'nvidia');
  const amdGpus = assigned.filter((g) => g.vendor === 'amd');
  const config: GpuHostConfig = {};
  if (nvidia.length > 0) {
    config.DeviceRequests = [{ Driver: 'nvidia', Count: 0, DeviceIDs: nvidia.map((g) => g.uuid), Capabilities: [['gpu']], Options: {} }];
  }
  if (amdGpus.length > 0) {
    const renderNode = amd.renderNode ?? ((g: GpuDevice) => `/dev/dri/renderD${128 + g.index}`);
    const paths = ['/dev/kfd', ...amdGpus.map(renderNode)];
    config.Devices = paths.map((p) => ({ PathOnHost: p, PathInContainer: p, CgroupPermissions: 'rwm' }));
    // Numeric gids: group names like "render" would have to exist in the image's /etc/group.
    const gids = new Set<number>();
    for (const p of paths) {
      const gid = amd.deviceGid?.(p);
      if (gid !== undefined && gid !== 0) gids.add(gid);
    }
    config.GroupAdd = gids.size > 0 ? [...gids].sort((a, b) => a - b).map(String) : ['video', 'render'];
  }
  return config;
}

/**
 * GPU visibility inside the container. Only the assigned GPUs exist there, numbered 0..n-1, so the CUDA/ROCm/HIP
 * variables hold those numbers. NVIDIA_VISIBLE_DEVICES is always set (UUIDs, or empty for none): CUDA images set it
 * to "all", which would hand every GPU to the job on hosts where the NVIDIA runtime is the default.
 */
export function containerGpuEnv(assigned: GpuDevice[]): Record<string, string> {
  const local = assigned.map((_, i) => i).join(',');
  const nvidia = assigned.filter((g) => g.vendor === 'nvidia').map((g) => g.uuid);
  return {
    CUDA_VISIBLE_DEVICES: local,
    NVIDIA_VISIBLE_DEVICES: nvidia.join(','),
    ROCR_VISIBLE_DEVICES: local,
    HIP_VISIBLE_DEVICES: local,
  };
}
