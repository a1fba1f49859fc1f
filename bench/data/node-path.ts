/**
 * The node path of the data benchmark (issue 13): a real node agent (`gpux node start --executor process
 * --allow-unsafe-process`) runs a job whose input is the blob (`{path, blob, size}`); the agent downloads it
 * (d), the job writes it back with one byte more (so the output is a new blob and is really uploaded, not
 * deduplicated) and the agent uploads it (e); `gpux job result --out` streams it back. The job prints its own
 * start and end (date +%s%N): (d) runs from the attempt's start to the job's, (e) from the job's end to the
 * attempt's end (the output is hashed, uploaded, and the result committed).
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { GpuxClient } from '@gpux/sdk';
import { spawnGpux, waitFor } from '../../packages/testing/src/processes.js';
import type { Step } from './main.js';
import { MemoryWatch, runCli } from './procs.js';

export interface NodePathContext {
  dir: string;
  url: string;
  operator: string;
  buyer: string;
  env: NodeJS.ProcessEnv;
  cliEnv: NodeJS.ProcessEnv;
  sha256: string;
  bytes: number;
  /** The stream copy's MB/s of this size, for the ratios. */
  copyMbps: number;
  /** The coordinator's memory (reset before the node path). */
  coordWatch: MemoryWatch;
}

export type NodePathResult =
  | { skipped: string }
  | { download: Step; upload: Step; job: Step; result: Step; agentPeakRssMiB: number; jobId: string };

const root = new URL('../../packages/', import.meta.url);
/** The agent's data plane and the coordinator's node data routes (issue 13): the node path runs once both exist. */
const nodeDataPlaneBuilt = () => existsSync(new URL('coordinator/src/http/routes-agent-blobs.ts', root)) && existsSync(new URL('agent/src/data/attempt-data.ts', root));

export async function nodePath(ctx: NodePathContext): Promise<NodePathResult> {
  if (process.argv.includes('--no-node')) return { skipped: '--no-node' };
  if (!nodeDataPlaneBuilt()) return { skipped: 'the agent data plane is not built yet' };
  const mbps = (seconds: number) => ctx.bytes / 1e6 / seconds;
  const step = (seconds: number, extra: Partial<Step> = {}): Step => ({ seconds, mbPerS: mbps(seconds), vsCopy: mbps(seconds) / ctx.copyMbps, ...extra });
  const operator = new GpuxClient({ url: ctx.url, token: ctx.operator });
  const enrollment = (await operator.createEnrollment({ name: 'bench-data-node' })).token;
  const agent = spawnGpux(
    ['node', 'start', '--coordinator', ctx.url, '--enrollment-token', enrollment, '--executor', 'process', '--allow-unsafe-process', '--data-dir', join(ctx.dir, 'node'), '--name', 'bench-data-node', '--log-level', 'warn'],
    { ...ctx.env, GPUX_HOME: join(ctx.dir, 'node-home'), GPUX_NODE_MAX_OUTPUT_BYTES: String(ctx.bytes * 2 + 2 ** 20) },
  );
  const agentWatch = new MemoryWatch(agent.child.pid as number);
  try {
    const buyer = new GpuxClient({ url: ctx.url, token: ctx.buyer, timeoutMs: 120_000 });
    await waitFor('the bench node to register', async () => ((await operator.listNodes({})).nodes.length > 0 ? true : undefined), 60_000);
    agentWatch.reset();
    ctx.coordWatch.reset();
    const t0 = performance.now();
    const { job } = await buyer.submitJob({
      name: 'bench-data',
      image: 'busybox:1.36',
      command: ['sh', '-c', 'date +%s%N; { cat "$GPUX_INPUTS/in.bin"; printf x; } > "$GPUX_OUTPUTS/out.bin"; date +%s%N'],
      inputs: [{ path: 'in.bin', blob: ctx.sha256, size: ctx.bytes }],
      resources: { gpu: { count: 0 }, cpuCores: 1, memoryGb: 1 },
      timeoutSeconds: 3600,
    });
    const done = await buyer.waitForJob(job.id, { pollMs: 200 });
    const jobSeconds = (performance.now() - t0) / 1000;
    agentWatch.sample();
    if (done.state !== 'succeeded') throw new Error(`the bench job ended ${done.state}:\n${agent.output().slice(-4000)}`);
    const view = await buyer.getJob(job.id);
    const attempt = view.attempts.find((a) => a.state === 'succeeded') ?? view.attempts[0];
    const logs = await buyer.jobLogs(job.id);
    const stamps = logs.entries
      .filter((e) => e.stream === 'stdout')
      .flatMap((e) => e.data.split('\n'))
      .filter((l) => /^\d{19}$/.test(l.trim()))
      .map((l) => Number(BigInt(l.trim()) / 1_000_000n));
    const [began, ended] = stamps;
    if (!attempt?.startedAt || !attempt.finishedAt || began === undefined || ended === undefined) throw new Error(`cannot time the node path: attempt ${JSON.stringify(attempt)}, stamps ${stamps}`);
    const download = step((began - attempt.startedAt) / 1000);
    const upload = step((attempt.finishedAt - ended) / 1000, { coordinatorPeakRssMiB: ctx.coordWatch.peakRss });

    ctx.coordWatch.reset();
    const out = join(ctx.dir, 'result');
    const result = await runCli(['job', 'result', job.id, '--out', out, '--json'], ctx.cliEnv);
    await rm(out, { recursive: true, force: true });
    return {
      jobId: job.id,
      download,
      upload,
      job: step(jobSeconds),
      result: step(result.seconds, { cliPeakRssMiB: result.peakRssMiB, coordinatorPeakRssMiB: ctx.coordWatch.peakRss }),
      agentPeakRssMiB: Math.max(agentWatch.hwm, agentWatch.peakRss),
    };
  } catch (err) {
    process.stderr.write(`bench:data: the node path failed; the agent said:\n${agent.output().slice(-8000)}\n`);
    throw err;
  } finally {
    agentWatch.stop();
    await agent.stop();
  }
}
