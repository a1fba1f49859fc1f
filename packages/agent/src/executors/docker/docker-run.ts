/** One attempt in one container: image (policy), work dir, create, attach, start, timeout, disk quotas, wait, inspect (OOM), outputs, removal. */
import { chmod, lstat, mkdir, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { EventSink, Execution, ExecutionOutcome, ExecutionRequest, LogSink, StopReason } from '@gpux/core';
import type { GpuDevice } from '@gpux/protocol';
import type Docker from 'dockerode';
import { failedOutcome } from '../process-executor.js';
import { dataPlaneOf, finishOutputs } from '../../data/attempt-data.js';
import { checkpointsOf } from '../../data/checkpoints.js';
import { DataPlaneError } from '../../data/download.js';
import { type CheckpointSetup, collectOutputs, prepareWorkDir, removeWorkDir, type WorkDir } from '../work-dir.js';
import { buildContainerConfig } from './container-config.js';
import { checkQuotas, DiskQuotaWatcher, formatBytes, type QuotaTree } from './disk-quota.js';
import { StreamDemuxer } from './demux.js';
import { plaintextInputBytes, tmpfsRefusal } from './e2e-tmpfs.js';
import type { ResolvedDockerOptions } from './docker-executor.js';
import { containerGpuEnv } from './gpu-devices.js';
import { checkImage, checkResolvedImage } from './image-policy.js';
import { engineMessage, ensureImage, ImagePullError } from './image-pull.js';

/** How long the log stream may lag behind the container's exit. */
const LOG_DRAIN_MS = 5000;

export interface RunHooks {
  onContainer(id: string): void;
  onEnd(id: string): void;
}

export class DockerRun implements Execution {
  readonly done: Promise<ExecutionOutcome>;
  private stopReason: StopReason | null = null;
  private timedOut = false;
  /** Set when outputs or scratch passed its quota: the container is killed and the attempt fails with this. */
  private quotaError: string | null = null;
  private quotaWatcher: DiskQuotaWatcher | null = null;
  private exited = false;
  private container: Docker.Container | null = null;
  private killing: Promise<void> | null = null;
  private readonly pullAbort = new AbortController();
  private readonly startedAt: number;

  constructor(
    private readonly req: ExecutionRequest,
    private readonly assigned: GpuDevice[],
    private readonly log: LogSink,
    private readonly o: ResolvedDockerOptions,
    private readonly hooks: RunHooks,
    private readonly events?: EventSink,
  ) {
    this.startedAt = o.clock.now();
    this.done = this.run();
  }

  async stop(reason: StopReason): Promise<void> {
    if (!this.exited && !this.stopReason && !this.timedOut) {
      this.stopReason = reason;
      this.pullAbort.abort();
      void this.kill();
    }
    await this.done;
  }

  private say(line: string): void {
    this.log('system', `${line}\n`);
  }

  private duration(): number {
    return this.o.clock.now() - this.startedAt;
  }

  private async run(): Promise<ExecutionOutcome> {
    let dir: WorkDir | null = null;
    let timer: NodeJS.Timeout | undefined;
    try {
      const refusal = this.refusal();
      if (refusal) return failedOutcome(refusal, this.duration());
      let pullTimedOut = false;
      const pullTimer = setTimeout(() => {
        pullTimedOut = true;
        this.pullAbort.abort();
      }, this.o.pullTimeoutMs);
      const image = await ensureImage(this.o.docker, this.req.spec.image, (l) => this.say(l), this.o.clock, {
        signal: this.pullAbort.signal,
        progressIntervalMs: this.o.pullProgressIntervalMs,
        events: this.events,
      })
        .catch((e: unknown) => {
          if (pullTimedOut && !this.stopReason) throw new ImagePullError(`pulling ${this.req.spec.image} took longer than ${this.o.pullTimeoutMs / 1000} s`);
          throw e;
        })
        .finally(() => clearTimeout(pullTimer));
      if (this.stopReason) return this.cancelled();
      // The reference passed the lists; what it resolved to must too (an id or a re-tag of a denied image).
      const resolved = checkResolvedImage(this.req.spec.image, image, this.o.imagePolicy);
      if (!resolved.allowed) {
        this.say(`image: refused: ${resolved.reason}`);
        return failedOutcome(`image not allowed: ${resolved.reason}`, this.duration());
      }

      // A checkpoint is bounded like the outputs (the same quota, watched while the container runs).
      const checkpoint: CheckpointSetup | undefined = this.req.spec.checkpoint
        ? { keeper: checkpointsOf(this.req), limits: { maxBytes: this.o.limits.totalBytes, maxEntries: this.o.outputsMaxEntries } }
        : undefined;
      // An encrypted job's inputs decrypt into a tmpfs (issue 13), checked before anything is downloaded.
      const tmpfs = this.req.spec.encryption ? this.o.e2eInputsDir : undefined;
      const noTmpfs = tmpfs === undefined ? null : await tmpfsRefusal(tmpfs, plaintextInputBytes(this.req.spec));
      if (noTmpfs) return failedOutcome(noTmpfs, this.duration());
      dir = await prepareWorkDir(this.o.workRoot, this.req.attemptId, this.req.spec.inputs, dataPlaneOf(this.req), checkpoint, { inputsParent: tmpfs });
      if (this.stopReason) return this.cancelled();
      const scratch = join(dir.root, 'scratch');
      await mkdir(scratch, { mode: 0o700 });
      await openTo(dir, scratch);
      const config = buildContainerConfig({
        req: this.req,
        imageId: image.id,
        nodeId: this.o.nodeId,
        nameSuffix: Math.floor(Math.random() * 0xffffff).toString(16),
        dirs: { inputs: dir.inputs, outputs: dir.outputs, scratch, checkpoints: dir.checkpoints },
        gpu: this.o.gpuHostConfig(this.assigned),
        gpuEnv: containerGpuEnv(this.assigned),
        user: this.o.user,
        network: this.req.spec.network === true,
        pidsLimit: this.o.pidsLimit,
        hostCpus: this.o.hostCpus,
        hostMemoryBytes: this.o.hostMemoryBytes,
        defaultCpus: this.o.defaultCpus,
        defaultMemoryBytes: this.o.defaultMemoryBytes,
        tmpSizeMb: this.o.tmpSizeMb,
        shmSizeMb: this.o.shmSizeMb,
        logFileBytes: this.o.maxLogBytes,
      });
      const container = await this.o.docker.createContainer(config);
      this.container = container;
      this.hooks.onContainer(container.id);
      const quotas = this.quotaTrees(dir, scratch);
      this.say(`container: ${config.name} (${describeLimits(config, this.req.spec.resources, quotas)})`);
      if (this.stopReason) return this.cancelled();

      const logs = await this.attach(container);
      try {
        await container.start();
      } catch (e) {
        return failedOutcome(`cannot run "${this.req.spec.command[0]}": ${startFailure(e)}`, this.duration());
      }
      if (this.stopReason) void this.kill();
      if (checkpoint && dir.checkpoints && dir.checkpointArchive) checkpoint.keeper?.watch(dir.checkpoints, dir.checkpointArchive, checkpoint.limits);
      this.quotaWatcher = new DiskQuotaWatcher(quotas, this.o.quotaCheckMs, (error) => this.overQuota(error));
      this.quotaWatcher.start();
      // The job's time limit counts from the attempt's start, image pull included: the coordinator bills and
      // enforces its deadline from there too, so a slow pull must not push the end past it.
      timer = setTimeout(
        () => {
          if (this.exited || this.stopReason) return;
          this.timedOut = true;
          void this.kill();
        },
        Math.max(0, this.req.spec.timeoutSeconds * 1000 - this.duration()),
      );
      const waited = (await container.wait()) as { StatusCode?: number };
      this.exited = true;
      clearTimeout(timer);
      await this.quotaWatcher.stop();
      // What was written since the last check: the exit does not make it fit.
      if (!this.quotaError && !this.stopReason) this.quotaError = await checkQuotas(quotas);
      await Promise.race([logs.done, new Promise((r) => setTimeout(r, LOG_DRAIN_MS).unref())]);
      const info = await container.inspect();
      return await this.outcomeOfExit(info.State.ExitCode ?? waited.StatusCode ?? null, info.State.OOMKilled === true, dir, config);
    } catch (e) {
      if (this.stopReason) return this.cancelled();
      if (e instanceof ImagePullError || e instanceof DataPlaneError) return failedOutcome(e.message, this.duration());
      return failedOutcome(`executor failed: ${engineMessage(e)}`, this.duration());
    } finally {
      clearTimeout(timer);
      this.exited = true;
      await this.quotaWatcher?.stop();
      // The state the job left (on exit, stop or timeout) is uploaded before the result is reported.
      await checkpointsOf(this.req)?.finish();
      await this.cleanup(dir);
    }
  }

  /** Refused before anything is pulled or created: an image the node does not allow, or a network it does not give. */
  private refusal(): string | null {
    const verdict = checkImage(this.req.spec.image, this.o.imagePolicy);
    if (!verdict.allowed) return `image not allowed: ${verdict.reason}`;
    if (this.req.spec.network === true && !this.o.allowNetwork) {
      return 'the job asks for network access (network: true), but this node does not allow it (the operator can start it with --allow-network)';
    }
    return null;
  }

  /** Attached before the start, so no output is missed; `done` settles when the stream ends (wrapped: an async function would adopt it). */
  private async attach(container: Docker.Container): Promise<{ done: Promise<void> }> {
    const stream = await container.attach({ stream: true, stdout: true, stderr: true });
    const demux = new StreamDemuxer((s, text) => this.log(s, text));
    const done = new Promise<void>((resolve) => {
      stream.on('data', (chunk: Buffer) => demux.write(chunk));
      const end = () => {
        demux.end();
        resolve();
      };
      stream.on('end', end);
      stream.on('error', end);
    });
    return { done };
  }

  private async outcomeOfExit(code: number | null, oomKilled: boolean, dir: WorkDir, config: Docker.ContainerCreateOptions): Promise<ExecutionOutcome> {
    if (this.stopReason) return this.cancelled();
    if (this.quotaError) {
      // Nothing past the quota is reported: no outputs at all (the work dir is removed with them).
      this.say(`container: ${this.quotaError}`);
      return failedOutcome(this.quotaError, this.duration());
    }
    // Files too large to return inline (an encrypted job's: all, encrypted) go to the blob store now, while the work dir still exists (issue 13).
    const collected = await finishOutputs(this.req, dir.outputs, await collectOutputs(dir.outputs, this.o.limits));
    const base = { outputs: collected.outputs, outputDigest: collected.outputDigest, durationMs: this.duration() };
    if (this.timedOut) return { ...base, outcome: 'failed', exitCode: null, error: `timed out after ${this.req.spec.timeoutSeconds} s` };
    if (oomKilled && code === 0) this.say('container: a process of the job went over the memory limit and was killed (OOM); the job still exited 0');
    if (oomKilled && code !== 0) {
      const limit = config.HostConfig?.Memory;
      const hint = this.req.spec.resources.memoryGb === undefined ? " (this node's default: the spec sets no resources.memoryGb)" : '';
      const error = `out of memory: the job went over its memory limit${limit ? ` of ${mib(limit)}${hint}` : ''} and was killed (OOM)`;
      return { ...base, outcome: 'failed', exitCode: null, error };
    }
    if (collected.error) return { ...base, outcome: 'failed', exitCode: code, error: collected.error };
    if (code === 0) return { ...base, outcome: 'succeeded', exitCode: 0, error: null };
    return { ...base, outcome: 'failed', exitCode: code, error: `exited with code ${code}` };
  }

  private quotaTrees(dir: WorkDir, scratch: string): QuotaTree[] {
    const trees: QuotaTree[] = [
      { name: 'outputs', path: dir.outputs, maxBytes: this.o.limits.totalBytes, maxEntries: this.o.outputsMaxEntries, option: 'GPUX_NODE_MAX_OUTPUT_BYTES' },
      { name: 'scratch', path: scratch, maxBytes: this.o.scratchBytes, maxEntries: this.o.scratchMaxEntries, option: 'GPUX_NODE_MAX_SCRATCH_BYTES' },
    ];
    if (dir.checkpoints) {
      trees.push({ name: 'checkpoints', path: dir.checkpoints, maxBytes: this.o.limits.totalBytes, maxEntries: this.o.outputsMaxEntries, option: 'GPUX_NODE_MAX_OUTPUT_BYTES' });
    }
    return trees;
  }

  /** Past a quota: SIGKILL at once (a grace period would let the job write on). */
  private overQuota(error: string): void {
    if (this.exited || this.stopReason || this.quotaError) return;
    this.quotaError = error;
    void this.container?.kill({ signal: 'SIGKILL' }).catch(() => {}); // already gone: the wait settles it
  }

  private cancelled(): ExecutionOutcome {
    return { ...failedOutcome(`stopped (${this.stopReason})`, this.duration()), outcome: 'cancelled' };
  }

  /** SIGTERM, then SIGKILL after the grace period (the engine does both). */
  private kill(): Promise<void> {
    const container = this.container;
    if (!container) return Promise.resolve();
    // Not kept once settled: a stop that raced the start must be sent again once the container runs.
    this.killing ??= container
      .stop({ t: Math.ceil(this.o.killGraceMs / 1000) })
      .then(() => {})
      .catch(() => {}) // already stopped, or never started: the wait or the removal settles it
      .finally(() => {
        this.killing = null;
      });
    return this.killing;
  }

  private async cleanup(dir: WorkDir | null): Promise<void> {
    if (this.container) {
      await this.container.remove({ force: true, v: true }).catch(() => {}); // reconcile at the next start catches a failure here
      this.hooks.onEnd(this.container.id);
    }
    if (dir) await removeWorkDir(dir).catch(() => {});
  }
}

/** The container user is not the agent's user: it must read the inputs and write outputs and scratch. */
async function openTo(dir: WorkDir, scratch: string): Promise<void> {
  await chmod(dir.outputs, 0o777);
  await chmod(scratch, 0o777);
  await openTree(dir.inputs);
  // The restored checkpoint is the agent's: the job must be able to rewrite it in place.
  if (dir.checkpoints) await openWritable(dir.checkpoints);
}

async function openWritable(path: string): Promise<void> {
  const st = await lstat(path);
  if (st.isDirectory()) {
    await chmod(path, 0o777);
    for (const name of await readdir(path)) await openWritable(join(path, name));
  } else if (st.isFile()) await chmod(path, (st.mode & 0o111) | 0o666);
}

async function openTree(path: string): Promise<void> {
  const st = await stat(path);
  if (st.isDirectory()) {
    await chmod(path, 0o755);
    for (const name of await readdir(path)) await openTree(join(path, name));
  } else await chmod(path, 0o644);
}

/** runc's reason without the engine's wrapping, e.g. `exec: "foo": executable file not found in $PATH`. */
function startFailure(e: unknown): string {
  const msg = engineMessage(e);
  return /exec: .*?(?=: unknown$|$)/.exec(msg)?.[0] ?? msg;
}

function describeLimits(c: Docker.ContainerCreateOptions, asked: { memoryGb?: number; cpuCores?: number }, quotas: QuotaTree[]): string {
  const h = c.HostConfig ?? {};
  const parts = [`network ${h.NetworkMode}`, `user ${c.User}`, `pids ≤ ${h.PidsLimit}`, 'read-only root, no capabilities'];
  if (h.Memory) parts.push(`memory ${mib(h.Memory)}${asked.memoryGb === undefined ? ' (node default)' : ''}`);
  if (h.NanoCpus) parts.push(`cpus ${h.NanoCpus / 1e9}${asked.cpuCores === undefined ? ' (node default)' : ''}`);
  for (const q of quotas) parts.push(`${q.name} ≤ ${formatBytes(q.maxBytes)}`);
  const gpus = [...(h.DeviceRequests?.flatMap((d) => d.DeviceIDs ?? []) ?? []), ...((h.Devices as { PathOnHost: string }[] | undefined)?.map((d) => d.PathOnHost) ?? [])];
  parts.push(gpus.length ? `devices ${gpus.join(', ')}` : 'no GPUs');
  return parts.join(', ');
}

function mib(bytes: number): string {
  return `${Math.round((bytes / 1024 / 1024) * 10) / 10} MiB`;
}
