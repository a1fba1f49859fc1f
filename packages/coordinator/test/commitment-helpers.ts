/**
 * Test helpers for signed result commitments (issue 11): report() leaves the commitment for TestAgent to
 * fill in, since only the agent knows the assignment (job, inputs) and holds the node key.
 */
import { buildCommitment, type InputFile, outputRootDigest, type ResultCommitment, type ResultReport, signCommitment } from '@gpux/protocol';

/** Marks a report whose commitment TestAgent.result() builds and signs from the assignment. */
export const UNSIGNED = '';

export const placeholderCommitment = (outputDigest: string, exitCode: number | null): ResultCommitment => ({
  v: 1,
  jobId: '?',
  attemptId: '?',
  nodeId: '?',
  inputDigest: '0'.repeat(64),
  outputDigest,
  exitCode,
  metricsDigest: '0'.repeat(64),
});

export interface KnownAssignment {
  jobId: string;
  spec: { inputs?: InputFile[]; encryption?: unknown };
}

/**
 * The report as an honest agent sends it: committed to its own exit code, output digest and metrics, for
 * the attempt, job and inputs it was assigned. A report that already carries a signature is sent as built.
 */
export function completeReport(agent: { nodeId: string; keys: { privateKeyPem: string } }, attemptId: string, r: ResultReport, known: KnownAssignment | undefined): ResultReport {
  if (r.commitmentSignature !== UNSIGNED) return r;
  const commitment = buildCommitment({
    jobId: known?.jobId ?? 'unknown-job',
    attemptId,
    nodeId: agent.nodeId,
    inputs: known?.spec.inputs ?? [],
    outputDigest: r.outputDigest,
    exitCode: r.exitCode,
    metrics: r.metrics,
    // An encrypted job's commitment also covers the outputs as stored (their ciphertext digests).
    ...(known?.spec.encryption ? { ciphertextDigest: outputRootDigest(r.outputs ?? []) } : {}),
  });
  return { ...r, commitment, commitmentSignature: signCommitment(commitment, agent.keys.privateKeyPem) };
}
