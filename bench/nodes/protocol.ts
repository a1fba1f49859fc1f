/** Messages between the bench (parent) and its node-worker processes, over the child_process IPC channel. */

export interface WorkerInit {
  cmd: 'init';
  /** Worker number (for seeds) and the coordinator URLs; node i talks to urls[i % urls.length]. */
  worker: number;
  urls: string[];
  intervalMs: number;
  /** Each wait is intervalMs × (1 ± jitter), uniform. */
  jitter: number;
  /** Keep-alive sockets per URL in this worker: a real fleet has one per node, this bounds the generator's. */
  maxSockets: number;
  /** Per-request timeout, as the agent's (30 s). */
  timeoutMs: number;
  /** Total nodes of the run's largest step: every worker draws the same fleet shapes from it. */
  fleetSize: number;
  seed: number;
}

/** Registers nodes [from, from + count) (this worker's share) and starts their heartbeats. */
export interface WorkerAdd {
  cmd: 'add';
  indices: number[];
  enrollmentToken: string | null;
  concurrency: number;
}

/** Starts a measurement window (resets the samples); `collect` ends it. */
export interface WorkerMark {
  cmd: 'mark';
}
export interface WorkerCollect {
  cmd: 'collect';
}
export interface WorkerStop {
  cmd: 'stop';
}

export type ToWorker = WorkerInit | WorkerAdd | WorkerMark | WorkerCollect | WorkerStop;

export interface AddResult {
  registered: number;
  failed: number;
  /** First few registration errors, for the report. */
  errors: string[];
  ms: number;
}

export interface WindowResult {
  /** Heartbeat round trips (ms, send → whole answer read), every heartbeat answered in the window. */
  latencies: number[];
  /** How late heartbeats were sent after they were due (ms): the generator's own lag. */
  lagP99: number;
  sent: number;
  ok: number;
  /** Errors by kind: HTTP status or network error code. */
  errors: Record<string, number>;
  /** Heartbeats not sent because the node's previous one was still waiting for its answer (an agent sends one at a time). */
  skipped: number;
  cpuMs: number;
  wallMs: number;
  rssBytes: number;
}

export type FromWorker = { reply: 'ready' } | { reply: 'added'; result: AddResult } | { reply: 'marked' } | { reply: 'window'; result: WindowResult } | { reply: 'stopped' };
