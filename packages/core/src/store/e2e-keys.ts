/**
 * The e2e-keys port (issue 13): nodes' signed X25519 encryption keys and the wrapped keys of encrypted jobs'
 * attempts (input data keys the buyer released, output keys the nodes announced). Only wrapped keys pass
 * through: the coordinator can open none of them.
 */
export interface NodeEncryptionKeyRecord {
  nodeId: string;
  publicKey: string;
  signature: string;
  updatedAt: number;
}

export interface AttemptKeyRecord {
  attemptId: string;
  jobId: string;
  nodeId: string;
  dataKey: string | null;
  /** 'attempt': released for this attempt; 'job': pre-wrapped in the spec for this node. */
  dataScope: 'attempt' | 'job' | null;
  releasedAt: number | null;
  outputKey: string | null;
  outputKeyAt: number | null;
}

/** An active attempt of an encrypted job still without its data key (for the key-wait timeout). */
export interface KeyWaitingAttempt {
  attemptId: string;
  jobId: string;
  nodeId: string;
  createdAt: number;
}

export interface E2eKeysPort {
  setNodeEncryptionKey(k: NodeEncryptionKeyRecord): Promise<void>;
  nodeEncryptionKeys(nodeIds: readonly string[]): Promise<Map<string, NodeEncryptionKeyRecord>>;
  /**
   * Store the wrapped data key of an attempt. First key wins: the same key again is `stored: false`; a different
   * one is a CONFLICT (a node must never see two keys for one attempt).
   */
  releaseDataKey(q: { attemptId: string; jobId: string; nodeId: string; wrappedKey: string; scope: 'attempt' | 'job'; now: number }): Promise<{ stored: boolean }>;
  /** Same rule for the output key a node announces. */
  setOutputKey(q: { attemptId: string; jobId: string; nodeId: string; wrappedKey: string; now: number }): Promise<{ stored: boolean }>;
  attemptKeys(attemptIds: readonly string[]): Promise<Map<string, AttemptKeyRecord>>;
  /** Attempt keys of these jobs (a job and its check runs). */
  attemptKeysOfJobs(jobIds: readonly string[]): Promise<AttemptKeyRecord[]>;
  /** Assigned attempts of encrypted jobs created before `before` with no data key, oldest first. */
  keyWaitingAttempts(before: number, limit: number): Promise<KeyWaitingAttempt[]>;
}
