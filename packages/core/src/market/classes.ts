/**
 * Market classes: what a price is quoted for. A GPU's class is `vendor-model-VRAMgb`
 * (`nvidia-h100-80gb`, `nvidia-rtx4090-24gb`, `amd-mi300x-192gb`); CPU-only work is the class `cpu`, priced
 * per job-hour. The catalogue gives known classes a starting price and a floor; a class first seen on a
 * node starts at the default.
 */
import type { GpuDevice } from '@gpux/protocol';
import { normalizeGpuModel } from '../scheduler/gpu-class.js';

export const CPU_CLASS = 'cpu';

/** Words that name a product line, form factor or memory type rather than the GPU. */
const NOISE = /^(geforce|tesla|quadro|instinct|radeon|pro|hbm\d*e?|pcie|sxm\d*|nvl|\d+gb|gb)$/;

/** `NVIDIA H100 80GB HBM3` with 81559 MiB → `nvidia-h100-80gb`. */
export function marketClassOf(gpu: Pick<GpuDevice, 'vendor' | 'model' | 'vramMb'>): string {
  const words = normalizeGpuModel(gpu.model)
    .split(/[\s_-]+/)
    .filter((w) => w !== '' && !NOISE.test(w));
  const model = words.join('').replace(/[^a-z0-9]/g, '') || 'unknown';
  return `${gpu.vendor}-${model}-${Math.round(gpu.vramMb / 1024)}gb`;
}

export interface ClassPricing {
  /** Price per GPU-hour (per job-hour for `cpu`) when the class first appears, minor units. */
  initial: number;
  /** The index never falls below this. */
  floor: number;
}

const usd = (x: number) => Math.round(x * 1_000_000);

/** Starting prices, USDC minor units per GPU-hour, near public on-demand rates of late 2026. */
export const CLASS_CATALOGUE: Readonly<Record<string, ClassPricing>> = {
  'nvidia-h200-141gb': { initial: usd(2.5), floor: usd(0.5) },
  'nvidia-h200-140gb': { initial: usd(2.5), floor: usd(0.5) },
  'nvidia-h100-80gb': { initial: usd(2.0), floor: usd(0.4) },
  'nvidia-a100-80gb': { initial: usd(1.2), floor: usd(0.25) },
  'nvidia-a100-40gb': { initial: usd(0.9), floor: usd(0.2) },
  'nvidia-l40s-48gb': { initial: usd(0.8), floor: usd(0.15) },
  'nvidia-rtx4090-24gb': { initial: usd(0.35), floor: usd(0.07) },
  'nvidia-rtx3090-24gb': { initial: usd(0.2), floor: usd(0.04) },
  'amd-mi300x-192gb': { initial: usd(1.8), floor: usd(0.35) },
  'amd-mi250x-128gb': { initial: usd(0.9), floor: usd(0.2) },
  [CPU_CLASS]: { initial: usd(0.05), floor: usd(0.01) },
};

export const DEFAULT_CLASS_PRICING: ClassPricing = { initial: usd(0.5), floor: usd(0.05) };

export function classPricing(cls: string, overrides: Readonly<Record<string, ClassPricing>> = {}): ClassPricing {
  return overrides[cls] ?? CLASS_CATALOGUE[cls] ?? DEFAULT_CLASS_PRICING;
}
