/**
 * A gang member's place in its gang, as environment variables for the executor: GPUX_RANK (0-based),
 * GPUX_WORLD_SIZE, GPUX_PEERS (every member's address in rank order, comma-separated: its hostname, or its
 * node id when it advertised none) and GPUX_MASTER_ADDR (rank 0's). The spec's own env wins on a clash.
 */
import type { Assignment, JobSpec } from '@gpux/protocol';

export function withGangEnv(spec: JobSpec, gang: Assignment['gang']): JobSpec {
  if (!gang) return spec;
  const peers = [...gang.peers].sort((a, b) => a.rank - b.rank).map((p) => p.address ?? p.nodeId);
  const env = { GPUX_RANK: String(gang.rank), GPUX_WORLD_SIZE: String(gang.worldSize), GPUX_PEERS: peers.join(','), GPUX_MASTER_ADDR: peers[0] ?? '' };
  return { ...spec, env: { ...env, ...spec.env } };
}
