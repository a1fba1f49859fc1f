/** The Executor port: how a node runs one attempt (process, docker, simulated; later slurm, kubernetes). */
import type { JobSpec, LogStream, OutputFile } from '@gpux/protocol';

export interface ExecutionRequest {
  attemptId: string;
  jobId: string;
  spec: JobSpec;
  /** Indices of the GPUs assigned to this attempt (the only ones it may see). */
  gpuIndices: number[];
  gpuUuids: string[];
}

export interface ExecutionOutcome {
  outcome: 'succeeded' | 'failed' | 'cancelled';
  /** The program's exit code; null when it never ran to an exit (executor error, killed on timeout/cancel). */
  exitCode: number | null;
  error: string | null;
  outputs: OutputFile[];
  outputDigest: string;
  durationMs: number;
}

export type LogSink = (stream: LogStream, data: string) => void;

/** Job events an executor reports for the job's history (progress throttled by the executor to one per few seconds). */
export type ExecutionEventType = 'image.pull.started' | 'image.pull.progress' | 'image.pull.finished' | 'image.pull.failed';
export type EventSink = (type: ExecutionEventType, data: Record<string, unknown>) => void;

export type StopReason = 'cancelled' | 'lease-lost' | 'shutdown';

export interface Execution {
  readonly done: Promise<ExecutionOutcome>;
  /** Stop the attempt; `done` then resolves with outcome cancelled. Safe to call twice. */
  stop(reason: StopReason): Promise<void>;
}

export interface Executor {
  readonly kind: 'process' | 'docker' | 'simulated';
  start(req: ExecutionRequest, log: LogSink, events?: EventSink): Promise<Execution>;
}
