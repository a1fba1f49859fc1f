/** Rebuild the capacity index from the store at start: every node, then every active attempt's reservation. */
import { jobCpu, type JobRecord, jobMemoryMb } from '@gpux/core';
import type { Runtime } from '../runtime.js';

const PAGE = 1000;

export async function rebuildIndex(rt: Runtime): Promise<{ nodes: number; attempts: number }> {
  const { store, index, offlineNodes } = rt;
  let nodes = 0;
  let cursor: string | undefined;
  do {
    const page = await store.listNodes({ limit: PAGE, ...(cursor ? { cursor } : {}) });
    for (const n of page.items) {
      index.upsertNode(n);
      if (n.status === 'offline') offlineNodes.add(n.id);
      nodes++;
    }
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  const jobs = new Map<string, JobRecord | undefined>();
  const active = await store.listActiveAttempts();
  for (const a of active) {
    if (!jobs.has(a.jobId)) jobs.set(a.jobId, await store.getJob(a.jobId));
    const job = jobs.get(a.jobId);
    index.reserve({ attemptId: a.id, nodeId: a.nodeId, gpuIndices: a.gpuIndices, cpu: job ? jobCpu(job) : 1, memoryMb: job ? jobMemoryMb(job) : 0 });
  }
  return { nodes, attempts: active.length };
}
