/** Labels on everything the docker executor creates, so a restarted agent can find and remove what a crash left behind. */

export const LABEL_MANAGED = 'gpux.managed';
export const LABEL_NODE = 'gpux.node';
export const LABEL_JOB = 'gpux.job';
export const LABEL_ATTEMPT = 'gpux.attempt';

export function managedLabels(nodeId: string, jobId: string, attemptId: string): Record<string, string> {
  return { [LABEL_MANAGED]: 'true', [LABEL_NODE]: nodeId, [LABEL_JOB]: jobId, [LABEL_ATTEMPT]: attemptId };
}

/** A Docker list filter for this node's managed objects. */
export function managedFilter(nodeId: string): { label: string[] } {
  return { label: [`${LABEL_MANAGED}=true`, `${LABEL_NODE}=${nodeId}`] };
}

/** Container names allow [a-zA-Z0-9][a-zA-Z0-9_.-]+; the suffix keeps a re-delivered attempt from colliding. */
export function containerName(attemptId: string, suffix: string): string {
  return `gpux-${attemptId.replace(/[^a-zA-Z0-9_.-]/g, '_')}-${suffix}`;
}
