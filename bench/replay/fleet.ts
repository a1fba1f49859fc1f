/**
 * Simulated provider fleets from a node list: the rows as they are, or scaled to N nodes following the same
 * mix (systematic sampling of the rows, then shuffled). Records are built directly (no schema parse: 50,000
 * nodes). GPU model codes of the Alibaba trace are advertised as nvidia-smi names them; an unknown code is
 * advertised as itself with 16 GiB.
 */
import type { NodeRecord, Random } from '@gpux/core';
import type { GpuDevice, NodeAdvertisement } from '@gpux/protocol';
import type { NodeRow } from './trace-csv.js';

const MODELS: Record<string, { name: string; vramMb: number }> = {
  T4: { name: 'Tesla T4', vramMb: 15360 },
  P100: { name: 'Tesla P100-PCIE-16GB', vramMb: 16384 },
  V100M16: { name: 'Tesla V100-SXM2-16GB', vramMb: 16160 },
  V100M32: { name: 'Tesla V100-SXM2-32GB', vramMb: 32510 },
  A10: { name: 'NVIDIA A10', vramMb: 23028 },
  G2: { name: 'Alibaba G2 (undisclosed)', vramMb: 32768 },
  G3: { name: 'Alibaba G3 (undisclosed)', vramMb: 81920 },
};

export const advertisedModel = (code: string) => MODELS[code] ?? { name: code, vramMb: 16384 };

export function nodeRecord(id: string, row: NodeRow, region: string | undefined, now: number): NodeRecord {
  const m = advertisedModel(row.model);
  const gpus: GpuDevice[] = Array.from({ length: row.gpus }, (_, i) => ({ index: i, uuid: `SIM-${id}-${i}`, vendor: 'nvidia', model: m.name, vramMb: m.vramMb }));
  const advertisement: NodeAdvertisement = {
    hostname: id,
    agentVersion: 'bench',
    os: 'linux',
    arch: 'x64',
    cpuCores: row.cpuCores,
    memoryMb: row.memoryMb,
    gpus,
    docker: { available: false, gpuRuntime: 'none' },
    executors: ['simulated'],
    labels: { model: row.model },
    simulated: true,
    ...(region ? { region } : {}),
  };
  return { id, publicKey: id, advertisement, status: 'online', adminState: 'active', simulated: true, providerId: null, registeredAt: now, lastHeartbeatAt: now };
}

/** `n` rows following the mix of `rows` (each within one of n × its share), shuffled. */
export function scaleRows(rows: readonly NodeRow[], n: number, random: Random): NodeRow[] {
  const out: NodeRow[] = [];
  const offset = random.next();
  for (let i = 0; i < n; i++) out.push(rows[Math.min(rows.length - 1, Math.floor(((i + offset) / n) * rows.length))] as NodeRow);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random.next() * (i + 1));
    [out[i], out[j]] = [out[j] as NodeRow, out[i] as NodeRow];
  }
  return out;
}

export function buildFleet(rows: readonly NodeRow[], n: number | undefined, regions: readonly string[], random: Random, now: number): NodeRecord[] {
  const picked = n === undefined ? [...rows] : scaleRows(rows, n, random);
  return picked.map((row, i) => nodeRecord(`node-${String(i).padStart(6, '0')}`, row, regions.length ? regions[i % regions.length] : undefined, now));
}

export { seededRandom } from '@gpux/core';
