/**
 * What an attempt's end does to its node's track record (scheduler/node-stats.ts has the rules): the node
 * ran the job to an end (succeeded, or the program's own exit code) is a success; lost, or failed with no
 * exit code, an infrastructure failure; cancelled, nothing. A success with a runtime also teaches the
 * fleet's runtime expectation of the job shape on the node's GPU class and is compared with it.
 */
import type { JobSpec } from '@gpux/protocol';
import { applyOutcome, type NodeOutcome, type NodeStats, type NodeStatsPolicy, runtimeShapeKey } from '../scheduler/node-stats.js';
import type { ReputationEventKind } from '../trust/reputation.js';
import type { PlannedEvent } from './settle.js';
import type { RuntimeExpectation } from './snapshot.js';

/** A running mean that turns into an exponential one after this many samples (recent runs count more). */
export const EXPECTATION_WINDOW = 50;

export interface NodeEnd {
  outcome: 'succeeded' | 'failed' | 'cancelled' | 'lost';
  exitCode: number | null;
  /** The runtime the node reported; null when the coordinator ended the attempt. */
  durationMs: number | null;
}

/** How the end counts for the node: null when it does not count (cancelled). */
export function nodeOutcomeKind(e: NodeEnd): 'success' | 'failure' | null {
  if (e.outcome === 'cancelled') return null;
  if (e.outcome === 'succeeded') return 'success';
  return e.outcome === 'failed' && e.exitCode !== null ? 'success' : 'failure';
}

/**
 * The end's reputation event (trust/reputation.ts): the node ran the job to an end (succeeded, or the
 * program's own exit code) → completed; an abandoned lease (lease-penalty.ts, the same cases as the fee) →
 * lease-lost; anything else (cancelled, an executor error, a lease the coordinator ended) → none. Verdicts on
 * the result (audits, canaries) are the verification step's.
 */
export function reputationEventOf(e: NodeEnd, abandonedLease: boolean): ReputationEventKind | null {
  if (e.outcome === 'succeeded' || (e.outcome === 'failed' && e.exitCode !== null)) return 'completed';
  return abandonedLease ? 'lease-lost' : null;
}

/** Does the end compare the runtime with the expectation (a success with a positive runtime)? */
export function teachesExpectation(e: NodeEnd): boolean {
  return e.outcome === 'succeeded' && e.durationMs !== null && e.durationMs > 0;
}

/** The runtime expectations' key: the job shape on a GPU class ('cpu' for CPU-only). */
export function runtimeExpectationKey(spec: Pick<JobSpec, 'image' | 'command' | 'args' | 'resources'>, gpuClass: string): string {
  return `${runtimeShapeKey(spec)}@${gpuClass}`;
}

export interface NodeOutcomePlan {
  nodeId: string;
  stats: NodeStats;
  /** Cordon the node (only if it is still active: the store's update is conditional) with this event. */
  cordon: { reason: string; event: PlannedEvent } | null;
}

export interface NodeOutcomeResult {
  node: NodeOutcomePlan | null;
  /** The expectation to write (learned from this run); null: none. */
  expectation: RuntimeExpectation | null;
}

export function planNodeOutcome(
  nodeId: string,
  e: NodeEnd,
  read: { stats?: NodeStats; expectation?: RuntimeExpectation | null },
  now: number,
  policy: NodeStatsPolicy,
): NodeOutcomeResult {
  const kind = nodeOutcomeKind(e);
  if (kind === null) return { node: null, expectation: null };
  if (!read.stats) throw new Error(`invariant: the end of an attempt on node ${nodeId} needs the node's track record`);
  let outcome: NodeOutcome = { kind };
  let expectation: RuntimeExpectation | null = null;
  if (kind === 'success' && teachesExpectation(e)) {
    if (read.expectation === undefined) throw new Error(`invariant: a success on node ${nodeId} needs the runtime expectation (or null)`);
    const x = read.expectation;
    const d = e.durationMs as number;
    if (x) {
      if (x.samples >= policy.minExpectationSamples && x.meanMs > 0) outcome = { kind: 'success', runtimeRatio: d / x.meanMs };
      expectation = { key: x.key, samples: x.samples + 1, meanMs: x.meanMs + (d - x.meanMs) / Math.min(x.samples + 1, EXPECTATION_WINDOW) };
    }
  }
  const { stats, cordonReason } = applyOutcome(read.stats, outcome, now, policy);
  const cordon =
    cordonReason === null
      ? null
      : {
          reason: cordonReason,
          event: {
            at: now,
            subject: 'node' as const,
            subjectId: nodeId,
            type: 'node.auto_cordoned',
            data: { reason: cordonReason, failures: stats.recentFailures.length, windowMs: policy.cordonWindowMs },
          },
        };
  return { node: { nodeId, stats, cordon }, expectation };
}
