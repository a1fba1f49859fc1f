/** Runs one assignment: start it on the coordinator, execute, ship logs, report the result until it is accepted. */
import type { Clock, Execution, ExecutionOutcome, Executor, Logger, Random, StopReason } from '@gpux/core';
import { type Assignment, buildCommitment, outputRootDigest, type ResultReport, type Seal, type StartAttemptResponse } from '@gpux/protocol';
import { MAX_LOG_PLAINTEXT_BYTES } from '@gpux/protocol/e2e';
import { CoordinatorApiError, type CoordinatorClient, isUnreachable } from '../coordinator-client.js';
import { attemptDataPlane, type DataPlaneRequest } from '../data/attempt-data.js';
import { type CheckpointRequest, CheckpointKeeper } from '../data/checkpoints.js';
import { AttemptE2e } from '../e2e/attempt-e2e.js';
import { awaitDataKey, E2eRefusal } from '../e2e/attempt-keys.js';
import { failedOutcome } from '../executors/process-executor.js';
import { Backoff, sleep } from './backoff.js';
import type { TakeUp } from './carried-starts.js';
import { withGangEnv } from './gang-env.js';
import { EventShipper } from './event-shipper.js';
import { LogShipper } from './log-shipper.js';

export interface AttemptContext {
  client: CoordinatorClient;
  executor: Executor;
  clock: Clock;
  random: Random;
  logger: Logger;
  gpuUuids(indices: number[]): string[];
  /** Once the agent is stopping: the clock time after which retries give up. */
  giveUpAt(): number | null;
  /** Aborts when the agent stops, cutting retry waits short. */
  stopping: AbortSignal;
  /** Log bytes shipped per attempt (then "[logs truncated]"). Default the LogShipper's. */
  maxLogBytes?: number;
  /** True when the cancel order's seal verifies with a trusted coordinator key (issue 19); a false cancel is ignored. */
  checkCancel(attemptId: string, seal: Seal | undefined): Promise<boolean>;
  /** The node allows jobs network (--allow-network): only then are URL inputs fetched (issue 13). Default false. */
  allowNetwork?: boolean;
  /** Fetch for URL inputs. Default the global fetch. */
  urlFetch?: typeof fetch;
  /**
   * Data-plane transfers: first wait after a failure (doubles) and the largest upload chunk. Defaults: 500 ms, the
   * server's. checkpointEveryMs: tests only, instead of the spec's checkpoint.everySeconds.
   */
  transfer?: { retryDelayMs?: number; chunkBytes?: number; checkpointEveryMs?: number };
  /** Encrypted jobs: longest wait for the data key (default MAX_KEY_WAIT_MS; the coordinator's own bound usually ends it first) and the first retry delay. */
  keyWait?: { maxWaitMs?: number; minDelayMs?: number };
  /**
   * Queue the start for the agent's next work exchange (node-agent.ts); absent, or answered explicit: POST …/start.
   * Called before run()'s first await, so the exchange after a delivery carries all of its starts.
   */
  carryStart?(attemptId: string, leaseExpiresAt: number): Promise<TakeUp>;
}

/** The coordinator no longer holds this attempt (finished, lost, unknown; 410: it takes no more logs/events): drop it. */
export function isGone(e: unknown): boolean {
  return e instanceof CoordinatorApiError && (e.status === 404 || e.status === 409 || e.status === 410);
}

export class AttemptRunner {
  /**
   * True when `start` gave up because the coordinator stayed unreachable: the attempt never ran, so a
   * later re-delivery of the same assignment must be taken up again, not ignored as finished.
   */
  neverStarted = false;
  private stopReason: StopReason | null = null;
  private execution: Execution | null = null;
  private readonly log: Logger;
  /** Aborts the attempt's input downloads and output uploads once it is stopped. */
  private readonly transfers = new AbortController();
  /** An encrypted job's keys (issue 13), once its data key opened. */
  private e2e: AttemptE2e | undefined;

  constructor(
    readonly assignment: Assignment,
    private readonly ctx: AttemptContext,
  ) {
    this.log = ctx.logger.child({ attemptId: assignment.attemptId, jobId: assignment.jobId });
  }

  /** Asks the attempt to stop; `run()` then reports it (cancelled, or failed for a shutdown). */
  stop(reason: StopReason): void {
    if (this.stopReason) return;
    this.stopReason = reason;
    this.transfers.abort();
    void this.execution?.stop(reason);
  }

  async run(): Promise<void> {
    const { attemptId } = this.assignment;
    // An encrypted job runs only with its data key, opened while the attempt is still assigned (else: refused).
    if (this.assignment.spec.encryption && !(await this.openEncryption())) return;
    const started = await this.begin();
    if (started === undefined) return;
    if (started.cancel && (await this.ctx.checkCancel(attemptId, started.cancelSeal))) this.stopReason ??= 'cancelled';
    if (this.stopReason) {
      await this.report(this.toReport(this.stoppedOutcome(), { logBytes: 0, logsTruncated: false }));
      return;
    }
    this.log.info({ command: this.assignment.spec.command[0], gpus: this.assignment.gpuIndices }, 'attempt started');

    const shipper = new LogShipper({
      send: (entries) => this.ctx.client.logs(attemptId, entries),
      onCancel: (seal) => void this.cancelIfSealed(seal),
      isGone,
      clock: this.ctx.clock,
      logger: this.log,
      maxBytes: this.ctx.maxLogBytes,
      ...(this.e2e ? { encrypt: this.e2e.logData.bind(this.e2e), encryptMaxBytes: MAX_LOG_PLAINTEXT_BYTES } : {}),
    });
    const events = new EventShipper({
      send: (batch) => this.ctx.client.events(attemptId, { events: batch }),
      isGone,
      clock: this.ctx.clock,
      logger: this.log,
    });
    let outcome: ExecutionOutcome;
    try {
      const { jobId, gpuIndices } = this.assignment;
      const spec = withGangEnv(this.assignment.spec, this.assignment.gang);
      const { checkpointEveryMs, ...transfer } = this.ctx.transfer ?? {};
      const dataPlane = attemptDataPlane({
        client: this.ctx.client,
        attemptId,
        jobNetwork: spec.network === true,
        nodeAllowsNetwork: this.ctx.allowNetwork === true,
        ...(this.ctx.urlFetch ? { urlFetch: this.ctx.urlFetch } : {}),
        ...transfer,
        signal: this.transfers.signal,
        logger: this.log,
        ...(this.e2e ? { e2e: this.e2e } : {}),
      });
      const req: DataPlaneRequest & CheckpointRequest = { attemptId, jobId, spec, gpuIndices, gpuUuids: this.ctx.gpuUuids(gpuIndices), dataPlane };
      if (spec.checkpoint) {
        req.checkpoints = new CheckpointKeeper({
          client: this.ctx.client,
          attemptId,
          from: this.assignment.checkpoint,
          everyMs: checkpointEveryMs ?? spec.checkpoint.everySeconds * 1000,
          clock: this.ctx.clock,
          signal: this.transfers.signal,
          giveUpAt: () => this.ctx.giveUpAt(),
          logger: this.log,
          ...transfer,
          ...(this.e2e ? { e2e: this.e2e } : {}),
        });
      }
      this.execution = await this.ctx.executor.start(
        req,
        (s, d) => shipper.push(s, d),
        (type, data) => events.push(type, data),
      );
      if (this.stopReason) void this.execution.stop(this.stopReason);
      outcome = await this.execution.done;
    } catch (e) {
      outcome = failedOutcome(`executor failed: ${(e as Error).message}`, 0);
    }
    const flushBy = Math.min(this.ctx.clock.now() + 10_000, this.ctx.giveUpAt() ?? Number.POSITIVE_INFINITY);
    await Promise.all([shipper.close(flushBy), events.close(flushBy)]);
    // Stopped before the program ran (its inputs were still downloading, say): reported as stopped, not as that failure.
    if (this.stopReason === 'shutdown' || (this.stopReason && outcome.outcome === 'failed' && outcome.exitCode === null)) outcome = { ...outcome, ...this.stoppedOutcome() };
    this.log.info({ outcome: outcome.outcome, exitCode: outcome.exitCode, error: outcome.error }, 'attempt finished');
    await this.report(this.toReport(outcome, shipper.metrics));
  }

  /**
   * The coordinator starts the attempt: through the agent's next work exchange, or on its own (an encrypted job,
   * after its key exchange; a coordinator without the exchange). Undefined: do not run it.
   */
  private async begin(): Promise<StartAttemptResponse | undefined> {
    const { attemptId, leaseExpiresAt } = this.assignment;
    const carried: TakeUp = this.assignment.spec.encryption || !this.ctx.carryStart ? { kind: 'explicit' } : await this.ctx.carryStart(attemptId, leaseExpiresAt);
    switch (carried.kind) {
      case 'started':
        return carried.res;
      case 'refused':
        this.log.info({ err: carried.message }, 'start: the coordinator has ended this attempt; dropping it');
        return undefined;
      case 'gave-up':
        this.log.warn('start: giving up, the coordinator stayed unreachable');
        this.neverStarted = true;
        return undefined;
    }
    let gaveUp = false;
    const started = await this.retry('start', () => this.ctx.client.start(attemptId), leaseExpiresAt, () => {
      gaveUp = true;
    });
    if (started === undefined) this.neverStarted = gaveUp;
    return started;
  }

  /**
   * Encrypted jobs (issue 13): wait for the data key and open it, make the attempt's output key and announce it
   * (wrapped to the buyer) before any log. A key that cannot be had or opened: the attempt is refused, never run.
   * False: do not run (refused, stopped, or the coordinator ended the attempt).
   */
  private async openEncryption(): Promise<boolean> {
    const { attemptId, jobId, spec } = this.assignment;
    const buyerKey = spec.encryption?.buyerKey ?? '';
    let dataKey: Uint8Array | null;
    try {
      dataKey = await awaitDataKey({
        client: this.ctx.client,
        assignment: this.assignment,
        encryption: this.ctx.client.encryption,
        clock: this.ctx.clock,
        random: this.ctx.random,
        logger: this.log,
        signal: this.transfers.signal,
        ...(this.ctx.keyWait?.maxWaitMs === undefined ? {} : { maxWaitMs: this.ctx.keyWait.maxWaitMs }),
        ...(this.ctx.keyWait?.minDelayMs === undefined ? {} : { minDelayMs: this.ctx.keyWait.minDelayMs }),
      });
      if (dataKey) this.e2e = await AttemptE2e.open({ jobId, attemptId, buyerKey }, dataKey);
    } catch (e) {
      const reason = e instanceof E2eRefusal ? e.message : `the attempt's keys could not be set up: ${(e as Error).message}`;
      await this.refuse(reason);
      return false;
    }
    if (!this.e2e) {
      // Stopped while waiting: a shutdown hands the attempt back at once (another node can take it); a cancel ends it anyway.
      if (this.stopReason === 'shutdown') await this.refuse('the node agent shut down before the data key came');
      return false;
    }
    this.log.info('opened the data key of the encrypted job');
    const wrappedKey = this.e2e.wrappedOutputKey;
    return (await this.retry('output-key', () => this.ctx.client.announceOutputKey(attemptId, wrappedKey), this.assignment.leaseExpiresAt)) !== undefined;
  }

  /** The attempt ends unstarted, at no cost to the node (best effort: otherwise the coordinator's key wait or lease ends it). */
  private async refuse(reason: string): Promise<void> {
    this.log.error({ reason }, `refused the encrypted attempt, not running it: ${reason}`);
    await this.ctx.client.refuse(this.assignment.attemptId, reason).catch((e: unknown) => this.log.warn({ err: (e as Error).message }, 'could not report the refusal to the coordinator'));
  }

  private async cancelIfSealed(seal: Seal | undefined): Promise<void> {
    if (!this.stopReason && (await this.ctx.checkCancel(this.assignment.attemptId, seal))) this.stop('cancelled');
  }

  /** A shutdown is reported as failed with no exit code, so the coordinator retries the job elsewhere. */
  private stoppedOutcome(): ExecutionOutcome {
    const shutdown = this.stopReason === 'shutdown';
    return {
      ...failedOutcome(shutdown ? 'the node agent shut down' : `stopped (${this.stopReason})`, 0),
      outcome: shutdown ? 'failed' : 'cancelled',
    };
  }

  /** The report with its commitment, signed with the node key: the node binds itself to these outputs. */
  private toReport(o: ExecutionOutcome, logs: { logBytes: number; logsTruncated: boolean }): ResultReport {
    const { attemptId, jobId, spec } = this.assignment;
    const metrics = { durationMs: Math.max(0, Math.round(o.durationMs)), ...logs };
    // The inputs digest covers every input (blob and URL ones by the sha256 they were checked against).
    const commitment = buildCommitment({
      jobId,
      attemptId,
      nodeId: this.ctx.client.nodeId,
      inputs: spec.inputs,
      outputDigest: o.outputDigest,
      exitCode: o.exitCode,
      metrics,
      // Encrypted: outputDigest is over the plaintext digests; this one covers the ciphertext the buyer downloads.
      ...(this.e2e ? { ciphertextDigest: outputRootDigest(o.outputs) } : {}),
    });
    return {
      outcome: o.outcome,
      exitCode: o.exitCode,
      error: o.error === null ? null : o.error.slice(0, 4096),
      outputDigest: o.outputDigest,
      outputs: o.outputs,
      metrics,
      commitment,
      commitmentSignature: this.ctx.client.signCommitment(commitment),
      ...(this.e2e ? { outputKey: this.e2e.wrappedOutputKey } : {}),
    };
  }

  private async report(report: ResultReport): Promise<void> {
    const { attemptId } = this.assignment;
    let body = report;
    for (;;) {
      try {
        const res = await this.retry('result', () => this.ctx.client.result(attemptId, body), null);
        if (res && !res.accepted && !res.duplicate) this.log.warn('the coordinator did not accept the result');
        return;
      } catch (e) {
        // Too large with inline contents: the digests alone still commit to the outputs.
        if (e instanceof CoordinatorApiError && e.code === 'BODY_TOO_LARGE' && body.outputs?.some((f) => f.content !== undefined)) {
          body = { ...body, outputs: body.outputs.map(({ content: _, ...f }) => f) };
          continue;
        }
        throw e;
      }
    }
  }

  /**
   * Calls `fn` until it answers. Unreachable coordinator: retry with backoff (until `deadline`, or the shutdown
   * deadline). 404/409: the attempt is gone, drop it (undefined). Other API errors: logged and dropped, except
   * BODY_TOO_LARGE which the caller handles.
   */
  private async retry<T>(what: string, fn: () => Promise<T>, deadline: number | null, onGiveUp?: () => void): Promise<T | undefined> {
    const backoff = new Backoff(this.ctx.random);
    for (;;) {
      try {
        return await fn();
      } catch (e) {
        if (isGone(e)) {
          this.log.info({ err: (e as Error).message }, `${what}: the coordinator has ended this attempt; dropping it`);
          return undefined;
        }
        if (e instanceof CoordinatorApiError && e.code === 'BODY_TOO_LARGE') throw e;
        if (!isUnreachable(e) && !(e instanceof CoordinatorApiError && e.status >= 500)) {
          this.log.error({ err: (e as Error).message }, `${what}: rejected by the coordinator; dropping the attempt`);
          return undefined;
        }
        const limit = Math.min(deadline ?? Number.POSITIVE_INFINITY, this.ctx.giveUpAt() ?? Number.POSITIVE_INFINITY);
        const wait = backoff.next();
        if (this.ctx.clock.now() + wait > limit) {
          this.log.warn({ err: (e as Error).message }, `${what}: giving up, the coordinator stayed unreachable`);
          onGiveUp?.();
          return undefined;
        }
        this.log.debug({ err: (e as Error).message, waitMs: wait }, `${what}: coordinator unreachable; retrying`);
        // Once stopping, waits run in full (bounded by the deadline above); before, a stop cuts them short.
        await sleep(wait, this.ctx.stopping.aborted ? undefined : this.ctx.stopping);
      }
    }
  }
}
