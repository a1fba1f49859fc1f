/** Removes the containers and volumes this node created that no running attempt owns (left behind by a crash or a kill). */
import type Docker from 'dockerode';
import { LABEL_ATTEMPT, managedFilter } from './labels.js';

export interface ReconcileReport {
  containers: { id: string; name: string; attemptId: string | null; state: string }[];
  volumes: string[];
  /** What could not be removed, and why. */
  failures: string[];
}

export async function reconcileNode(docker: Docker, nodeId: string, keep: ReadonlySet<string> = new Set()): Promise<ReconcileReport> {
  const report: ReconcileReport = { containers: [], volumes: [], failures: [] };
  const filters = JSON.stringify(managedFilter(nodeId));
  const containers = await docker.listContainers({ all: true, filters });
  for (const c of containers) {
    if (keep.has(c.Id)) continue;
    const name = (c.Names[0] ?? c.Id).replace(/^\//, '');
    try {
      await docker.getContainer(c.Id).remove({ force: true, v: true });
      report.containers.push({ id: c.Id, name, attemptId: c.Labels[LABEL_ATTEMPT] ?? null, state: c.State });
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode !== 404) report.failures.push(`container ${name}: ${(e as Error).message}`);
    }
  }
  const { Volumes } = await docker.listVolumes({ filters });
  for (const v of Volumes ?? []) {
    try {
      await docker.getVolume(v.Name).remove();
      report.volumes.push(v.Name);
    } catch (e) {
      if ((e as { statusCode?: number }).statusCode !== 404) report.failures.push(`volume ${v.Name}: ${(e as Error).message}`);
    }
  }
  return report;
}
