/**
 * GPU classes: the unit the capacity index is keyed by. A class is vendor + normalized model name + VRAM
 * rounded to whole GiB, so "NVIDIA H100 80GB HBM3" on two drivers is one class and an 80 GB and a 94 GB H100
 * are two. A job's vendor/models/minVram filter is matched against classes (dozens), never against nodes.
 */
import type { GpuDevice, GpuVendor } from '@gpux/protocol';

export interface GpuClassInfo {
  /** `vendor|model|vramGb`, e.g. `nvidia|h100 80gb hbm3|80`. */
  key: string;
  vendor: GpuVendor;
  /** Lower case, vendor word removed, spaces collapsed. */
  model: string;
  vramGb: number;
  /** What `models` filters match against (case-insensitive substrings): `vendor model`. */
  matchName: string;
}

/** "NVIDIA  GeForce RTX 4090" → "geforce rtx 4090"; "AMD Instinct MI300X" → "instinct mi300x". */
export function normalizeGpuModel(raw: string): string {
  return raw
    .toLowerCase()
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^(nvidia|amd)\s+/, '');
}

const classCache = new Map<string, GpuClassInfo>();

export function gpuClassOf(gpu: Pick<GpuDevice, 'vendor' | 'model' | 'vramMb'>): GpuClassInfo {
  const model = normalizeGpuModel(gpu.model);
  const vramGb = Math.round(gpu.vramMb / 1024);
  const key = `${gpu.vendor}|${model}|${vramGb}`;
  let c = classCache.get(key);
  if (!c) {
    c = { key, vendor: gpu.vendor, model, vramGb, matchName: `${gpu.vendor} ${model}` };
    classCache.set(key, c);
  }
  return c;
}

/** The GPU part of a job's request, lowered once. */
export interface GpuWant {
  vendor?: GpuVendor | undefined;
  /** Lower-case substrings; any may match. */
  models?: readonly string[] | undefined;
  minVramMb?: number | undefined;
}

/** Which GPU filter rejects the class, or null when it is acceptable. Order: vendor, model, VRAM. */
export function classRejection(cls: GpuClassInfo, want: GpuWant): 'gpuVendor' | 'gpuModel' | 'gpuVram' | null {
  if (want.vendor !== undefined && cls.vendor !== want.vendor) return 'gpuVendor';
  if (want.models !== undefined && !want.models.some((m) => cls.matchName.includes(m))) return 'gpuModel';
  // vramGb is rounded; compare the class's nominal size with a little slack so "80" accepts an 80 GB card (81,559 MiB).
  if (want.minVramMb !== undefined && cls.vramGb * 1024 + 512 < want.minVramMb) return 'gpuVram';
  return null;
}
