/**
 * In-memory capacity index: each node's free GPUs, CPU and memory, updated incrementally on placement,
 * completion, heartbeat and node loss; rebuilt from the store at start. A cache, never the truth.
 */
import type { GpuDevice, GpuVendor } from '@gpux/protocol';
import type { NodeRecord } from './records.js';

export interface NodeCapacity {
  nodeId: string;
  gpus: GpuDevice[];
  freeGpus: Set<number>;
  cpuCores: number;
  freeCpu: number;
  memoryMb: number;
  freeMemoryMb: number;
  region: string | undefined;
  labels: Record<string, string>;
  schedulable: boolean;
  simulated: boolean;
}

export interface Reservation {
  attemptId: string;
  nodeId: string;
  gpuIndices: number[];
  cpu: number;
  memoryMb: number;
}

export class CapacityIndex {
  private readonly nodes = new Map<string, NodeCapacity>();
  private readonly reservations = new Map<string, Reservation>();
  /** Node ids by GPU vendor, so GPU jobs look only at nodes that can hold them. */
  private readonly byVendor = new Map<GpuVendor | 'none', Set<string>>();

  /** Add or refresh a node from its record; keeps reservations already held on it. */
  upsertNode(node: NodeRecord): void {
    const ad = node.advertisement;
    const held = [...this.reservations.values()].filter((r) => r.nodeId === node.id);
    const freeGpus = new Set(ad.gpus.map((g) => g.index));
    let freeCpu = ad.cpuCores;
    let freeMemoryMb = ad.memoryMb;
    for (const r of held) {
      for (const i of r.gpuIndices) freeGpus.delete(i);
      freeCpu -= r.cpu;
      freeMemoryMb -= r.memoryMb;
    }
    this.removeFromVendorSets(node.id);
    this.nodes.set(node.id, {
      nodeId: node.id,
      gpus: ad.gpus,
      freeGpus,
      cpuCores: ad.cpuCores,
      freeCpu,
      memoryMb: ad.memoryMb,
      freeMemoryMb,
      region: ad.region,
      labels: ad.labels,
      schedulable: node.status === 'online' && node.adminState === 'active',
      simulated: node.simulated,
    });
    const vendors = new Set<GpuVendor | 'none'>(ad.gpus.map((g) => g.vendor));
    vendors.add('none');
    for (const v of vendors) {
      const set = this.byVendor.get(v) ?? new Set<string>();
      set.add(node.id);
      this.byVendor.set(v, set);
    }
  }

  setSchedulable(nodeId: string, schedulable: boolean): void {
    const n = this.nodes.get(nodeId);
    if (n) n.schedulable = schedulable;
  }

  get(nodeId: string): NodeCapacity | undefined {
    return this.nodes.get(nodeId);
  }

  /** Candidate nodes for a job needing GPUs of `vendor` (undefined: any vendor; 'none': CPU only). */
  candidates(vendor: GpuVendor | undefined | 'none'): Iterable<NodeCapacity> {
    const ids = vendor === undefined ? this.nodes.keys() : (this.byVendor.get(vendor) ?? []);
    const nodes = this.nodes;
    return (function* () {
      for (const id of ids) {
        const n = nodes.get(id);
        if (n) yield n;
      }
    })();
  }

  reserve(r: Reservation): void {
    const n = this.nodes.get(r.nodeId);
    if (this.reservations.has(r.attemptId)) return;
    this.reservations.set(r.attemptId, r);
    if (!n) return;
    for (const i of r.gpuIndices) n.freeGpus.delete(i);
    n.freeCpu -= r.cpu;
    n.freeMemoryMb -= r.memoryMb;
  }

  release(attemptId: string): void {
    const r = this.reservations.get(attemptId);
    if (!r) return;
    this.reservations.delete(attemptId);
    const n = this.nodes.get(r.nodeId);
    if (!n) return;
    for (const i of r.gpuIndices) n.freeGpus.add(i);
    n.freeCpu += r.cpu;
    n.freeMemoryMb += r.memoryMb;
  }

  usage(nodeId: string): { gpusBusy: number; activeAttempts: number } {
    const n = this.nodes.get(nodeId);
    let activeAttempts = 0;
    for (const r of this.reservations.values()) if (r.nodeId === nodeId) activeAttempts++;
    return { gpusBusy: n ? n.gpus.length - n.freeGpus.size : 0, activeAttempts };
  }

  get size(): number {
    return this.nodes.size;
  }

  private removeFromVendorSets(nodeId: string): void {
    for (const set of this.byVendor.values()) set.delete(nodeId);
  }
}
