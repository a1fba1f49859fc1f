/**
 * The nvidia-torch challenge runner: nvidia_torch_challenge.py (beside this file) on the node's NVIDIA GPUs,
 * speaking JSON lines over stdio. Two ways to start it, chosen once by choose.ts:
 *  - host: the host's python3, when `import torch` works there and CUDA is visible. Preferred: no image to
 *    pull (several GB) and the driver stack the node's own jobs see; start-up is seconds.
 *  - docker: `docker run --gpus all` of a PyTorch image (GPUX_CHALLENGE_IMAGE) with the script mounted read
 *    only and no network, for the usual provider host that runs jobs in containers and has no torch itself.
 * Either way the products stay resident on the GPUs until the reveal, and the process lives until disposed.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Logger } from '@gpux/core';
import type { ChallengeAssignment, RevealItem } from '@gpux/protocol';
import type { ChallengeGpuDigests, ChallengeRun, ChallengeRunner, RevealedBlock } from './runner.js';

export const NVIDIA_TORCH_SCRIPT = fileURLToPath(new URL('./nvidia_torch_challenge.py', import.meta.url));
/** A public PyTorch image with CUDA: only pulled when the host has no torch of its own. */
export const DEFAULT_CHALLENGE_IMAGE = 'pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime';

export type NvidiaTorchMode = { kind: 'host'; python: string } | { kind: 'docker'; image: string; docker?: string };

type Out = { type: 'digests'; gpus: ChallengeGpuDigests[] } | { type: 'blocks'; blocks: RevealedBlock[] } | { type: 'error'; message: string };

/** argv of the process for a mode (docker: named, so an abort can remove the container, not only the client). */
export function nvidiaTorchCommand(mode: NvidiaTorchMode, containerName: string, script = NVIDIA_TORCH_SCRIPT): { command: string; args: string[] } {
  if (mode.kind === 'host') return { command: mode.python, args: ['-u', script] };
  return {
    command: mode.docker ?? 'docker',
    args: ['run', '--rm', '-i', '--name', containerName, '--gpus', 'all', '--network', 'none', '-e', 'CUDA_DEVICE_ORDER=PCI_BUS_ID', '-v', `${script}:/gpux/challenge.py:ro`, mode.image, 'python3', '-u', '/gpux/challenge.py'],
  };
}

export class NvidiaTorchChallengeRunner implements ChallengeRunner {
  readonly kind = 'nvidia-torch' as const;

  constructor(
    private readonly mode: NvidiaTorchMode,
    private readonly logger?: Logger,
    /** Tests: run the script with numpy on the CPU (GPUX_CHALLENGE_BACKEND=numpy). */
    private readonly extraEnv: Record<string, string> = {},
  ) {}

  async run(assignment: ChallengeAssignment, signal: AbortSignal): Promise<ChallengeRun> {
    const receivedAt = Date.now();
    const name = `gpux-challenge-${assignment.id.replace(/[^a-zA-Z0-9_.-]/g, '').slice(0, 40)}-${process.pid}`;
    const { command, args } = nvidiaTorchCommand(this.mode, name);
    // CUDA_DEVICE_ORDER makes torch's device i the i of nvidia-smi, which is what the node advertised.
    const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, CUDA_DEVICE_ORDER: 'PCI_BUS_ID', PYTHONUNBUFFERED: '1', ...this.extraEnv } });
    const stderrTail: string[] = [];
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      stderrTail.push(d);
      if (stderrTail.length > 20) stderrTail.shift();
    });
    const lines = createInterface({ input: child.stdout! });
    const pending: Array<(o: Out | Error) => void> = [];
    const closed = new Promise<void>((resolve) => child.on('close', () => resolve()));
    lines.on('line', (line) => {
      let msg: Out;
      try {
        msg = JSON.parse(line) as Out;
      } catch {
        this.logger?.debug({ line: line.slice(0, 200) }, 'challenge script printed a non-JSON line');
        return;
      }
      pending.shift()?.(msg);
    });
    child.on('close', (code) => {
      const why = new Error(`nvidia-torch challenge runner exited (code ${code})${stderrTail.length ? `: ${stderrTail.join('').trim().slice(-500)}` : ''}`);
      for (const p of pending.splice(0)) p(why);
    });
    child.on('error', (e) => {
      for (const p of pending.splice(0)) p(new Error(`nvidia-torch challenge runner could not start ${command}: ${e.message}`));
    });
    let disposed = false;
    const dispose = async () => {
      if (disposed) return;
      disposed = true;
      signal.removeEventListener('abort', onAbort);
      if (child.exitCode === null && child.stdin?.writable) child.stdin.end(`${JSON.stringify({ type: 'exit' })}\n`);
      const timer = setTimeout(() => kill(child, this.mode, name), 5000);
      await closed;
      clearTimeout(timer);
    };
    const onAbort = () => {
      kill(child, this.mode, name);
      void dispose();
    };
    signal.addEventListener('abort', onAbort, { once: true });
    const ask = (msg: unknown) =>
      new Promise<Out>((resolve, reject) => {
        pending.push((o) => (o instanceof Error ? reject(o) : o.type === 'error' ? reject(new Error(`nvidia-torch challenge runner: ${o.message}`)) : resolve(o)));
        child.stdin!.write(`${JSON.stringify(msg)}\n`);
      });
    try {
      if (signal.aborted) throw new Error('challenge aborted');
      const res = await ask({ type: 'run', assignment, receivedAt });
      if (res.type !== 'digests') throw new Error('nvidia-torch challenge runner: unexpected answer');
      return {
        runner: 'nvidia-torch',
        gpus: res.gpus.map((g) => ({ index: g.index, digests: g.digests, computeMs: g.computeMs, totalMs: Date.now() - receivedAt })),
        reveal: async (items: readonly RevealItem[]) => {
          const r = await ask({ type: 'reveal', items });
          if (r.type !== 'blocks') throw new Error('nvidia-torch challenge runner: unexpected answer');
          return r.blocks;
        },
        dispose,
      };
    } catch (e) {
      kill(child, this.mode, name);
      await dispose();
      throw e;
    }
  }
}

function kill(child: ChildProcess, mode: NvidiaTorchMode, name: string): void {
  if (child.exitCode === null) child.kill('SIGKILL');
  // Killing the docker client leaves the container running: remove it by name.
  if (mode.kind === 'docker') spawn(mode.docker ?? 'docker', ['rm', '-f', name], { stdio: 'ignore' }).on('error', () => {});
}
