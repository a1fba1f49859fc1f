/** The running agent: registration, heartbeats, the work long-poll, outages and shutdown. One AttemptRunner per assignment. */
import type { Clock, Executor, Logger, Random } from '@gpux/core';
import { type Assignment, type ChallengeAssignment, MAX_EXCHANGE_STARTS, type NodeAdvertisementInput, type Seal, type SealedCancel, type WorkResponse } from '@gpux/protocol';
import { type ChallengeRunnerSetting, chooseChallengeRunner } from '../challenge/choose.js';
import type { ChallengeRunner } from '../challenge/runner.js';
import { runChallenge } from '../challenge/task.js';
import { CoordinatorApiError, type CoordinatorClient, isNoRoute, isUnreachable } from '../coordinator-client.js';
import type { OrderTrust } from '../coordinator-trust.js';
import { assignmentOrder, cancelOrder, challengeOrder } from '../orders.js';
import { type AttemptContext, AttemptRunner } from './attempt-runner.js';
import { Backoff, sleep } from './backoff.js';
import { CarriedStarts } from './carried-starts.js';

export interface RunningAgent {
  readonly nodeId: string;
  stop(opts?: { graceful?: boolean }): Promise<void>;
  readonly activeAttempts: number;
}

export interface NodeAgentDeps {
  nodeId: string;
  client: CoordinatorClient;
  /** The pinned coordinator keys (issue 19): the registration answer and every order must carry a seal they verify. */
  trust: OrderTrust;
  executor: Executor;
  advertisement: NodeAdvertisementInput;
  clock: Clock;
  random: Random;
  logger: Logger;
  pollWaitMs: number;
  gracefulTimeoutMs: number;
  /** Log bytes shipped per attempt; default the LogShipper's (10 MiB). */
  maxLogBytes?: number;
  /** The node allows jobs network (--allow-network): URL inputs are fetched only then (issue 13). */
  allowNetwork?: boolean;
  /** Proof-of-hardware runner (issue 12): a runner, or how to choose one on the first challenge. Default: auto. */
  challenge?: ChallengeRunner | { setting: ChallengeRunnerSetting; python?: string; image?: string };
}

const REMEMBER_FINISHED = 10_000;
const REMEMBER_REFUSED = 1000;
const SHUTDOWN_REPORT_MS = 10_000;

export class NodeAgent implements RunningAgent {
  private readonly attempts = new Map<string, { runner: AttemptRunner; done: Promise<void> }>();
  private readonly finished = new Set<string>();
  /** Assignments refused (seal did not verify): a redelivery is not run either. Cancels and challenges refused: logged once. */
  private readonly refused = new Set<string>();
  private readonly cancelsRefused = new Set<string>();
  private readonly challengesRefused = new Set<string>();
  private heartbeatIntervalMs = 5000;
  private needRegister = false;
  private registering: Promise<void> | null = null;
  private outageSince: number | null = null;
  private giveUpAt: number | null = null;
  private readonly pollAbort = new AbortController();
  private readonly stopAbort = new AbortController();
  private readonly heartbeatAbort = new AbortController();
  private lastRttMs: number | undefined;
  private loops: Promise<void>[] = [];
  private stopping: Promise<void> | null = null;
  private readonly ctx: AttemptContext;
  /** The challenge being computed (one at a time), and the ids already answered (heartbeats repeat them). */
  private challenge: Promise<void> | null = null;
  private readonly challengesSeen = new Set<string>();
  private challengeRunner: Promise<ChallengeRunner> | null = null;
  /** Starts the next work exchange carries; `exchange` false: the coordinator has none, attempts start one by one. */
  private readonly starts = new CarriedStarts();
  private exchange = true;

  constructor(private readonly d: NodeAgentDeps) {
    this.ctx = {
      client: d.client,
      executor: d.executor,
      clock: d.clock,
      random: d.random,
      logger: d.logger,
      gpuUuids: (indices) => indices.map((i) => d.advertisement.gpus.find((g) => g.index === i)?.uuid ?? `gpu-${i}`),
      giveUpAt: () => this.giveUpAt,
      stopping: this.stopAbort.signal,
      maxLogBytes: d.maxLogBytes,
      checkCancel: (attemptId, seal) => this.cancelVerified(attemptId, seal),
      allowNetwork: d.allowNetwork === true,
      carryStart: (attemptId, deadline) => (this.exchange ? this.starts.enqueue(attemptId, deadline) : Promise.resolve({ kind: 'explicit' })),
    };
  }

  get nodeId(): string {
    return this.d.nodeId;
  }

  get activeAttempts(): number {
    return this.attempts.size;
  }

  /** Registers, retrying while the coordinator is unreachable; a refusal (bad advertisement, bad signature) throws. */
  async registerFirst(signal?: AbortSignal): Promise<void> {
    const backoff = new Backoff(this.d.random);
    for (;;) {
      try {
        await this.register();
        return;
      } catch (e) {
        if (!isUnreachable(e) || signal?.aborted) throw e;
        this.noteOutage(e);
        await sleep(backoff.next(), signal);
      }
    }
  }

  startLoops(): void {
    this.loops = [this.workLoop(), this.heartbeatLoop()];
  }

  stop(opts: { graceful?: boolean } = {}): Promise<void> {
    this.stopping ??= this.shutdown(opts.graceful ?? false);
    return this.stopping;
  }

  private async shutdown(graceful: boolean): Promise<void> {
    this.pollAbort.abort();
    await this.loops[0];
    const running = () => [...this.attempts.values()].map((a) => a.done);
    if (graceful && this.attempts.size > 0) {
      this.d.logger.info({ attempts: this.attempts.size }, 'waiting for running attempts to finish');
      const waited = new AbortController(); // ends the timer too: a pending 60 s timer would hold the process open
      await Promise.race([Promise.all(running()), sleep(this.d.gracefulTimeoutMs, waited.signal)]);
      waited.abort();
    }
    this.giveUpAt = this.d.clock.now() + SHUTDOWN_REPORT_MS;
    this.stopAbort.abort();
    for (const a of this.attempts.values()) a.runner.stop('shutdown');
    await Promise.all(running());
    this.heartbeatAbort.abort();
    await this.loops[1];
    await this.challenge;
    this.d.logger.info('node agent stopped');
  }

  private async register(): Promise<void> {
    const res = await this.d.client.register(this.d.advertisement);
    // Before anything else: is this the coordinator this node is enrolled with? (throws, never retried)
    await this.d.trust.acceptRegistration(res, { nodeId: this.d.nodeId, publicKey: this.d.client.publicKey });
    this.heartbeatIntervalMs = Math.max(100, res.heartbeatIntervalMs);
    this.noteReachable();
    this.needRegister = false;
    this.exchange = true; // perhaps another coordinator now: try the work exchange again
    this.d.logger.info({ heartbeatIntervalMs: res.heartbeatIntervalMs }, 'registered with the coordinator');
  }

  private ensureRegistered(): Promise<void> {
    this.registering ??= this.register().finally(() => {
      this.registering = null;
    });
    return this.registering;
  }

  private async workLoop(): Promise<void> {
    const backoff = new Backoff(this.d.random);
    const signal = this.pollAbort.signal;
    while (!signal.aborted) {
      try {
        if (this.needRegister) await this.ensureRegistered();
        const began = this.d.clock.now();
        const carried = this.exchange ? this.starts.take(MAX_EXCHANGE_STARTS) : [];
        const res = await this.poll(carried, signal);
        this.noteReachable();
        backoff.reset();
        // Launching an assignment queues its start (starts below): the next exchange carries it.
        for (const a of res.assignments) await this.admit(a);
        await this.cancel(res.cancel ?? []);
        // Guard against a coordinator that answers at once: never spin (an exchange carrying starts is answered at once).
        if (carried.length === 0 && res.assignments.length === 0 && !res.cancel?.length && this.d.clock.now() - began < 100) await sleep(250, signal);
      } catch (e) {
        if (signal.aborted) break;
        this.starts.expire(this.d.clock.now());
        this.onFailure(e, 'work poll');
        await sleep(backoff.next(), signal);
      }
    }
    // Stopping: a start still waiting (or cut off in flight) is sent on its own, as it was before the exchange.
    this.starts.settleAll({ kind: 'explicit' });
  }

  /** The work exchange carrying `carried`; a coordinator without one gets the plain long-poll from now on. */
  private async poll(carried: string[], signal: AbortSignal): Promise<WorkResponse> {
    if (this.exchange) {
      try {
        const res = await this.d.client.workExchange(this.d.pollWaitMs, carried, signal);
        this.starts.answered(carried, res.started);
        return res;
      } catch (e) {
        if (!isNoRoute(e)) throw e;
        this.exchange = false;
        this.starts.settleAll({ kind: 'explicit' });
        this.d.logger.info('the coordinator has no work exchange (an older version): attempts start one by one');
      }
    }
    return this.d.client.work(this.d.pollWaitMs, signal);
  }

  private async heartbeatLoop(): Promise<void> {
    const signal = this.heartbeatAbort.signal;
    while (!signal.aborted) {
      await sleep(this.heartbeatIntervalMs, signal);
      if (signal.aborted) break;
      try {
        if (this.needRegister) await this.ensureRegistered();
        const sent = this.d.clock.now();
        const res = await this.d.client.heartbeat([...this.attempts.keys()].slice(0, 1024), this.lastRttMs);
        this.lastRttMs = Math.max(0, this.d.clock.now() - sent); // reported with the next heartbeat (latency score)
        this.heartbeatIntervalMs = Math.max(100, res.heartbeatIntervalMs);
        this.noteReachable();
        await this.cancel(res.cancel);
        if (res.challenge) await this.startChallenge(res.challenge);
      } catch (e) {
        this.onFailure(e, 'heartbeat');
      }
    }
  }

  /**
   * A proof-of-hardware challenge from a heartbeat: computed beside the loops (heartbeats keep going), one at a
   * time; the heartbeat repeats a pending challenge until the coordinator has the digests, so ids are remembered.
   */
  private async startChallenge(a: ChallengeAssignment): Promise<void> {
    if (this.challenge || this.challengesSeen.has(a.id) || this.stopAbort.signal.aborted) return;
    const check = await this.d.trust.check(challengeOrder(a, this.d.nodeId), a.seal);
    if (!check.ok) {
      if (remember(this.challengesRefused, a.id, REMEMBER_REFUSED)) this.d.logger.error({ challengeId: a.id, reason: check.reason }, `ignored a proof-of-hardware challenge: ${check.reason}`);
      return;
    }
    if (this.challenge || this.challengesSeen.has(a.id) || this.stopAbort.signal.aborted) return;
    this.challengesSeen.add(a.id);
    if (this.challengesSeen.size > 1000) this.challengesSeen.delete(this.challengesSeen.values().next().value as string);
    this.challenge = (async () => {
      try {
        const runner = await this.runnerForChallenges();
        await runChallenge(a, { client: this.d.client, runner, logger: this.d.logger, signal: this.stopAbort.signal });
      } catch (e) {
        if (!this.stopAbort.signal.aborted) this.onFailure(e, `proof-of-hardware challenge ${a.id}`);
      } finally {
        this.challenge = null;
      }
    })();
  }

  private runnerForChallenges(): Promise<ChallengeRunner> {
    const c = this.d.challenge ?? { setting: 'auto' as const };
    this.challengeRunner ??=
      'run' in c
        ? Promise.resolve(c)
        : chooseChallengeRunner({ ...c, gpus: this.d.advertisement.gpus, dockerGpuRuntime: this.d.advertisement.docker?.gpuRuntime ?? 'none', logger: this.d.logger });
    return this.challengeRunner;
  }

  /** Heartbeats and the work long-poll both carry attempts to stop (job cancelled, or lease lost), each sealed. */
  private async cancel(orders: readonly SealedCancel[]): Promise<void> {
    for (const { attemptId, seal } of orders) {
      const a = this.attempts.get(attemptId);
      if (!a || !(await this.cancelVerified(attemptId, seal))) continue;
      this.d.logger.info({ attemptId }, 'the coordinator cancelled the attempt');
      a.runner.stop('cancelled');
    }
  }

  /** A cancel is acted on only when its seal verifies; otherwise it is ignored (logged once per attempt). */
  private async cancelVerified(attemptId: string, seal: Seal | undefined): Promise<boolean> {
    const check = await this.d.trust.check(cancelOrder(attemptId, this.d.nodeId), seal);
    if (!check.ok && remember(this.cancelsRefused, attemptId, REMEMBER_REFUSED)) {
      this.d.logger.error({ attemptId, reason: check.reason }, `ignored a cancel: ${check.reason}`);
    }
    return check.ok;
  }

  /** An assignment runs only when its seal verifies; otherwise it is refused, reported, and never run (not on redelivery either). */
  private async admit(a: Assignment): Promise<void> {
    const id = a.attemptId;
    if (this.attempts.has(id) || this.finished.has(id) || this.refused.has(id)) return; // work re-delivers until started
    const check = await this.d.trust.check(assignmentOrder(a, this.d.nodeId), a.seal);
    if (check.ok) return this.launch(a);
    remember(this.refused, id, REMEMBER_REFUSED);
    this.d.logger.error({ attemptId: id, jobId: a.jobId, reason: check.reason }, `refused an assignment, not running it: ${check.reason}`);
    // Best effort: the coordinator ends the attempt and queues the job again; if this fails, its lease runs out.
    this.d.client.refuse(id, check.reason).catch((e: unknown) => this.d.logger.warn({ attemptId: id, err: (e as Error).message }, 'could not report the refusal to the coordinator'));
  }

  private launch(a: Assignment): void {
    if (this.attempts.has(a.attemptId) || this.finished.has(a.attemptId)) return;
    const runner = new AttemptRunner(a, this.ctx);
    const done = runner
      .run()
      .catch((e) => this.d.logger.error({ attemptId: a.attemptId, err: (e as Error).message }, 'attempt runner failed'))
      .finally(() => {
        this.attempts.delete(a.attemptId);
        if (runner.neverStarted) return; // the coordinator may deliver it again once reachable
        remember(this.finished, a.attemptId, REMEMBER_FINISHED);
      });
    this.attempts.set(a.attemptId, { runner, done });
  }

  private onFailure(e: unknown, what: string): void {
    if (isUnreachable(e)) {
      this.noteOutage(e);
      this.needRegister = true; // the coordinator may have restarted
    } else if (e instanceof CoordinatorApiError && (e.code === 'NODE_NOT_FOUND' || e.status === 401)) {
      this.d.logger.warn({ err: e.message }, `${what}: the coordinator does not know this node; registering again`);
      this.needRegister = true;
    } else {
      this.d.logger.error({ err: (e as Error).message }, `${what} failed`);
    }
  }

  private noteOutage(e: unknown): void {
    if (this.outageSince !== null) return;
    this.outageSince = this.d.clock.now();
    this.d.logger.warn({ err: (e as Error).message }, 'coordinator unreachable; retrying with backoff');
  }

  private noteReachable(): void {
    if (this.outageSince === null) return;
    this.d.logger.info({ downMs: this.d.clock.now() - this.outageSince }, 'coordinator reachable again');
    this.outageSince = null;
    this.needRegister = true;
  }
}

/** Adds `id` to a bounded set (oldest dropped first); true when it was not there yet. */
function remember(set: Set<string>, id: string, max: number): boolean {
  if (set.has(id)) return false;
  set.add(id);
  if (set.size > max) set.delete(set.values().next().value as string);
  return true;
}
